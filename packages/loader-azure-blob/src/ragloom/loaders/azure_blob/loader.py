"""AzureBlobDocumentLoader: fetches documents and parses them with a DocumentParser.

Like the core loaders: without a parser, the discovered default parser is used; each
document's ``url`` metadata names the object; a missing object raises DocumentLoadError
naming it; a bulk load reports bad objects in ``failures`` instead of losing good ones.
The public methods below are complete; the private ones talk to the server.
"""

from __future__ import annotations

from ragloom.core.document import URL, Document
from ragloom.core.errors import RagloomError
from ragloom.core.loaders.default_parser import default_document_parser
from ragloom.core.loaders.result import LoadedDocuments, LoadFailure
from ragloom.core.parsers.base import DocumentParser


class AzureBlobDocumentLoader:
    """Loads the objects stored in the azure-blob server at ``url``."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    def source(self, name: str) -> str:
        """Where the object ``name`` lives: the ``url`` metadata and the name in errors."""
        return f"{self.url}/{name}"

    def load_document(self, name: str, parser: DocumentParser | None = None) -> Document:
        """Fetch and parse the object ``name``."""
        source = self.source(name)
        document = (parser or default_document_parser()).parse(self._fetch(name), source=source)
        document.metadata[URL] = source
        return document

    def load_documents(
        self, parser: DocumentParser | None = None, *, strict: bool = False
    ) -> LoadedDocuments:
        """Every object; those that fail are in ``failures`` (raised when ``strict``)."""
        documents: list[Document] = []
        failures: list[LoadFailure] = []
        for name in self._names():
            try:
                documents.append(self.load_document(name, parser))
            except RagloomError as exc:
                if strict:
                    raise
                failures.append(LoadFailure(self.source(name), exc))
        return LoadedDocuments(documents, failures)

    def _fetch(self, name: str) -> bytes:
        raise NotImplementedError(
            f"implement me: the bytes of {self.source(name)} with azure-storage-blob; a missing object "
            "or a server error raises DocumentLoadError naming the source"
        )

    def _names(self) -> list[str]:
        raise NotImplementedError(
            f"implement me: the names of every object under {self.url} with azure-storage-blob, "
            "in a stable order (paging through long listings)"
        )
