"""Factories of ready-made splitters (the spec's ``DocumentSplitters``)."""

from __future__ import annotations

from ragloom.core.splitters import DocumentSplitter, RecursiveDocumentSplitter
from ragloom.core.tokenizer import Tokenizer

__all__ = [
    "recursive",
]


def recursive(
    max_segment_size: int, max_overlap: int = 0, tokenizer: Tokenizer | None = None
) -> DocumentSplitter:
    """Paragraphs, then lines, sentences, words and characters (``DocumentSplitters.recursive``).

    Sizes are in characters, or in tokens when ``tokenizer`` is given.
    """
    return RecursiveDocumentSplitter(max_segment_size, max_overlap, tokenizer)
