"""Conversions between LangChain documents and ragloom segments, contents and vectors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.documents import Document as LcDocument

from ragloom.core.content import EMBEDDING_ID, SEGMENT_ID, Content
from ragloom.core.document import TextSegment
from ragloom.core.errors import InvalidMetadataError

ID_KEY = "langchain_id"
"""The metadata key under which the adapter's first release mirrored each entry's id (for
a filter-based ``get_by_ids``, before stores had ``get``): no longer written, still
reserved and stripped on the way out, so that entries written then read back unchanged."""

RETRIEVAL_KEY = "ragloom"
"""The metadata key of a retrieved document holding how it was retrieved (score, ...)."""


def to_segment(text: str, metadata: Mapping[str, Any] | None) -> TextSegment:
    """The segment stored for one LangChain text and its metadata."""
    entries = dict(metadata or {})
    if ID_KEY in entries:
        raise InvalidMetadataError(
            f"metadata key {ID_KEY!r} is reserved by the LangChain adapter (entries it "
            "wrote before stores had get() hold their id there); rename it"
        )
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
