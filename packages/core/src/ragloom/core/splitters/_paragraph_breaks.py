"""Paragraph units of a large region found with numpy instead of one regex match each.

``units(PARAGRAPH_BREAK[1], text, lo, hi)`` builds a match object per paragraph break;
on text of short paragraphs (a few hundred thousand breaks in 20 MB) that is most of a
split's time. Most texts separate paragraphs by exactly ``"\\n\\n"`` between non-space
characters and break lines by a lone ``"\\n"`` between non-space characters. For such a
region the units are known from the positions of its ``"\\n"`` alone: each ``"\\n\\n"``
ends one unit and starts the next, a lone ``"\\n"`` is inside a unit. The breaks' whole
whitespace runs are then just those two characters, so this is exactly what the regex
(``\\n[^\\S\\n]*+\\n\\s*+``, then trimming) finds. Any other line break (one next to
other whitespace, three in a row, ``"\\r\\n"``) makes :func:`paragraph_units` return
``None`` and the caller scans with the regex.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["paragraph_units"]

_MIN_REGION = 1 << 14  # below this the regex is as fast
_CHUNK = 1 << 20  # characters encoded at a time: bounded extra memory
_NEWLINE = 10
_LATIN1_SPACE = np.array([chr(c).isspace() for c in range(256)])
_WIDE_SPACES = np.array([c for c in range(256, 0x3001) if chr(c).isspace()], dtype=np.uint32)


def paragraph_units(text: str, lo: int, hi: int) -> tuple[list[int], list[int]] | None:
    """Starts and ends of the paragraphs of the trimmed region ``[lo, hi)`` of a text
    whose line breaks are ``"\\n"``, or ``None`` when a line break is not a lone
    ``"\\n"`` or a ``"\\n\\n"`` between non-space characters (or the region is small)."""
    if hi - lo < _MIN_REGION or text[lo].isspace() or text[hi - 1].isspace():
        return None
    pairs: list[npt.NDArray[np.intp]] = []
    for start in range(lo, hi, _CHUNK):
        # Context: one character before the chunk and two after it, so that each "\n"
        # in it sees its neighbours and a pair's first "\n" the character after the pair.
        a, b = max(start - 1, lo), min(start + _CHUNK + 2, hi)
        found = _pairs(text[a:b], a, start, min(start + _CHUNK, hi))
        if found is None:
            return None
        pairs.append(found)
    breaks = np.concatenate(pairs)
    starts = [lo]
    starts += (breaks + 2).tolist()
    ends = breaks.tolist()
    ends.append(hi)
    return starts, ends


def _pairs(chunk: str, offset: int, first: int, stop: int) -> npt.NDArray[np.intp] | None:
    """Positions (in the text) of the ``"\n\n"`` starting in ``[first, stop)``, read
    from ``chunk`` (the text from ``offset`` on, with the context characters), or
    ``None`` if a line break there is not a lone ``"\n"`` or a ``"\n\n"`` between
    non-space characters. The region is trimmed, so no "\n" is its first or last
    character, and a "\n\n" ends at least one character before it does."""
    codes: npt.NDArray[np.uint8] | npt.NDArray[np.uint32]
    if chunk.isascii():
        codes = np.frombuffer(chunk.encode("ascii"), dtype=np.uint8)
    else:
        codes = np.frombuffer(chunk.encode("utf-32-le"), dtype=np.uint32)
    at = np.flatnonzero(codes == _NEWLINE)
    at = at[(at >= first - offset) & (at < stop - offset)]
    before, after = codes[at - 1], codes[at + 1]
    second = before == _NEWLINE  # the second "\n" of a pair (its first is checked)
    opening = after == _NEWLINE  # the first "\n" of a pair
    if (second & opening).any():
        return None  # three in a row
    # A lone "\n" must touch non-space characters on both sides, a pair's first "\n"
    # before it and after the pair.
    beyond = after.copy()
    beyond[opening] = codes[at[opening] + 2]
    checked = ~second
    if _any_space(before[checked]) or _any_space(beyond[checked]):
        return None
    pair_at: npt.NDArray[np.intp] = at[opening] + offset
    return pair_at


def _any_space(codes: npt.NDArray[np.uint8] | npt.NDArray[np.uint32]) -> bool:
    """Whether any of ``codes`` is a whitespace character (``str.isspace``)."""
    narrow = codes < 256
    if _LATIN1_SPACE[codes[narrow]].any():
        return True
    wide = codes[~narrow]
    return bool(wide.size and np.isin(wide, _WIDE_SPACES).any())
