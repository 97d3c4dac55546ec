"""DocumentByWordSplitter: packs whitespace-separated words into segments."""

from __future__ import annotations

from ragloom.core.splitters._hierarchical import HierarchicalSplitter
from ragloom.core.splitters._patterns import SPACE_RUN
from ragloom.core.splitters._text import Source, units
from ragloom.core.splitters.base import DocumentSplitter
from ragloom.core.splitters.character import DocumentByCharacterSplitter

__all__ = [
    "DocumentByWordSplitter",
]


class DocumentByWordSplitter(HierarchicalSplitter):
    """Packs as many words (runs of non-whitespace) as fit into each segment; a word too
    long for a segment goes to ``sub_splitter`` (default: characters)."""

    def _default_sub_splitter(self) -> DocumentSplitter:
        return DocumentByCharacterSplitter(self.max_segment_size, self.max_overlap, self.tokenizer)

    def _units(self, source: Source, lo: int, hi: int) -> tuple[list[int], list[int]]:
        return units(SPACE_RUN, source.text, lo, hi)
