"""Span arithmetic on the original text: units, trimming and overlap starts.

Every helper works on ``(start, end)`` offsets into the document text and never copies
more than one unit, so that segments stay exact spans of the document.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from operator import ge, itemgetter, methodcaller

from ragloom.core.splitters._patterns import (
    BOUNDARY_FIRST,
    JOINING,
    NON_SPACE,
    SENTENCE_BOUNDARY,
    WORD_START,
    plain_breaks,
)
from ragloom.core.tokenizer import Tokenizer

__all__ = [
    "Span",
    "Units",
    "Source",
    "units",
    "sentence_units",
    "trimmed",
    "next_non_space",
    "strip_end",
    "cut_mid_word",
    "overlap_start",
    "sentence_start",
]

#: ``(start, end, size, head)``: a segment's span and size (chars, or estimated tokens);
#: ``head`` is the part of ``size`` estimated for the overlap, or -1 when the rest is
#: not an exact sum of unit counts (see ``Source.additive``).
Span = tuple[int, int, int, int]
#: A splitter's units in a region: starts, ends, and cumulative sizes before/after each.
Units = tuple[list[int], list[int], list[int], list[int]]

# How far before the overlap window a sentence-boundary match may begin (a terminator,
# closers and whitespace before a sentence start inside the window).
_BOUNDARY_LOOKBACK = 8


@dataclass(frozen=True, slots=True)
class Source:
    """The text being split plus what was learnt about it once."""

    text: str
    plain: int  # 1 when all line breaks are \n or \r\n: index into the pattern pairs
    #: Whether token counts add up across unit junctions: the tokenizer splits on
    #: whitespace and every junction in this text is plain whitespace.
    additive: bool
    #: Units measured ahead, by (id of the splitter, start, end) of the region.
    measured: dict[tuple[int, int, int], Units] = field(default_factory=dict)
    #: Sizes known ahead of regions too long to measure at once, by the same keys.
    sizes: dict[tuple[int, int, int], int] = field(default_factory=dict)
    #: The characters that can begin a sentence boundary and occur in the text, once
    #: asked for (see ``sentence_units``).
    _boundary_chars: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, text: str, tokenizer: Tokenizer | None = None) -> Source:
        additive = getattr(tokenizer, "splits_on_whitespace", False) is True and not any(
            c in text for c in JOINING
        )
        return cls(text, int(plain_breaks(text)), additive)

    def boundary_chars(self) -> list[str]:
        """The characters of ``BOUNDARY_FIRST[self.plain]`` that occur in the text."""
        if not self._boundary_chars:
            text = self.text
            # A character wider than the text's widest is rejected in O(1) by ``in``.
            found = [c for c in BOUNDARY_FIRST[self.plain] if c in text]
            self._boundary_chars.extend(found or [""])
        return [c for c in self._boundary_chars if c]


def units(
    pattern: re.Pattern[str], text: str, lo: int, hi: int, group: int = 0
) -> tuple[list[int], list[int]]:
    """Starts and ends of the trimmed, non-empty pieces of ``text[lo:hi]`` between matches.

    ``group`` selects the part of a match that separates two pieces (0: all of it).
    """
    # map() with C callables keeps the per-match work out of the interpreter loop.
    cuts = list(
        map(
            _SPANS[group] if group < 2 else methodcaller("span", group),
            pattern.finditer(text, lo, hi),
        )
    )
    if not cuts:  # the region is trimmed already
        return [lo], [hi]
    starts = [lo]
    starts += map(_SECOND, cuts)
    ends = list(map(_FIRST, cuts))
    ends.append(hi)
    return trimmed(text, starts, ends)


_SPANS = (re.Match.span, methodcaller("span", 1))
_FIRST, _SECOND = itemgetter(0), itemgetter(1)


def sentence_units(source: Source, lo: int, hi: int) -> tuple[list[int], list[int]]:
    """``units(SENTENCE_BOUNDARY[source.plain], source.text, lo, hi, group=1)``, faster.

    The boundary regex starts with a character class, which ``re`` scans for one
    character at a time; ``str.find`` finds each of the few such characters present in
    the text at memchr speed instead, and the regex is only tried where one occurs.
    Every match begins with one of them, so trying them in order from the end of the
    previous match finds the same matches as ``finditer``.
    """
    text = source.text
    find = text.find
    candidates: list[int] = []
    for c in source.boundary_chars():
        k = find(c, lo, hi)
        while k >= 0:
            candidates.append(k)
            k = find(c, k + 1, hi)
    if not candidates:
        return units(SENTENCE_BOUNDARY[source.plain], text, lo, hi, group=1)
    candidates.sort()
    match = SENTENCE_BOUNDARY[source.plain].match
    starts, ends = [lo], []
    pos = lo
    for k in candidates:
        if k >= pos and (m := match(text, k, hi)) is not None:
            a, pos = m.span(1)
            ends.append(a)
            starts.append(pos)
    if not ends:
        return [lo], [hi]
    ends.append(hi)
    return trimmed(text, starts, ends)


def trimmed(text: str, starts: list[int], ends: list[int]) -> tuple[list[int], list[int]]:
    """The spans with leading and trailing whitespace removed; empty ones dropped."""
    # The common case, every span non-empty and trimmed already, is checked in C: the
    # first and last characters of all spans are gathered by itemgetter.
    if (
        not any(map(ge, starts, ends))
        and not any(map(str.isspace, itemgetter(*starts)(text)))
        and not any(map(str.isspace, itemgetter(*map(_MINUS_ONE, ends))(text)))
    ):
        return starts, ends
    bad = [
        k
        for k, (s, e) in enumerate(zip(starts, ends, strict=True))
        if s >= e or text[s].isspace() or text[e - 1].isspace()
    ]
    if not bad:
        return starts, ends
    for k in bad:
        s = next_non_space(text, starts[k], ends[k])
        starts[k], ends[k] = s, strip_end(text, s, ends[k])
    keep = [k for k, (s, e) in enumerate(zip(starts, ends, strict=True)) if s < e]
    return [starts[k] for k in keep], [ends[k] for k in keep]


_MINUS_ONE = (-1).__add__


def next_non_space(text: str, pos: int, hi: int) -> int:
    """The first non-whitespace position in ``[pos, hi)``, or ``hi``."""
    m = NON_SPACE.search(text, pos, hi)
    return hi if m is None else m.start()


def strip_end(text: str, lo: int, hi: int) -> int:
    """``hi`` moved back over trailing whitespace, not before ``lo``."""
    if hi > lo and text[hi - 1].isspace():
        return lo + len(text[lo:hi].rstrip())
    return hi


def cut_mid_word(text: str, end: int) -> bool:
    """Whether a segment ending at ``end`` was cut inside a word."""
    return end < len(text) and not text[end].isspace()


def overlap_start(
    source: Source,
    prev_start: int,
    prev_end: int,
    lower: int,
    unit_start: int | None,
    units_are_sentences: bool,
) -> int | None:
    """Where the overlap taken from segment ``[prev_start, prev_end)`` may begin.

    The earliest position ``>= lower`` (and after ``prev_start``) that starts a sentence;
    else the earliest that starts a word or ``unit_start`` (the splitter's own unit
    starting in the window, if any); else, only when the previous segment was itself cut
    inside a word, ``lower``. ``None``: no overlap. ``units_are_sentences``: the units
    in the window are sentences, so ``unit_start`` is the earliest sentence start.
    """
    text = source.text
    if lower <= prev_start:
        lower = prev_start + 1
    if lower >= prev_end:
        return None
    if unit_start is not None and not lower <= unit_start < prev_end:
        unit_start = None
    if units_are_sentences:
        if unit_start is not None:
            return unit_start
    else:
        start = sentence_start(source, max(prev_start, lower - _BOUNDARY_LOOKBACK), lower, prev_end)
        if start is not None:
            return start
    m = WORD_START.search(text, lower - 1, prev_end)
    if m is not None:
        return m.start() + 1 if unit_start is None else min(m.start() + 1, unit_start)
    if unit_start is not None:
        return unit_start
    return lower if cut_mid_word(text, prev_end) else None


def sentence_start(source: Source, lo: int, lower: int, hi: int) -> int | None:
    """The earliest sentence start in ``[lower, hi)``, from boundaries that begin at or
    after ``lo``."""
    boundary = SENTENCE_BOUNDARY[source.plain]
    while (m := boundary.search(source.text, lo, hi)) is not None:
        lo = m.end()
        if lo >= hi:
            break
        if lo >= lower:
            return lo
    return None
