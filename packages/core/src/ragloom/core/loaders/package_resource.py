"""PackageResourceDocumentLoader: documents shipped inside an installed Python package.

The Python form of the spec's ``ClassPathDocumentLoader``: resources are found with
``importlib.resources``, so it works for packages installed as wheels, zips or editable.
"""

from __future__ import annotations

import logging
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import PurePosixPath

from ragloom.core.document import FILE_NAME, Document
from ragloom.core.errors import DocumentLoadError, PluginError, RagloomError
from ragloom.core.loaders.default_parser import default_document_parser
from ragloom.core.loaders.guard import parse_source
from ragloom.core.loaders.result import LoadedDocuments, LoadFailure
from ragloom.core.parsers.base import DocumentParser

__all__ = [
    "PACKAGE",
    "RESOURCE",
    "PackageResourceDocumentLoader",
    "ClassPathDocumentLoader",
]

logger = logging.getLogger(__name__)

PACKAGE = "package"
RESOURCE = "resource"


def _root(package: str) -> Traversable:
    try:
        return resources.files(package)
    except (ModuleNotFoundError, TypeError) as exc:
        raise DocumentLoadError(f"package {package!r} cannot be imported: {exc}") from exc


def _walk(node: Traversable, prefix: PurePosixPath, recursive: bool) -> list[PurePosixPath]:
    found: list[PurePosixPath] = []
    for child in node.iterdir():
        path = prefix / child.name
        if child.is_file():
            found.append(path)
        elif recursive and child.is_dir() and child.name != "__pycache__":
            found.extend(_walk(child, path, recursive))
    return found


class PackageResourceDocumentLoader:
    """Loads resources of an importable package.

    Metadata: ``package``, ``resource`` (path inside the package) and ``file_name``.
    """

    @staticmethod
    def load_document(
        package: str, resource: str, parser: DocumentParser | None = None
    ) -> Document:
        """Load ``resource`` (a ``/``-separated path inside ``package``)."""
        node = _root(package).joinpath(*PurePosixPath(resource).parts)
        source = f"{package}:{resource}"
        if not node.is_file():
            raise DocumentLoadError(f"{source}: no such resource")
        try:
            data = node.read_bytes()
        except OSError as exc:
            raise DocumentLoadError(f"{source}: cannot read: {exc}") from exc
        document = parse_source(parser or default_document_parser(), data, source)
        document.metadata[PACKAGE] = package
        document.metadata[RESOURCE] = resource
        document.metadata[FILE_NAME] = node.name
        return document

    @staticmethod
    def load_documents(
        package: str,
        directory: str = "",
        parser: DocumentParser | None = None,
        *,
        glob: str | None = None,
        recursive: bool = False,
        strict: bool = False,
    ) -> LoadedDocuments:
        """Load the resources under ``directory`` of ``package``; failures as in the file loader."""
        base = PurePosixPath(directory) if directory else PurePosixPath()
        node = _root(package).joinpath(*base.parts)
        if not node.is_dir():
            raise DocumentLoadError(f"{package}:{directory}: no such resource directory")
        names = sorted(p for p in _walk(node, base, recursive) if p.suffix not in (".py", ".pyc"))
        if glob is not None:
            names = [p for p in names if p.relative_to(base).match(glob)]
        chosen = parser or default_document_parser()
        documents: list[Document] = []
        failures: list[LoadFailure] = []
        for name in names:
            try:
                documents.append(
                    PackageResourceDocumentLoader.load_document(package, str(name), chosen)
                )
            except PluginError:
                raise  # a broken or ambiguous installation, not a bad file
            except RagloomError as exc:
                if strict:
                    raise
                logger.warning("skipped %s:%s: %s", package, name, exc)
                failures.append(LoadFailure(f"{package}:{name}", exc))
        return LoadedDocuments(documents, failures)


ClassPathDocumentLoader = PackageResourceDocumentLoader
"""The spec's name for this loader."""
