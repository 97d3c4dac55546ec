"""SentenceWindowSplitter: one segment per sentence, carrying the sentences around it.

The ingestion half of sentence-window retrieval (LlamaIndex's sentence-window parser):
each sentence is embedded alone, which matches a query sharply, and its metadata keeps the
window of up to ``window`` sentences before and after it -- the text (``window``) and its
offsets in the document (``window_start``/``window_end``) -- for
:class:`~ragloom.core.retrievers.sentence_window.SentenceWindowRetriever` to answer with.

Unlike a parent (see :mod:`ragloom.core.parent_store`), a window belongs to one segment
only, so it is kept in that segment's metadata: every store returns metadata with a match,
so nothing else needs to be stored or looked up. Windows are capped at
``max_window_chars`` (dropping the farther sentences first) to stay well within the
stores' metadata limits (Milvus: 64 KiB a JSON field). Sentences are found as
:class:`~ragloom.core.splitters.DocumentBySentenceSplitter` finds them.
"""

from __future__ import annotations

from collections.abc import Iterable

from ragloom.core.document import END, INDEX, START, Document, TextSegment
from ragloom.core.errors import InvalidArgumentError
from ragloom.core.splitters._text import Source, sentence_units

__all__ = [
    "WINDOW",
    "WINDOW_START",
    "WINDOW_END",
    "SentenceWindowSplitter",
]

WINDOW = "window"
"""Segment metadata key: the text of the sentence's window."""
WINDOW_START = "window_start"
"""Segment metadata key: the window's start offset in the document."""
WINDOW_END = "window_end"
"""Segment metadata key: the window's end offset in the document."""


class SentenceWindowSplitter:
    """Splits each document into its sentences, each with the window around it
    (``window`` sentences either side, at most ``max_window_chars`` characters)."""

    def __init__(self, window: int = 3, *, max_window_chars: int = 4000) -> None:
        if isinstance(window, bool) or not isinstance(window, int) or window < 0:
            raise InvalidArgumentError(f"window must be an int >= 0, got {window!r}")
        if (
            isinstance(max_window_chars, bool)
            or not isinstance(max_window_chars, int)
            or max_window_chars < 1
        ):
            raise InvalidArgumentError(
                f"max_window_chars must be an int >= 1, got {max_window_chars!r}"
            )
        self.window = window
        self.max_window_chars = max_window_chars

    def split(self, document: Document) -> list[TextSegment]:
        """The sentences of ``document`` in order, each with its window in its metadata."""
        text = document.text
        hi = len(text.rstrip())
        if hi == 0:
            return []
        # The region must be trimmed: a text without boundaries comes back as one unit.
        starts, ends = sentence_units(Source.of(text), len(text) - len(text.lstrip()), hi)
        base = document.metadata.to_dict()
        last = len(starts) - 1
        segments = []
        for i, (start, end) in enumerate(zip(starts, ends, strict=True)):
            lo, hi = max(0, i - self.window), min(last, i + self.window)
            while ends[hi] - starts[lo] > self.max_window_chars and (lo < i or hi > i):
                if i - lo >= hi - i:
                    lo += 1
                else:
                    hi -= 1
            metadata = dict(base)
            metadata.update(
                {
                    INDEX: i,
                    START: start,
                    END: end,
                    WINDOW: text[starts[lo] : ends[hi]],
                    WINDOW_START: starts[lo],
                    WINDOW_END: ends[hi],
                }
            )
            segments.append(TextSegment._trusted(text[start:end], metadata))
        return segments

    def split_all(self, documents: Iterable[Document]) -> list[TextSegment]:
        """The sentences of every document, document after document."""
        return [segment for document in documents for segment in self.split(document)]
