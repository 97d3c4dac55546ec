"""DocumentByLineSplitter: packs lines into segments."""

from __future__ import annotations

from ragloom.core.splitters._hierarchical import HierarchicalSplitter
from ragloom.core.splitters._patterns import LINE_BREAK
from ragloom.core.splitters._text import Source, units
from ragloom.core.splitters.base import DocumentSplitter
from ragloom.core.splitters.sentence import DocumentBySentenceSplitter

__all__ = [
    "DocumentByLineSplitter",
]


class DocumentByLineSplitter(HierarchicalSplitter):
    """Packs as many lines as fit into each segment (blank lines are skipped); a line too
    long for a segment goes to ``sub_splitter`` (default: sentences)."""

    def _default_sub_splitter(self) -> DocumentSplitter:
        return DocumentBySentenceSplitter(self.max_segment_size, self.max_overlap, self.tokenizer)

    def _units(self, source: Source, lo: int, hi: int) -> tuple[list[int], list[int]]:
        return units(LINE_BREAK[source.plain], source.text, lo, hi)
