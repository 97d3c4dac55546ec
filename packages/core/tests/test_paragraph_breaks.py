"""The numpy paragraph finder gives exactly the regex's units, or declines."""

from __future__ import annotations

import random

import pytest

from ragloom.core import Document, document_splitters
from ragloom.core.splitters import _paragraph_breaks
from ragloom.core.splitters._paragraph_breaks import paragraph_units
from ragloom.core.splitters._patterns import PARAGRAPH_BREAK
from ragloom.core.splitters._text import Source, next_non_space, strip_end, units

# Pieces that make every kind of line break: lone, pairs, runs, with spaces around,
# CRLF, wide and no-break spaces, non-ASCII letters.
PIECES = ["a", "b", "Word.", " ", "\n", "\n\n", "\t", "\r\n", "é", "\u3000", "\xa0", "\n \n"]
PIECES += ["\n\n\n", "\u2003", "z\n\nZ"]


def _trimmed(text: str) -> tuple[int, int]:
    lo = next_non_space(text, 0, len(text))
    return lo, strip_end(text, lo, len(text))


def test_random_texts_match_the_regex_units_in_tiny_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Chunks of 7 characters put pairs and their context across every chunk edge."""
    monkeypatch.setattr(_paragraph_breaks, "_MIN_REGION", 1)
    monkeypatch.setattr(_paragraph_breaks, "_CHUNK", 7)
    rng = random.Random(37)
    taken = declined = 0
    for _ in range(20_000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 30)))
        lo, hi = _trimmed(text)
        if lo == hi or not Source.of(text).plain:
            continue
        found = paragraph_units(text, lo, hi)
        if found is None:
            declined += 1
            continue
        taken += 1
        assert found == units(PARAGRAPH_BREAK[1], text, lo, hi), repr(text)
    assert taken > 2_000  # both outcomes are exercised
    assert declined > 2_000


def test_a_region_not_trimmed_is_declined(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_paragraph_breaks, "_MIN_REGION", 1)
    assert paragraph_units(" a\n\nb", 0, 5) is None
    assert paragraph_units("a\n\nb ", 0, 5) is None
    assert paragraph_units("a\n\nb", 0, 4) == ([0, 3], [1, 4])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_split_is_unchanged_by_the_fast_path(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """Short paragraphs with lone line breaks, split with overlap: the same segments as
    with the regex alone (the fast path switched off by its size threshold)."""
    rng = random.Random(seed)
    words = ["alpha", "beta", "Gamma.", "delta", "über", "e.g.", "Dr.", "x", "Why?"]
    paragraphs = []
    for _ in range(3000):
        lines = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 12)))]
        if rng.random() < 0.2:
            lines.append(" ".join(rng.choice(words) for _ in range(rng.randint(1, 8))))
        paragraphs.append("\n".join(lines))
    text = "\n\n".join(paragraphs)
    lo, hi = _trimmed(text)
    assert paragraph_units(text, lo, hi) is not None  # the fast path is taken
    document = Document(text, {"source": "t"})
    fast = [
        (s.text, dict(s.metadata)) for s in document_splitters.recursive(300, 60).split(document)
    ]
    monkeypatch.setattr(_paragraph_breaks, "_MIN_REGION", len(text) + 1)
    assert paragraph_units(text, lo, hi) is None
    slow = [
        (s.text, dict(s.metadata)) for s in document_splitters.recursive(300, 60).split(document)
    ]
    assert fast == slow
    assert len(fast) > 100
