"""FileSystemDocumentLoader: documents from local files and directories."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Sequence
from pathlib import Path, PurePath

from ragloom.core.document import ABSOLUTE_DIRECTORY_PATH, FILE_NAME, Document
from ragloom.core.errors import (
    DocumentLoadError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    PluginError,
    RagloomError,
)
from ragloom.core.loaders.default_parser import default_document_parser
from ragloom.core.loaders.file_selection import select_files
from ragloom.core.loaders.guard import parse_source
from ragloom.core.loaders.result import LoadedDocuments, LoadFailure
from ragloom.core.parsers.base import DocumentParser

__all__ = [
    "FileSystemDocumentLoader",
    "readable_name",
]

logger = logging.getLogger(__name__)


def readable_name(name: str) -> str:
    """``name`` as valid Unicode: bytes of a non-UTF-8 file name (decoded by Python as lone
    surrogates, which no store or JSON reader can hold) are written as ``\\xff`` escapes
    (what document metadata and the CLI show)."""
    if name.isascii():
        return name
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate Python's file-name decoding did not make
        raw = name.encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "backslashreplace")


class FileSystemDocumentLoader:
    """Loads files with a :class:`DocumentParser` (the discovered default when omitted).

    Every document gets the metadata ``file_name`` and ``absolute_directory_path`` (bytes
    of a file name that is not UTF-8 appear as ``\\xff`` escapes).
    """

    @staticmethod
    def load_document(
        path: str | os.PathLike[str], parser: DocumentParser | None = None
    ) -> Document:
        """Load and parse one file; errors name the file."""
        file = Path(path)
        if not file.is_file():
            raise DocumentLoadError(f"{file}: not a file (missing or a directory)")
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise DocumentLoadError(f"{file}: cannot read: {exc.strerror or exc}") from exc
        document = parse_source(parser or default_document_parser(), data, str(file))
        absolute = file.absolute()
        document.metadata[FILE_NAME] = readable_name(absolute.name)
        document.metadata[ABSOLUTE_DIRECTORY_PATH] = readable_name(str(absolute.parent))
        return document

    @staticmethod
    def load_documents(
        directory: str | os.PathLike[str],
        parser: DocumentParser | None = None,
        *,
        glob: str | None = None,
        regex: str | re.Pattern[str] | None = None,
        exclude: str | Sequence[str] = (),
        recursive: bool = False,
        skip_ignored: bool = True,
        strict: bool = False,
    ) -> LoadedDocuments:
        """Load every file of ``directory`` (and its subdirectories when ``recursive``).

        ``glob`` filters by path relative to ``directory``, matched from the right
        (``"*.md"`` matches at any depth, ``"guides/*.md"`` only in ``guides``); ``regex``
        keeps the files whose relative path (``/``-separated) it matches anywhere
        (``re.search``); ``exclude`` takes gitignore-style patterns (``"drafts/"``,
        ``"*.tmp"``) that drop files and whole folders. With ``skip_ignored`` (the default)
        hidden files and folders (``.env``, ``.git/``), ``node_modules``, ``__pycache__``,
        virtualenvs and what the tree's ``.gitignore`` files ignore are not read: the rule
        of ``ragloom ingest`` (:mod:`ragloom.core.loaders.file_selection`). Files that
        cannot be read or parsed are skipped and reported in ``.failures`` of the returned
        list, unless ``strict`` is true, which raises the first error instead.
        """
        root = Path(directory)
        if not root.is_dir():
            raise DocumentLoadError(f"{root}: not a directory")
        pattern = _compile(regex)
        excluded = [exclude] if isinstance(exclude, str) else list(exclude)
        files = select_files(
            [root], exclude=excluded, recursive=recursive, skip_ignored=skip_ignored
        )
        if glob is not None:
            files = [p for p in files if PurePath(p.relative_to(root)).match(glob)]
        if pattern is not None:
            files = [p for p in files if pattern.search(p.relative_to(root).as_posix())]
        chosen = parser or default_document_parser()
        documents: list[Document] = []
        failures: list[LoadFailure] = []
        for file in files:
            try:
                documents.append(FileSystemDocumentLoader.load_document(file, chosen))
            except PluginError:
                raise  # a broken or ambiguous installation, not a bad file
            except RagloomError as exc:
                if strict:
                    raise
                failure = LoadFailure(str(file), exc)
                logger.log(
                    logging.INFO if failure.no_text else logging.WARNING, "skipped %s", failure
                )
                failures.append(failure)
        return LoadedDocuments(documents, failures)

    @staticmethod
    def load_documents_recursively(
        directory: str | os.PathLike[str],
        parser: DocumentParser | None = None,
        *,
        glob: str | None = None,
        regex: str | re.Pattern[str] | None = None,
        exclude: str | Sequence[str] = (),
        skip_ignored: bool = True,
        strict: bool = False,
    ) -> LoadedDocuments:
        """The spec's ``loadDocumentsRecursively``: ``load_documents(..., recursive=True)``."""
        return FileSystemDocumentLoader.load_documents(
            directory,
            parser,
            glob=glob,
            regex=regex,
            exclude=exclude,
            recursive=True,
            skip_ignored=skip_ignored,
            strict=strict,
        )


def _compile(regex: str | re.Pattern[str] | None) -> re.Pattern[str] | None:
    """``regex`` compiled; a bad one raises an error naming it."""
    if regex is None or isinstance(regex, re.Pattern):
        return regex
    if not isinstance(regex, str):
        raise InvalidArgumentTypeError(
            f"regex must be a str or a compiled pattern, got {type(regex).__name__}: {regex!r}"
        )
    try:
        return re.compile(regex)
    except re.error as exc:
        raise InvalidArgumentError(
            f"regex {regex!r} is not a valid regular expression: {exc}"
        ) from exc
