"""The machinery shared by the splitters (the spec's HierarchicalDocumentSplitter).

A splitter finds its units (paragraphs, lines, ...) as spans of the document text with
one regex scan, then packs them greedily: from unit ``i`` the segment runs to the last
unit ``j`` whose end still fits, found by bisection over the cumulative sizes, so the
Python loop runs once per *segment*, never per unit or character. Sizes are character
offsets themselves, or cumulative token counts from one batch call. A unit too big for
a segment is handed to the sub-splitter (on the same text, so offsets stay exact).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from itertools import accumulate, islice, pairwise

from ragloom.core._gc import gc_paused
from ragloom.core.document import END, INDEX, START, Document, TextSegment
from ragloom.core.errors import DocumentSplitError
from ragloom.core.metadata import Metadata
from ragloom.core.splitters._patterns import SENTENCE_BOUNDARY, WORD_START
from ragloom.core.splitters._text import (
    _BOUNDARY_LOOKBACK,
    Source,
    Span,
    Units,
    next_non_space,
    overlap_start,
    strip_end,
)
from ragloom.core.splitters._tokens import verify
from ragloom.core.splitters.base import DocumentSplitter
from ragloom.core.tokenizer import Tokenizer, count_tokens_batch

__all__ = [
    "HierarchicalSplitter",
]


class HierarchicalSplitter:
    """Base of ragloom's splitters: units, greedy packing, sub-splitting, overlap.

    ``max_segment_size`` and ``max_overlap`` are in characters, or in tokens when a
    ``tokenizer`` is given. ``sub_splitter`` splits units too big for one segment; by
    default the next finer splitter with the same settings.
    """

    #: Whether units are sentences (their starts are then the only sentence starts).
    _units_are_sentences = False
    #: Whether units are separated by whitespace only (so token counts add up).
    _whitespace_units = True

    def __init__(
        self,
        max_segment_size: int,
        max_overlap: int = 0,
        tokenizer: Tokenizer | None = None,
        sub_splitter: DocumentSplitter | None = None,
    ) -> None:
        _check_sizes(max_segment_size, max_overlap)
        if tokenizer is not None and not isinstance(tokenizer, Tokenizer):
            raise DocumentSplitError(f"tokenizer {tokenizer!r} has no count_tokens(text) method")
        if sub_splitter is not None and not isinstance(sub_splitter, DocumentSplitter):
            raise DocumentSplitError(f"sub_splitter {sub_splitter!r} is not a DocumentSplitter")
        self.max_segment_size = max_segment_size
        self.max_overlap = max_overlap
        self.tokenizer = tokenizer
        self.sub_splitter = sub_splitter or self._default_sub_splitter()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(max_segment_size={self.max_segment_size}, "
            f"max_overlap={self.max_overlap}, tokenizer={self.tokenizer!r})"
        )

    def split(self, document: Document) -> list[TextSegment]:
        """The segments of ``document``; ``[]`` when it is empty or only whitespace."""
        # Splitting allocates many objects that never form cycles (match objects, spans,
        # segments); the cyclic garbage collector's passes over them, and over everything
        # else alive, cost a fifth of the time on a large document. It is paused (and
        # resumed as it was, even on error) while one document is split.
        with gc_paused():
            return self._split(document)

    def _split(self, document: Document) -> list[TextSegment]:
        text = document.text
        lo = next_non_space(text, 0, len(text))
        if lo == len(text):
            return []
        source = Source.of(text, self.tokenizer)
        spans = self._pack(source, lo, strip_end(text, lo, len(text)), None)
        if self.tokenizer is not None:
            spans = verify(self.tokenizer, text, spans, self.max_segment_size, self.max_overlap)
        base, segment, metadata = (
            document.metadata.to_dict(),
            TextSegment._trusted,
            Metadata._trusted,
        )
        return [
            segment(text[s:e], metadata({**base, INDEX: k, START: s, END: e}))
            for k, (s, e, _, _) in enumerate(spans)
        ]

    def split_all(self, documents: Iterable[Document]) -> list[TextSegment]:
        """The segments of every document, each document indexed from 0."""
        return [segment for document in documents for segment in self.split(document)]

    # --- what each splitter defines -------------------------------------------------

    def _default_sub_splitter(self) -> DocumentSplitter | None:
        """The splitter for units too big for a segment (``None``: units always fit)."""
        return None

    def _units(self, source: Source, lo: int, hi: int) -> tuple[list[int], list[int]]:
        """Starts and ends of this splitter's trimmed units in ``[lo, hi)``."""
        raise NotImplementedError

    # --- packing ----------------------------------------------------------------------

    def _pack(self, source: Source, lo: int, hi: int, prev: Span | None) -> list[Span]:
        """Segments covering the trimmed span ``[lo, hi)``; ``prev`` is the segment just
        before it (the first segment overlaps it when it can)."""
        if self.tokenizer is None:
            return self._pack_chars(source, lo, hi, prev)
        measured = source.measured.pop((id(self), lo, hi), None)
        starts, ends, first, last = measured or self._measure(source, [(lo, hi)])[0]
        text, limit, overlap = source.text, self.max_segment_size, self.max_overlap
        exact = source.additive and self._whitespace_units
        out: list[Span] = []
        i, n = 0, len(starts)
        while i < n:
            start, head = starts[i], 0
            if prev is not None and overlap:
                start, head = self._overlap(source, prev, starts, i, last[i] - first[i])
            j = bisect_right(last, first[i] + limit - head, i) - 1
            if j < i:
                out.extend(self._sub_split(source, starts[i], ends[i], prev))
                i += 1
            else:
                # A sum of unit counts is exact when the junctions are whitespace, which
                # for an overlap from before this region means the separator before lo.
                exact_here = exact and (
                    start >= lo or (prev is not None and text[prev[1] : lo].isspace())
                )
                size = head + last[j] - first[i]
                out.append((start, ends[j], size, head if exact_here else -1))
                i = j + 1
            prev = out[-1] if out else prev
        return out

    def _pack_chars(self, source: Source, lo: int, hi: int, prev: Span | None) -> list[Span]:
        """``_pack`` when sizes are characters: a unit's size is its length, so the
        cumulative sizes are the offsets themselves and no counting is needed."""
        limit, overlap = self.max_segment_size, self.max_overlap
        if prev is None and hi - lo <= limit:
            return [(lo, hi, hi - lo, 0)]
        starts, ends = self._units(source, lo, hi)
        text, sentences = source.text, self._units_are_sentences
        boundary, word_start = SENTENCE_BOUNDARY[source.plain].search, WORD_START.search
        out: list[Span] = []
        i, n = 0, len(starts)
        while i < n:
            start, end = starts[i], ends[i]
            if end - start > limit:
                # Too big even without an overlap (an overlap never makes a unit that fits
                # alone stop fitting: its budget is what the unit leaves of the limit).
                out.extend(self._sub_split(source, start, end, prev))
                i += 1
            else:
                if prev is not None and overlap:
                    # _overlap and overlap_start in characters, inlined (same rules; the
                    # differential test holds them to it): the budget is what the gap and
                    # the unit leave of the limit, at most max_overlap.
                    prev_start, prev_end = prev[0], prev[1]
                    budget = limit - (end - prev_end)
                    if budget > overlap:
                        budget = overlap
                    lower = prev_end - budget
                    if budget > 0:
                        k = bisect_left(starts, lower, 0, i)
                        unit = starts[k] if k < i else -1
                        if lower <= prev_start:
                            lower = prev_start + 1
                        if lower < prev_end:
                            if not lower <= unit < prev_end:
                                unit = -1
                            o = -1
                            if sentences and prev_start >= starts[0]:
                                o = unit  # the units are the sentences
                            else:  # the earliest sentence start in [lower, prev_end)
                                b = lower - _BOUNDARY_LOOKBACK
                                b = b if b > prev_start else prev_start
                                while (m := boundary(text, b, prev_end)) is not None:
                                    b = m.end()
                                    if b >= prev_end:
                                        break
                                    if b >= lower:
                                        o = b
                                        break
                            if o < 0:  # else the earliest word or unit start
                                m = word_start(text, lower - 1, prev_end)
                                if m is not None:
                                    o = m.start() + 1
                                    if 0 <= unit < o:
                                        o = unit
                                elif unit >= 0:
                                    o = unit
                                elif prev_end < len(text) and not text[prev_end].isspace():
                                    o = lower  # prev was cut inside a word
                            if o >= 0:
                                start = o
                # The segment runs to the last unit that ends within the limit from start.
                j = bisect_right(ends, start + limit, i) - 1
                end = ends[j]
                out.append((start, end, end - start, -1))
                i = j + 1
            if out:
                prev = out[-1]
        return out

    def _measure(
        self, source: Source, regions: list[tuple[int, int]], sizes: list[int] | None = None
    ) -> list[Units]:
        """The units of each region with their cumulative sizes.

        With a tokenizer, the units of all regions are counted in one batch call, and
        the units too big for a segment are measured ahead for the sub-splitter, so a
        document costs one batch call per level instead of one per unit. ``sizes`` are
        the regions' own sizes when known: a region that is a single unit (a paragraph
        that is one line) is not counted again.
        """
        found = [self._units(source, lo, hi) for lo, hi in regions]
        if self.tokenizer is None:
            return [(starts, ends, starts, ends) for starts, ends in found]
        text, limit = source.text, self.max_segment_size
        # Each unit is counted with the separator before it: for tokenizers whose tokens
        # never span whitespace that is exact, for the others it errs high.
        pieces: list[str] = []
        for starts, ends in found:
            if sizes is None or len(starts) > 1:
                pieces.append(text[starts[0] : ends[0]])
                pieces += [text[a:b] for a, b in pairwise(ends)]
        counts = iter(count_tokens_batch(self.tokenizer, pieces) if pieces else ())
        out: list[Units] = []
        too_big: list[tuple[int, int]] = []
        too_big_sizes: list[int] = []
        for r, (starts, ends) in enumerate(found):
            if sizes is None or len(starts) > 1:
                last = list(accumulate(islice(counts, len(starts))))
            else:
                last = [sizes[r]]
            first = [0, *last[:-1]]
            out.append((starts, ends, first, last))
            for i in range(len(starts)):
                if last[i] - first[i] > limit:
                    too_big.append((starts[i], ends[i]))
                    too_big_sizes.append(last[i] - first[i])
        if too_big and isinstance(self.sub_splitter, HierarchicalSplitter):
            self.sub_splitter._prefetch(source, too_big, too_big_sizes)
        return out

    def _prefetch(self, source: Source, regions: list[tuple[int, int]], sizes: list[int]) -> None:
        """Measure ``regions`` (of known ``sizes``) now, for the ``_pack`` calls to come."""
        if self.tokenizer is not None:
            measured = self._measure(source, regions, sizes)
            for region, units in zip(regions, measured, strict=True):
                source.measured[(id(self), *region)] = units

    def _overlap(
        self, source: Source, prev: Span, starts: list[int], i: int, unit_size: int
    ) -> tuple[int, int]:
        """Start of the segment that begins with unit ``i`` after ``prev``, and the size
        of what precedes the unit in it (overlap, plus the gap in characters)."""
        prev_start, prev_end, prev_size = prev[0], prev[1], max(prev[2], 1)
        chars = self.tokenizer is None
        gap = starts[i] - prev_end if chars else 0
        budget = self.max_segment_size - gap - unit_size
        if budget > self.max_overlap:
            budget = self.max_overlap
        if budget <= 0:
            return starts[i], 0
        # With a tokenizer, the overlap is sized at prev's chars per token and aimed at
        # 7/8 of the budget, so that verify() rarely has to shrink it.
        span = prev_end - prev_start
        lower = prev_end - (budget if chars else (budget - budget // 8) * span // prev_size)
        k = bisect_left(starts, lower, 0, i)
        o = overlap_start(
            source,
            prev_start,
            prev_end,
            lower,
            starts[k] if k < i else None,
            self._units_are_sentences and prev_start >= starts[0],
        )
        if o is None:
            return starts[i], 0
        return o, gap + (prev_end - o if chars else -((o - prev_end) * prev_size // span))

    def _sub_split(self, source: Source, lo: int, hi: int, prev: Span | None) -> list[Span]:
        """Segments of one unit too big for a segment, from the sub-splitter."""
        sub = self.sub_splitter
        if isinstance(sub, HierarchicalSplitter):
            return sub._pack(source, lo, hi, prev)
        if sub is None:
            raise DocumentSplitError(
                f"{self!r} has no sub_splitter for a unit too big for one segment: "
                f"{source.text[lo : lo + 40]!r}..."
            )
        return self._foreign_split(sub, source.text, lo, hi)

    def _foreign_split(self, sub: DocumentSplitter, text: str, lo: int, hi: int) -> list[Span]:
        """Spans of the segments of a sub-splitter that is not one of ragloom's own: at
        their ``start`` metadata when that matches, else found in the text in order."""
        out: list[Span] = []
        cursor = previous = lo
        for segment in sub.split(Document(text[lo:hi])):
            piece, start = segment.text, segment.metadata.get(START)
            if isinstance(start, int) and text.startswith(piece, lo + start):
                at = lo + start
            else:
                at = text.find(piece, cursor, hi)
                at = at if at >= 0 else text.find(piece, previous + 1, hi)
            if at < 0:
                raise DocumentSplitError(
                    f"sub_splitter {sub!r} produced a segment that is not a span of its "
                    f"input: {piece[:40]!r}"
                )
            s = next_non_space(text, at, at + len(piece))
            e = strip_end(text, s, at + len(piece))
            if s < e and (not out or (s > out[-1][0] and e > out[-1][1])):
                size = e - s if self.tokenizer is None else self.tokenizer.count_tokens(text[s:e])
                out.append((s, e, size, -1))
                cursor, previous = e, s
        return out


def _check_sizes(max_segment_size: int, max_overlap: int) -> None:
    for name, value in (("max_segment_size", max_segment_size), ("max_overlap", max_overlap)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise DocumentSplitError(f"{name} must be an int, got {value!r}")
    if max_segment_size < 1:
        raise DocumentSplitError(f"max_segment_size must be at least 1, got {max_segment_size}")
    if max_overlap < 0:
        raise DocumentSplitError(f"max_overlap must not be negative, got {max_overlap}")
    if max_overlap >= max_segment_size:
        raise DocumentSplitError(
            f"max_overlap ({max_overlap}) must be smaller than "
            f"max_segment_size ({max_segment_size})"
        )
