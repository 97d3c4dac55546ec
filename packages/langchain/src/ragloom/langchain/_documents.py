"""Conversions between LangChain documents and ragloom segments, contents and vectors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.documents import Document as LcDocument

from ragloom.core.content import EMBEDDING_ID, SEGMENT_ID, Content
from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding
from ragloom.core.errors import EmbeddingModelError, InvalidMetadataError

ID_KEY = "langchain_id"
"""The metadata key under which the vector store adapter mirrors each entry's id, so that
``get_by_ids`` can find entries with a filter on any store (stripped on the way out)."""

RETRIEVAL_KEY = "ragloom"
"""The metadata key of a retrieved document holding how it was retrieved (score, ...)."""


def to_segment(text: str, metadata: Mapping[str, Any] | None, id: str) -> TextSegment:
    """The segment stored for one LangChain text: its metadata plus ``ID_KEY``."""
    entries = dict(metadata or {})
    if ID_KEY in entries:
        raise InvalidMetadataError(
            f"metadata key {ID_KEY!r} is reserved by the LangChain adapter (it holds the "
            "entry's id); rename it"
        )
    entries[ID_KEY] = id
    return TextSegment(text, entries)


def to_document(segment: TextSegment, id: str) -> LcDocument:
    """The LangChain document of a stored segment, without the adapter's ``ID_KEY``."""
    metadata: dict[str, Any] = segment.metadata.to_dict()
    metadata.pop(ID_KEY, None)
    return LcDocument(id=id, page_content=segment.text, metadata=metadata)


def content_to_document(content: Content) -> LcDocument:
    """A retrieved content as a LangChain document: the segment's metadata, plus the
    retrieval metadata (score, ids) under ``RETRIEVAL_KEY``; ``id`` is the embedding or
    keyword-index id when the retriever gave one."""
    metadata: dict[str, Any] = content.text_segment.metadata.to_dict()
    metadata.pop(ID_KEY, None)
    metadata[RETRIEVAL_KEY] = dict(content.metadata)
    id = content.metadata.get(EMBEDDING_ID, content.metadata.get(SEGMENT_ID))
    return LcDocument(
        id=None if id is None else str(id), page_content=content.text, metadata=metadata
    )


def to_embeddings(
    vectors: Sequence[Sequence[float]], expected: int, source: str
) -> list[Embedding]:
    """LangChain's lists of floats as ragloom embeddings, one per input text."""
    if len(vectors) != expected:
        raise EmbeddingModelError(
            f"{source} returned {len(vectors)} embeddings for {expected} texts"
        )
    try:
        return [Embedding(vector) for vector in vectors]
    except ValueError as exc:
        raise EmbeddingModelError(f"{source} returned an invalid embedding: {exc}") from exc
