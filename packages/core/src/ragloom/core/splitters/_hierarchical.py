"""The machinery shared by the splitters (the spec's HierarchicalDocumentSplitter).

A splitter finds its units (paragraphs, lines, ...) as spans of the document text with
one regex scan, then packs them greedily: from unit ``i`` the segment runs to the last
unit ``j`` whose end still fits, found by bisection over the cumulative sizes, so the
Python loop runs once per *segment*, never per unit or character. Sizes are character
offsets themselves, or cumulative token counts from one batch call. A unit too big for
a segment is handed to the sub-splitter (on the same text, so offsets stay exact).

With a tokenizer, a region longer than ``_WINDOW`` characters (one long line, say) is
measured and packed a window at a time, so that memory stays bounded by the window
rather than by the region's number of units (see ``_pack_windowed``).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from itertools import accumulate, islice, pairwise

from ragloom.core._gc import gc_paused
from ragloom.core.document import END, INDEX, START, Document, TextSegment
from ragloom.core.errors import DocumentSplitError
from ragloom.core.splitters._patterns import SENTENCE_BOUNDARY, WINDOW_END, WORD_START
from ragloom.core.splitters._text import (
    _BOUNDARY_LOOKBACK,
    Source,
    Span,
    Units,
    next_non_space,
    overlap_start,
    strip_end,
)
from ragloom.core.splitters._tokens import counts, verify
from ragloom.core.splitters.base import DocumentSplitter
from ragloom.core.tokenizer import Tokenizer

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
    #: Whether unit boundaries never look past a ``WINDOW_END`` character, so that long
    #: regions can be scanned a window at a time.
    _windowed = True

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
        # Each segment gets a validated dict, wrapped in a Metadata on first access (one
        # object a segment fewer while a document's segments are built).
        base, segment = document.metadata.to_dict(), TextSegment._trusted
        return [
            segment(text[s:e], {**base, INDEX: k, START: s, END: e})
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
        if measured is None and self._windowed and hi - lo > _WINDOW:
            return self._pack_windowed(source, lo, hi, prev)
        units = measured or self._measure(source, [(lo, hi)])[0]
        out: list[Span] = []
        self._pack_units(source, lo, units, 0, units[0][0], prev, out, partial=False)
        return out

    def _pack_units(
        self,
        source: Source,
        lo: int,
        units: Units,
        i: int,
        region_start: int,
        prev: Span | None,
        out: list[Span],
        partial: bool,
    ) -> int:
        """Append to ``out`` the segments of ``units`` from unit ``i`` on; return the index
        of the first unit not packed. ``lo`` and ``region_start`` are the region's start and
        its first unit's start. ``partial``: more units follow the last one, so stop
        before a segment that might take them in."""
        starts, ends, first, last = units
        text, limit, overlap = source.text, self.max_segment_size, self.max_overlap
        exact = source.additive and self._whitespace_units
        n = len(starts)
        while i < n:
            start, head = starts[i], 0
            if prev is not None and overlap:
                start, head = self._overlap(
                    source, prev, starts, i, last[i] - first[i], region_start
                )
            j = bisect_right(last, first[i] + limit - head, i) - 1
            if j < i:
                out.extend(self._sub_split(source, starts[i], ends[i], prev))
                i += 1
            elif partial and j == n - 1:
                break
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
        return i

    def _pack_windowed(self, source: Source, lo: int, hi: int, prev: Span | None) -> list[Span]:
        """``_pack`` of a long region, its units measured a window at a time.

        A window is scanned from a unit start to just after a ``WINDOW_END`` character,
        so every unit in it but the last (which may run on) is a unit of the whole
        region; each is counted with the separator before it, as ``_measure`` does. The
        segments whose units all lie in the window are packed exactly as ``_pack``
        would; the next window starts again at the last unit that starts at or before
        the last segment's start, which is as far back as an overlap (or the choice of
        its start) can reach. A window with no complete segment is doubled.
        """
        assert self.tokenizer is not None
        text = source.text
        known = source.sizes.pop((id(self), lo, hi), None)
        out: list[Span] = []
        start, before, todo = lo, -1, lo  # scan from; end of the unit before; next unit
        first_start, width = -1, _WINDOW  # the region's first unit start, once found
        while True:
            m = WINDOW_END.search(text, min(start + width, hi) - 1, hi)
            cut = hi if m is None else m.end()
            starts, ends = self._units(source, start, cut)
            if cut < hi:
                del starts[-1], ends[-1]  # it may run on past the cut
                if not starts:
                    width *= 2
                    continue
            if first_start < 0:
                first_start = starts[0]
            pieces = [text[starts[0] if before < 0 else before : ends[0]]]
            pieces += [text[a:b] for a, b in pairwise(ends)]
            if known is not None and before < 0 and cut == hi and len(starts) == 1:
                last = [known]  # the region is one unit, measured by the splitter above
            else:
                last = list(accumulate(counts(self.tokenizer, pieces, source.additive)))
            del pieces
            units = (starts, ends, [0, *last[:-1]], last)
            i = bisect_left(starts, todo)
            self._prefetch_too_big(source, units, skip=i)
            stop = self._pack_units(source, lo, units, i, first_start, prev, out, partial=cut < hi)
            if cut == hi:
                return out
            if stop == i:  # no segment ends in this window
                width *= 2
                continue
            todo = starts[stop] if stop < len(starts) else ends[-1]
            prev = out[-1]
            r = max(bisect_right(starts, prev[0]) - 1, 0)
            start, before = starts[r], ends[r - 1] if r else before
            width = _WINDOW + todo - start

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
        text = source.text
        # Each unit is counted with the separator before it: for tokenizers whose tokens
        # never span whitespace that is exact, for the others it errs high.
        pieces: list[str] = []
        for starts, ends in found:
            if sizes is None or len(starts) > 1:
                pieces.append(text[starts[0] : ends[0]])
                pieces += [text[a:b] for a, b in pairwise(ends)]
        counted = counts(self.tokenizer, pieces, source.additive)
        out: list[Units] = []
        for r, (starts, ends) in enumerate(found):
            if sizes is None or len(starts) > 1:
                last = list(accumulate(islice(counted, len(starts))))
            else:
                last = [sizes[r]]
            out.append((starts, ends, [0, *last[:-1]], last))
        self._prefetch_too_big(source, *out)
        return out

    def _prefetch_too_big(self, source: Source, *measured: Units, skip: int = 0) -> None:
        """Have the sub-splitter measure ahead, in one batch, the units too big for a
        segment (after the first ``skip`` units of the first ``measured``)."""
        sub, limit = self.sub_splitter, self.max_segment_size
        if not isinstance(sub, HierarchicalSplitter):
            return
        too_big: list[tuple[int, int]] = []
        too_big_sizes: list[int] = []
        for starts, ends, first, last in measured:
            for i in range(skip, len(starts)):
                if last[i] - first[i] > limit:
                    too_big.append((starts[i], ends[i]))
                    too_big_sizes.append(last[i] - first[i])
            skip = 0
        if too_big:
            sub._prefetch(source, too_big, too_big_sizes)

    def _prefetch(self, source: Source, regions: list[tuple[int, int]], sizes: list[int]) -> None:
        """Measure ``regions`` (of known ``sizes``) now, for the ``_pack`` calls to come;
        only record the sizes of those long enough to be packed window by window."""
        if self.tokenizer is None:
            return
        short: list[tuple[int, int]] = []
        short_sizes: list[int] = []
        for region, size in zip(regions, sizes, strict=True):
            if self._windowed and region[1] - region[0] > _WINDOW:
                source.sizes[(id(self), *region)] = size
            else:
                short.append(region)
                short_sizes.append(size)
        if short:
            measured = self._measure(source, short, short_sizes)
            for region, units in zip(short, measured, strict=True):
                source.measured[(id(self), *region)] = units

    def _overlap(
        self,
        source: Source,
        prev: Span,
        starts: list[int],
        i: int,
        unit_size: int,
        region_start: int | None = None,
    ) -> tuple[int, int]:
        """Start of the segment that begins with unit ``i`` after ``prev``, and the size
        of what precedes the unit in it (overlap, plus the gap in characters).

        ``region_start``: the start of the region's first unit, when ``starts`` are only
        the units from one at or before ``prev``'s start (a window); default ``starts[0]``.
        """
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
            self._units_are_sentences
            and prev_start >= (starts[0] if region_start is None else region_start),
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


# Regions longer than this many characters are packed a window of about this size at a
# time (with a tokenizer). A unit costs some 500 bytes while measured (and its encoding a
# few kB more, see ``_tokens.counts``), so a window takes a few MB at most, whatever the
# region's length.
_WINDOW = 1 << 16


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
