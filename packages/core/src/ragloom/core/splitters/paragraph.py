"""DocumentByParagraphSplitter: packs paragraphs into segments."""

from __future__ import annotations

from ragloom.core.splitters._hierarchical import HierarchicalSplitter
from ragloom.core.splitters._paragraph_breaks import paragraph_units
from ragloom.core.splitters._patterns import PARAGRAPH_BREAK
from ragloom.core.splitters._text import Source, units
from ragloom.core.splitters.base import DocumentSplitter
from ragloom.core.splitters.sentence import DocumentBySentenceSplitter

__all__ = [
    "DocumentByParagraphSplitter",
]


class DocumentByParagraphSplitter(HierarchicalSplitter):
    """Packs as many paragraphs as fit into each segment; paragraphs are separated by two
    or more line breaks, possibly with whitespace between them. A paragraph too long for
    a segment goes to ``sub_splitter`` (default: sentences)."""

    def _default_sub_splitter(self) -> DocumentSplitter:
        return DocumentBySentenceSplitter(self.max_segment_size, self.max_overlap, self.tokenizer)

    def _units(self, source: Source, lo: int, hi: int) -> tuple[list[int], list[int]]:
        if source.plain and (found := paragraph_units(source.text, lo, hi)) is not None:
            return found  # the regex's units, found with numpy (see _paragraph_breaks)
        return units(PARAGRAPH_BREAK[source.plain], source.text, lo, hi)
