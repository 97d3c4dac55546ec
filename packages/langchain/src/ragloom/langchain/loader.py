"""LangChainDocumentLoader: any LangChain document loader as a ragloom loader.

LangChain's hundreds of loaders (PDF, web pages, Notion, Slack, ...) then feed ragloom's
``EmbeddingStoreIngestor``::

    documents = LangChainDocumentLoader(PyPDFLoader("report.pdf")).load_documents()
    EmbeddingStoreIngestor(store, model).ingest(documents)
"""

from __future__ import annotations

from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document as LcDocument

from ragloom.core.document import Document
from ragloom.core.errors import (
    DocumentLoadError,
    InvalidArgumentTypeError,
)
from ragloom.core.kit.foreign import convert_document, foreign_metadata
from ragloom.core.loaders.result import LoadedDocuments, LoadFailure

__all__ = ["LangChainDocumentLoader", "to_ragloom_document"]


class LangChainDocumentLoader:
    """Loads every document of a LangChain ``BaseLoader`` (through ``lazy_load``).

    Metadata is made ragloom-typed (:func:`to_ragloom_document`). A document whose
    metadata cannot be converted becomes a failure; an exception of the loader ends the
    load there, as a failure after the documents already loaded (``strict=True`` raises
    either as :class:`DocumentLoadError` instead).
    """

    def __init__(self, loader: BaseLoader) -> None:
        if not isinstance(loader, BaseLoader):
            raise InvalidArgumentTypeError(
                f"loader must be a LangChain BaseLoader, got {type(loader).__name__}"
            )
        self.loader = loader

    @property
    def name(self) -> str:
        """The wrapped loader's class name, the source named in failures."""
        return type(self.loader).__name__

    def load_documents(self, *, strict: bool = False) -> LoadedDocuments:
        """Every document the loader yields, converted; failures reported, not lost."""
        documents: list[Document] = []
        failures: list[LoadFailure] = []
        iterator = self.loader.lazy_load()
        while True:
            try:
                lc_document = next(iterator, None)
            except Exception as exc:
                self._failed(failures, exc, strict)
                break
            if lc_document is None:
                break
            self._convert(lc_document, documents, failures, strict)
        return LoadedDocuments(documents, failures)

    async def aload_documents(self, *, strict: bool = False) -> LoadedDocuments:
        """:meth:`load_documents` through ``alazy_load``, without blocking."""
        documents: list[Document] = []
        failures: list[LoadFailure] = []
        iterator = self.loader.alazy_load()
        while True:
            try:
                lc_document = await anext(iterator, None)
            except Exception as exc:
                self._failed(failures, exc, strict)
                break
            if lc_document is None:
                break
            self._convert(lc_document, documents, failures, strict)
        return LoadedDocuments(documents, failures)

    def _failed(self, failures: list[LoadFailure], exc: Exception, strict: bool) -> None:
        error = DocumentLoadError(f"{self.name} failed after loading: {exc}")
        error.__cause__ = exc
        if strict:
            raise error
        failures.append(LoadFailure(self.name, error))

    def _convert(
        self,
        lc_document: LcDocument,
        documents: list[Document],
        failures: list[LoadFailure],
        strict: bool,
    ) -> None:
        convert_document(
            lc_document,
            to_ragloom_document,
            lambda item: str(item.metadata.get("source", self.name)),
            documents,
            failures,
            strict,
        )


def to_ragloom_document(document: LcDocument) -> Document:
    """A ragloom document of a LangChain one: same text; metadata values of ragloom's
    types kept, ``None`` dropped, lists and dicts as JSON text, anything else as ``str``
    (a date, a path), so that filters and stores see a stable value (core's
    :func:`~ragloom.core.kit.foreign.foreign_metadata`). LangChain's ``id`` is kept as
    ``metadata["id"]`` unless the metadata already has one."""
    metadata = foreign_metadata(document.metadata)
    if document.id is not None and "id" not in document.metadata:
        metadata["id"] = document.id
    return Document(document.page_content, metadata)
