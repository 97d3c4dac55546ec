"""RecursiveDocumentSplitter: paragraphs, then lines, sentences, words, characters."""

from __future__ import annotations

from ragloom.core.splitters.line import DocumentByLineSplitter
from ragloom.core.splitters.paragraph import DocumentByParagraphSplitter
from ragloom.core.tokenizer import Tokenizer

__all__ = [
    "RecursiveDocumentSplitter",
]


class RecursiveDocumentSplitter(DocumentByParagraphSplitter):
    """The spec's ``DocumentSplitters.recursive``: packs paragraphs; a paragraph too big
    is split into lines, a line into sentences, a sentence into words and a word into
    characters, all with the same size, overlap and tokenizer. The usual choice."""

    def __init__(
        self, max_segment_size: int, max_overlap: int = 0, tokenizer: Tokenizer | None = None
    ) -> None:
        lines = DocumentByLineSplitter(max_segment_size, max_overlap, tokenizer)
        super().__init__(max_segment_size, max_overlap, tokenizer, lines)
