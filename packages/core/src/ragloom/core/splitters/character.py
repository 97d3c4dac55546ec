"""DocumentByCharacterSplitter: segments of as many characters (or tokens) as fit."""

from __future__ import annotations

from ragloom.core.splitters._hierarchical import HierarchicalSplitter
from ragloom.core.splitters._text import Source, Span, next_non_space, strip_end
from ragloom.core.splitters._tokens import PieceCounter, largest_fit

__all__ = [
    "DocumentByCharacterSplitter",
]

# Initial guess of characters per token, before a segment has been measured.
_CHARS_PER_TOKEN = 4.0


class DocumentByCharacterSplitter(HierarchicalSplitter):
    """Cuts the text into segments of ``max_segment_size`` characters (or tokens), in
    the middle of words if need be; the last resort of the other splitters.

    Leading and trailing whitespace of each segment is dropped. With a tokenizer, each
    cut is found by bisection with exact counts. ``sub_splitter`` is accepted for a
    uniform signature and never used: a character cannot be split further. Counts are
    exact and cheap to probe (see ``PieceCounter``).
    """

    def _prefetch(self, source: Source, regions: list[tuple[int, int]], sizes: list[int]) -> None:
        """Nothing to measure ahead: cuts are found by exact counting."""

    def _pack(self, source: Source, lo: int, hi: int, prev: Span | None) -> list[Span]:
        text, limit = source.text, self.max_segment_size
        out: list[Span] = []
        counter = None if self.tokenizer is None else PieceCounter(self.tokenizer, text, lo, hi)
        pos = lo
        while pos < hi:
            start = pos
            if prev is not None and self.max_overlap:
                start = self._overlap(source, prev, [pos], 0, 1)[0]
            if counter is None:
                end = strip_end(text, pos, min(start + limit, hi))
                out.append((start, end, end - start, 0))
            else:
                out.append(self._token_cut(counter, text, start, pos, hi, prev))
                counter.forget(out[-1][0])
            prev = out[-1]
            pos = next_non_space(text, prev[1], hi)
        return out

    def _token_cut(
        self, counter: PieceCounter, text: str, start: int, pos: int, hi: int, prev: Span | None
    ) -> Span:
        """The longest segment from ``start`` (an overlap start, or ``pos``) that takes in
        at least the character at ``pos``; without the overlap if that does not fit."""
        count, limit = counter.count, self.max_segment_size
        ratio = (prev[1] - prev[0]) / max(prev[2], 1) if prev is not None else _CHARS_PER_TOKEN
        guess = start + int(limit * ratio)
        end = largest_fit(lambda x: count(start, x), start, pos + 1, hi, limit, guess)
        if end is None and start != pos:
            start = pos
            guess = pos + int(limit * ratio)
            end = largest_fit(lambda x: count(pos, x), pos, pos + 1, hi, limit, guess)
        end = strip_end(text, pos, pos + 1 if end is None else end)  # None: one char too big
        # Both counts are exact, so verify() need only count the overlap again.
        shared = count(start, prev[1]) if prev is not None and start < prev[1] else 0
        return (start, end, count(start, end), shared)
