"""LlamaIndexDocumentLoader: any LlamaIndex reader as a ragloom loader.

The readers of LlamaHub (and llama-index-core's ``SimpleDirectoryReader``) then feed
ragloom's ``EmbeddingStoreIngestor``::

    documents = LlamaIndexDocumentLoader(SimpleDirectoryReader("docs/")).load_documents()
    EmbeddingStoreIngestor(store, model).ingest(documents)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llama_index.core.readers.base import BaseReader
from llama_index.core.schema import Document as LiDocument

from ragloom.core.document import Document
from ragloom.core.errors import (
    DocumentLoadError,
    InvalidArgumentTypeError,
    RagloomError,
)
from ragloom.core.kit.foreign import convert_document, foreign_metadata
from ragloom.core.loaders.result import LoadedDocuments, LoadFailure
from ragloom.core.metadata import MetadataValue

__all__ = ["LlamaIndexDocumentLoader", "to_ragloom_document"]


class LlamaIndexDocumentLoader:
    """Loads the documents of a LlamaIndex ``BaseReader`` (``load_data(**load_kwargs)``).

    A document whose metadata cannot be converted becomes a failure (``strict=True``
    raises it); a failing reader raises :class:`DocumentLoadError` naming it, since
    ``load_data`` returns nothing to keep.
    """

    def __init__(self, reader: BaseReader, **load_kwargs: Any) -> None:
        if not isinstance(reader, BaseReader):
            raise InvalidArgumentTypeError(
                f"reader must be a LlamaIndex BaseReader, got {type(reader).__name__}"
            )
        self.reader = reader
        self.load_kwargs = load_kwargs

    @property
    def name(self) -> str:
        """The wrapped reader's class name, named in errors."""
        return type(self.reader).__name__

    def load_documents(self, *, strict: bool = False) -> LoadedDocuments:
        """Every document the reader returns, converted; bad ones reported, not lost."""
        try:
            loaded = self.reader.load_data(**self.load_kwargs)
        except RagloomError:
            raise
        except Exception as exc:
            raise DocumentLoadError(f"{self.name} failed: {exc}") from exc
        return self._convert(loaded, strict)

    async def aload_documents(self, *, strict: bool = False) -> LoadedDocuments:
        """:meth:`load_documents` through ``aload_data``, without blocking."""
        try:
            loaded = await self.reader.aload_data(**self.load_kwargs)
        except RagloomError:
            raise
        except Exception as exc:
            raise DocumentLoadError(f"{self.name} failed: {exc}") from exc
        return self._convert(loaded, strict)

    def _convert(self, loaded: list[LiDocument], strict: bool) -> LoadedDocuments:
        documents: list[Document] = []
        failures: list[LoadFailure] = []
        for li_document in loaded:
            convert_document(
                li_document,
                to_ragloom_document,
                lambda item: str(item.metadata.get("file_path", item.doc_id)),
                documents,
                failures,
                strict,
            )
        return LoadedDocuments(documents, failures)


def to_ragloom_document(document: LiDocument) -> Document:
    """A ragloom document of a LlamaIndex one: its text; metadata values of ragloom's
    types kept, ``None`` dropped, lists and dicts as JSON text, anything else as ``str``."""
    return Document(document.text, convert_metadata(document.metadata))


def convert_metadata(metadata: Mapping[str, Any]) -> dict[str, MetadataValue]:
    """LlamaIndex metadata made ragloom-typed, by the rules of :func:`to_ragloom_document`
    (core's :func:`~ragloom.core.kit.foreign.foreign_metadata`)."""
    return foreign_metadata(metadata)
