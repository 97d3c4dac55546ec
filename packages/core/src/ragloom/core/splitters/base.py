"""DocumentSplitter: the interface every splitter implements (the spec's DocumentSplitter)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from ragloom.core.document import Document, TextSegment

__all__ = [
    "DocumentSplitter",
]


@runtime_checkable
class DocumentSplitter(Protocol):
    """Splits documents into :class:`TextSegment` objects.

    Each segment carries a copy of the document's metadata plus ``index`` (its position
    in the document, from 0); ragloom's own splitters also add ``start`` and ``end``, the
    character offsets such that ``document.text[start:end] == segment.text``.
    """

    def split(self, document: Document) -> list[TextSegment]:
        """The segments of one document, in order."""
        ...

    def split_all(self, documents: Iterable[Document]) -> list[TextSegment]:
        """The segments of every document, document after document."""
        ...
