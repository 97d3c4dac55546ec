"""DocumentTransformer and TextSegmentTransformer protocols.

A transformer cleans, filters or enriches; returning ``None`` drops the item. Subclass
the protocol to inherit ``transform_all``, which applies ``transform`` and drops Nones.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from ragloom.core.document import Document, TextSegment

__all__ = [
    "DocumentTransformer",
    "TextSegmentTransformer",
]


@runtime_checkable
class DocumentTransformer(Protocol):
    """Transforms one Document (or drops it by returning ``None``)."""

    def transform(self, document: Document) -> Document | None:
        """The transformed document, or ``None`` to drop it."""
        ...

    def transform_all(self, documents: Iterable[Document]) -> list[Document]:
        """Transform every document, dropping those mapped to ``None``."""
        return [out for doc in documents if (out := self.transform(doc)) is not None]


@runtime_checkable
class TextSegmentTransformer(Protocol):
    """Transforms one TextSegment (or drops it by returning ``None``)."""

    def transform(self, segment: TextSegment) -> TextSegment | None:
        """The transformed segment, or ``None`` to drop it."""
        ...

    def transform_all(self, segments: Iterable[TextSegment]) -> list[TextSegment]:
        """Transform every segment, dropping those mapped to ``None``."""
        return [out for seg in segments if (out := self.transform(seg)) is not None]
