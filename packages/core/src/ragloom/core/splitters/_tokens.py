"""Exact token counts where the packing's estimates are not enough.

Splitters pack units by adding up per-unit token counts from one batch call per level.
The sum is exact when the tokenizer ``splits_on_whitespace`` and close otherwise; the
size of an overlap is always an estimate. :func:`verify` makes every size exact with
one more batch call (overlaps only, or whole segments when sums cannot be trusted) and
repairs the rare segment over a limit, so that the size invariant always holds.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator
from functools import partial

from ragloom.core.splitters._patterns import SPACE_RUN, WORD_START
from ragloom.core.splitters._text import Span, next_non_space, strip_end
from ragloom.core.tokenizer import Tokenizer, count_tokens_batch

__all__ = [
    "Counter",
    "largest_fit",
    "verify",
    "exact_split",
    "counts",
    "PieceCounter",
]

Counter = Callable[[str], int]


def largest_fit(
    size: Callable[[int], int], start: int, lo: int, hi: int, limit: int, guess: int
) -> int | None:
    """The largest ``x`` in ``[lo, hi]`` with ``size(x) <= limit``, where ``size(x)`` is the
    count of ``text[start:x]``, or ``None`` when not even ``lo`` fits: gallop from
    ``guess`` to bracket it, then bisect."""

    def fits(x: int) -> bool:
        return size(x) <= limit

    x = min(max(guess, lo), hi)
    if fits(x):
        good, bad, step = x, hi + 1, max(1, x - start)
        while good < hi:
            x = min(hi, good + step)
            if not fits(x):
                bad = x
                break
            good, step = x, 2 * step
    else:
        good, bad = lo - 1, x
        while bad > lo:
            x = max(lo, start + (bad - start) // 2)
            if fits(x):
                good = x
                break
            bad = x
    while bad - good > 1:
        x = (good + bad) // 2
        if fits(x):
            good = x
        else:
            bad = x
    return good if good >= lo else None


def verify(
    tokenizer: Tokenizer, text: str, spans: list[Span], limit: int, overlap: int
) -> list[Span]:
    """``spans`` with every size made exact and every segment over a limit repaired.

    Segments whose size is an exact sum of unit counts (``head >= 0``) only have their
    overlap counted; the others are counted whole; all in one batch call. A segment
    over ``limit``, or whose overlap with the previous one is over ``overlap``, gives
    up overlap first: in a few rounds that each recount all such segments in one batch
    call, then word by word. If it is still too big, it is re-split exactly on word
    boundaries, without overlap. (A segment following a re-split one also gives up
    overlap until it starts after the last piece.)
    """
    n = len(spans)
    starts, ends = [s for s, *_ in spans], [e for _, e, *_ in spans]
    sizes, shared = [size for _, _, size, _ in spans], [0] * n
    untrusted = [k for k in range(n) if spans[k][3] < 0]
    _recount(tokenizer, text, starts, ends, untrusted, sizes, shared, others=range(1, n))
    for k, (_, _, size, head) in enumerate(spans):
        if head >= 0:
            sizes[k] = size - head + shared[k]
    todo = list(range(n))
    for round_ in range(_BATCH_ROUNDS + 1):
        todo = [
            k
            for k in todo
            if k and starts[k] < ends[k - 1] and (sizes[k] > limit or shared[k] > overlap)
        ]
        if not todo or round_ == _BATCH_ROUNDS:
            break
        for k in todo:
            excess = max(sizes[k] - limit, shared[k] - overlap)
            chars = -(-(ends[k - 1] - starts[k]) * excess // max(shared[k], 1))
            starts[k] = _word_start(text, starts[k] + chars, ends[k - 1], ends[k])
        _recount(tokenizer, text, starts, ends, todo, sizes, shared)
    count = tokenizer.count_tokens
    out: list[Span] = []
    for k in range(n):
        s, e, size, size_overlap = starts[k], ends[k], sizes[k], shared[k]
        floor = out[-1][0] if out else -1  # after a repair, the previous piece starts here
        prev_end = out[-1][1] if out else s
        while s < prev_end and (size > limit or size_overlap > overlap or s <= floor):
            s = _word_start(text, s + 1, prev_end, e)
            size = count(text[s:e])
            size_overlap = count(text[s:prev_end]) if s < prev_end else 0
        if size <= limit:
            out.append((s, e, size, 0))
        else:
            out.extend(exact_split(count, text, s, e, limit, (e - s) / max(size, 1)))
    return out


# Rounds of batched overlap shrinking before falling back to one count per word.
_BATCH_ROUNDS = 3


def _recount(
    tokenizer: Tokenizer,
    text: str,
    starts: list[int],
    ends: list[int],
    todo: Iterable[int],
    sizes: list[int],
    shared: list[int],
    others: Iterable[int] = (),
) -> None:
    """Count segments ``todo`` and the overlaps of ``todo`` and ``others`` with the
    segments before them, in one batch call."""
    todo = list(todo)
    overlapping = sorted({k for k in (*todo, *others) if k and starts[k] < ends[k - 1]})
    texts = [text[starts[k] : ends[k]] for k in todo]
    texts += [text[starts[k] : ends[k - 1]] for k in overlapping]
    found = list(counts(tokenizer, texts, additive=False))
    for k, size in zip(todo, found, strict=False):
        sizes[k] = size
    for k in (*todo, *others):
        shared[k] = 0
    for k, size in zip(overlapping, found[len(todo) :], strict=True):
        shared[k] = size


def _word_start(text: str, pos: int, prev_end: int, end: int) -> int:
    """The first word start at or after ``pos`` and before ``prev_end`` (overlap that
    remains), else the first non-whitespace at or after ``prev_end`` (no overlap)."""
    m = WORD_START.search(text, pos - 1, prev_end)
    return m.start() + 1 if m is not None else next_non_space(text, prev_end, end)


def exact_split(
    count: Counter, text: str, lo: int, hi: int, limit: int, chars_per_token: float
) -> list[Span]:
    """``text[lo:hi]`` cut greedily into pieces of at most ``limit`` tokens, counted
    exactly, preferring word boundaries; a lone character over the limit is kept whole."""
    out: list[Span] = []
    pos = lo
    while pos < hi:
        guess = pos + int(limit * chars_per_token)
        x = largest_fit(partial(_count_to, count, text, pos), pos, pos + 1, hi, limit, guess)
        if x is None:
            x = pos + 1
        elif x < hi:
            x = _word_cut(count, text, pos, x, limit)
        end = strip_end(text, pos, x)
        out.append((pos, end, count(text[pos:end]), 0))
        pos = next_non_space(text, x, hi)
    return out


def _count_to(count: Counter, text: str, start: int, end: int) -> int:
    return count(text[start:end])


def _word_cut(count: Counter, text: str, lo: int, x: int, limit: int) -> int:
    """``x`` moved back to the start of the last whitespace before it, if that still fits."""
    last = None
    for last in SPACE_RUN.finditer(text, lo, x):  # noqa: B007 - only the last run matters
        pass
    if last is None or last.start() <= lo or count(text[lo : last.start()]) > limit:
        return x
    return last.start()


class PieceCounter:
    """Exact counts of spans of one long region ``text[lo:hi]``, for probing many ends
    of a segment: the pieces between the tokenizer's ``cuts`` (where counts add up) are
    counted once each, a block at a time, so a span costs at most two counts of partial
    pieces instead of a count of the whole span. Without cuts, spans are counted whole.
    """

    def __init__(self, tokenizer: Tokenizer, text: str, lo: int, hi: int) -> None:
        self._tokenizer, self._text, self._hi = tokenizer, text, hi
        self._cuts_of: Callable[[str, int, int], list[int]] | None = getattr(
            tokenizer, "cuts", None
        )
        self._cuts = [lo]  # lo (no span starts before it), then the cuts found so far
        self._sums = [0]  # the count of text[lo:c] for each c in _cuts (lo: see forget)
        self._scanned = lo  # every cut before this is in _cuts
        self._head = (-1, 0)  # the last start's partial piece: (start, count)

    def count(self, start: int, end: int) -> int:
        """The count of ``text[start:end]`` (``start`` not before the last ``forget``)."""
        text, count = self._text, self._tokenizer.count_tokens
        if self._cuts_of is None:
            return count(text[start:end])
        if end > self._scanned:
            self._scan(end)
        cuts = self._cuts
        i = bisect_left(cuts, start)  # the first cut at or after start
        j = bisect_right(cuts, end) - 1  # the last cut at or before end
        if j < i:
            return count(text[start:end])
        if cuts[i] == start:
            head = 0
        elif self._head[0] == start:
            head = self._head[1]
        else:
            head = count(text[start : cuts[i]])
            self._head = (start, head)
        tail = count(text[cuts[j] : end]) if end > cuts[j] else 0
        return head + self._sums[j] - self._sums[i] + tail

    def forget(self, before: int) -> None:
        """Drop what only spans starting before ``before`` need (bounded memory)."""
        k = bisect_right(self._cuts, before) - 1
        if k >= _FORGET:
            del self._cuts[:k], self._sums[:k]

    def _scan(self, end: int) -> None:
        """Find the cuts before ``end`` (and a block beyond) and count the new pieces."""
        assert self._cuts_of is not None
        stop = min(self._hi, max(end, self._scanned + _SCAN))
        found, last = [], self._cuts[-1]
        for p in self._cuts_of(self._text, self._scanned - 1, stop):
            if p - last >= _PIECE:  # an encoding costs as much as ~10-100 characters
                found.append(p)
                last = p
        if found:
            text, cuts = self._text, self._cuts
            pieces = [text[a:b] for a, b in zip([cuts[-1], *found[:-1]], found, strict=True)]
            total = self._sums[-1]
            for p, size in zip(found, count_tokens_batch(self._tokenizer, pieces), strict=True):
                total += size
                cuts.append(p)
                self._sums.append(total)
        self._scanned = stop


# Characters scanned for cuts (and their pieces counted) at a time by ``PieceCounter``,
# the shortest piece it counts, and the cuts it keeps before forgetting those behind.
_SCAN = 1 << 12
_PIECE = 32
_FORGET = 1 << 10


def counts(tokenizer: Tokenizer, pieces: list[str], additive: bool) -> Iterator[int]:
    """The token counts of ``pieces``, at most ``_PIECES`` pieces or about ``_CHARS``
    characters per call: an encoding costs a tokenizer far more memory than its text.
    When counts add up across whitespace, a longer piece is counted in slices cut at it."""
    batch: list[str] = []
    size = 0
    for piece in pieces:
        if additive and len(piece) > _CHARS:
            if batch:
                yield from count_tokens_batch(tokenizer, batch)
            batch, size = [], 0
            yield sum(sum(count_tokens_batch(tokenizer, [s])) for s in _slices(piece))
            continue
        batch.append(piece)
        size += len(piece)
        if len(batch) >= _PIECES or size >= _CHARS:
            yield from count_tokens_batch(tokenizer, batch)
            batch, size = [], 0
    if batch:
        yield from count_tokens_batch(tokenizer, batch)


def _slices(text: str) -> Iterator[str]:
    """``text`` in slices of about ``_CHARS`` characters, each cut just after whitespace."""
    start = 0
    while (m := _SPACE.search(text, start + _CHARS)) is not None:
        yield text[start : m.end()]
        start = m.end()
    yield text[start:]


_SPACE = re.compile(r"\s")


# Pieces and characters per tokenizer call in ``counts``.
_PIECES = 1 << 12
_CHARS = 1 << 16
