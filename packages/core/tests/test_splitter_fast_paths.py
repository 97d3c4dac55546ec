"""The splitters' fast paths find exactly what the plain regex scans find."""

from __future__ import annotations

import gc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.core import (
    Document,
    DocumentByRegexSplitter,
    DocumentSplitError,
    RecursiveDocumentSplitter,
)
from ragloom.core.splitters._patterns import PARAGRAPH_BREAK, SENTENCE_BOUNDARY
from ragloom.core.splitters._text import Source, sentence_units, trimmed, units

PIECES = [
    "a", "Word", "mr", "Dr", "etc", "no", "J", "x", "3", "14", "東京", "é",
    ".", ".", "?", "!", "…", "...", "?!", "。", "\uff01", "؟", "।",
    " ", " ", "  ", "\t", "\n", "\r\n", "\n\n", "\r", "\x0b", "\x0c", "\x85", "\u2028",
    '"', "'", ")", "»", "」", "(", "“",
]  # fmt: skip

texts = st.lists(st.sampled_from(PIECES), max_size=60).map("".join)


@settings(max_examples=400, deadline=None)
@given(texts, st.data())
def test_sentence_units_match_the_regex_scan(text: str, data: st.DataObject) -> None:
    lo = data.draw(st.integers(0, len(text)))
    hi = data.draw(st.integers(lo, len(text)))
    source = Source.of(text)
    expected = units(SENTENCE_BOUNDARY[source.plain], text, lo, hi, group=1)
    assert sentence_units(source, lo, hi) == expected


def _slow_trimmed(text: str, starts: list[int], ends: list[int]) -> tuple[list[int], list[int]]:
    out_starts, out_ends = [], []
    for s, e in zip(starts, ends, strict=True):
        piece = text[s:e]
        if piece.strip():
            s += len(piece) - len(piece.lstrip())
            out_starts.append(s)
            out_ends.append(s + len(piece.strip()))
    return out_starts, out_ends


@settings(max_examples=300, deadline=None)
@given(texts)
def test_units_are_trimmed_pieces(text: str) -> None:
    source = Source.of(text)
    pattern = PARAGRAPH_BREAK[source.plain]
    cuts = [m.span() for m in pattern.finditer(text)]
    starts = [0, *(b for _, b in cuts)]
    ends = [*(a for a, _ in cuts), len(text)]
    if cuts:
        assert units(pattern, text, 0, len(text)) == _slow_trimmed(text, starts, ends)
    assert trimmed(text, list(starts), list(ends)) == _slow_trimmed(text, starts, ends)


def test_split_leaves_the_garbage_collector_as_it_found_it() -> None:
    splitter = RecursiveDocumentSplitter(10, 2)
    assert gc.isenabled()
    assert splitter.split(Document("One two three. Four five six seven."))
    assert gc.isenabled()
    failing = DocumentByRegexSplitter(r"\s+", 3, sub_splitter=None)
    failing.sub_splitter = None  # a word too long and nothing to split it: an error
    with pytest.raises(DocumentSplitError):
        failing.split(Document("abcdefgh"))
    assert gc.isenabled()
    gc.disable()
    try:
        splitter.split(Document("One two three. Four five six seven."))
        assert not gc.isenabled()
    finally:
        gc.enable()
