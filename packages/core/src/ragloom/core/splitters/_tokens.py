"""Exact token counting for the paths where additive estimates are not enough.

Splitters pack units by adding up per-unit token counts (one batch call), which is
exact for tokenizers whose tokens never cross whitespace and close for the others.
:func:`verify` then counts every produced segment and overlap once, in one batch, and
repairs the rare segment that is over the limit, so the size invariant always holds.
"""

from __future__ import annotations

from collections.abc import Callable

from ragloom.core.splitters._patterns import SPACE_RUN, WORD_START
from ragloom.core.splitters._text import Span, next_non_space, strip_end
from ragloom.core.tokenizer import Tokenizer, count_tokens_batch

Counter = Callable[[str], int]


def largest_fit(
    count: Counter, text: str, start: int, lo: int, hi: int, limit: int, guess: int
) -> int | None:
    """The largest ``x`` in ``[lo, hi]`` with ``count(text[start:x]) <= limit``, or ``None``
    when not even ``lo`` fits: gallop from ``guess`` to bracket it, then bisect."""

    def fits(x: int) -> bool:
        return count(text[start:x]) <= limit

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
    """``spans`` with every segment recounted and, where needed, repaired.

    A segment over ``limit``, or whose overlap with the previous one is over
    ``overlap``, first gives up overlap (word by word); if it is still too big, it is
    re-split exactly on word boundaries, without overlap. (A segment following a
    re-split one also gives up overlap until it starts after the last piece.)
    """
    n = len(spans)
    shared = [k for k in range(1, n) if spans[k][0] < spans[k - 1][1]]
    texts = [text[s:e] for s, e, _ in spans]
    texts += [text[spans[k][0] : spans[k - 1][1]] for k in shared]
    counts = count_tokens_batch(tokenizer, texts)
    overlaps = dict(zip(shared, counts[n:], strict=True))
    count = tokenizer.count_tokens
    out: list[Span] = []
    for k, (s, e, _) in enumerate(spans):
        size, size_overlap = counts[k], overlaps.get(k, 0)
        floor = out[-1][0] if out else -1  # after a repair, the previous piece starts here
        if size <= limit and size_overlap <= overlap and s > floor:
            out.append((s, e, size))
            continue
        prev_end = out[-1][1] if out else s
        while s < prev_end and (size > limit or size_overlap > overlap or s <= floor):
            m = WORD_START.search(text, s, prev_end)
            s = m.start() + 1 if m is not None else next_non_space(text, prev_end, e)
            size = count(text[s:e])
            size_overlap = count(text[s:prev_end]) if s < prev_end else 0
        if size <= limit:
            out.append((s, e, size))
        else:
            out.extend(exact_split(count, text, s, e, limit, (e - s) / max(size, 1)))
    return out


def exact_split(
    count: Counter, text: str, lo: int, hi: int, limit: int, chars_per_token: float
) -> list[Span]:
    """``text[lo:hi]`` cut greedily into pieces of at most ``limit`` tokens, counted
    exactly, preferring word boundaries; a lone character over the limit is kept whole."""
    out: list[Span] = []
    pos = lo
    while pos < hi:
        guess = pos + int(limit * chars_per_token)
        x = largest_fit(count, text, pos, pos + 1, hi, limit, guess)
        if x is None:
            x = pos + 1
        elif x < hi:
            x = _word_cut(count, text, pos, x, limit)
        end = strip_end(text, pos, x)
        out.append((pos, end, count(text[pos:end])))
        pos = next_non_space(text, x, hi)
    return out


def _word_cut(count: Counter, text: str, lo: int, x: int, limit: int) -> int:
    """``x`` moved back to the start of the last whitespace before it, if that still fits."""
    last = None
    for last in SPACE_RUN.finditer(text, lo, x):  # noqa: B007 - only the last run matters
        pass
    if last is None or last.start() <= lo or count(text[lo : last.start()]) > limit:
        return x
    return last.start()
