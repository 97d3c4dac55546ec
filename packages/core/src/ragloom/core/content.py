"""Content: a piece of retrieved information relevant to a query, with its provenance."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ragloom.core.document import TextSegment

__all__ = [
    "SCORE",
    "EMBEDDING_ID",
    "SEGMENT_ID",
    "RERANKED_SCORE",
    "Content",
]

# Keys of Content.metadata, as in the spec's ContentMetadata.
SCORE = "score"
EMBEDDING_ID = "embedding_id"
SEGMENT_ID = "segment_id"  # the id of a keyword index entry (the ingestor uses the embedding id)
RERANKED_SCORE = "reranked_score"


@dataclass(frozen=True, slots=True)
class Content:
    """A retrieved :class:`TextSegment` plus retrieval metadata (score, embedding id, ...).

    The segment's own metadata (file name, offsets) says where the text came from;
    ``metadata`` says how it was retrieved.
    """

    text_segment: TextSegment
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_text(cls, text: str) -> Content:
        """Content made of a bare text (the spec's ``Content.from(String)``)."""
        return cls(TextSegment(text))

    @property
    def text(self) -> str:
        """The segment's text."""
        return self.text_segment.text

    @property
    def score(self) -> float | None:
        """The retriever's relevance score, when it gave one."""
        value = self.metadata.get(SCORE)
        return None if value is None else float(value)

    @property
    def embedding_id(self) -> str | None:
        """The id of the embedding this content was found by, for embedding retrievers."""
        value = self.metadata.get(EMBEDDING_ID)
        return None if value is None else str(value)
