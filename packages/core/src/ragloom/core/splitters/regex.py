"""DocumentByRegexSplitter: packs the pieces between matches of a regex into segments."""

from __future__ import annotations

import re

from ragloom.core.errors import DocumentSplitError
from ragloom.core.splitters._hierarchical import HierarchicalSplitter
from ragloom.core.splitters._text import Source, units
from ragloom.core.splitters.base import DocumentSplitter
from ragloom.core.splitters.sentence import DocumentBySentenceSplitter
from ragloom.core.tokenizer import Tokenizer

__all__ = [
    "DocumentByRegexSplitter",
]


class DocumentByRegexSplitter(HierarchicalSplitter):
    """Packs as many pieces as fit into each segment, pieces being the text between
    matches of ``regex`` (the matches themselves are dropped, as separators). A piece too
    long for a segment goes to ``sub_splitter`` (default: sentences, then words, then
    characters, so that any text splits)."""

    _whitespace_units = False
    # A user's pattern may look arbitrarily far ahead: long regions are measured whole.
    _windowed = False

    def __init__(
        self,
        regex: str | re.Pattern[str],
        max_segment_size: int,
        max_overlap: int = 0,
        tokenizer: Tokenizer | None = None,
        sub_splitter: DocumentSplitter | None = None,
    ) -> None:
        try:
            self.regex = re.compile(regex)
        except (re.error, TypeError) as e:
            raise DocumentSplitError(f"regex {regex!r} is not a valid pattern: {e}") from e
        super().__init__(max_segment_size, max_overlap, tokenizer, sub_splitter)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.regex.pattern!r}, {super().__repr__().split('(', 1)[1]}"
        )

    def _default_sub_splitter(self) -> DocumentSplitter:
        return DocumentBySentenceSplitter(self.max_segment_size, self.max_overlap, self.tokenizer)

    def _units(self, source: Source, lo: int, hi: int) -> tuple[list[int], list[int]]:
        return units(self.regex, source.text, lo, hi)
