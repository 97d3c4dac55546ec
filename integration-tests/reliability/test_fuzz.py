"""Hypothesis fuzzing of the text-facing entry points: parse_filter, the splitters, Metadata.

Each accepts anything and either works by its contract or raises a ``RagloomError``:
never a raw exception, never a hang (example counts keep the whole file to a few seconds).
"""

from __future__ import annotations

import math
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ragloom.core import Document, InvalidFilterError, Metadata, RagloomError, parse_filter
from ragloom.core.filters import Filter, metadata_key
from ragloom.core.splitters import (
    DocumentByCharacterSplitter,
    DocumentByLineSplitter,
    DocumentByParagraphSplitter,
    DocumentBySentenceSplitter,
    DocumentByWordSplitter,
    RecursiveDocumentSplitter,
)

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TOKENS = [
    "a", "b.c", "`x y`", "`", "==", "!=", ">", ">=", "<", "<=", "in", "not", "and", "or",
    "contains", "(", ")", ",", "'s'", '"t"', "'", '"', "1", "-2.5e3", "1e999", "true", "false",
    "uuid", "uuid('11111111-1111-4111-8111-111111111111')", "\\", "\\u12", "\x00", "é", " ",
]  # fmt: skip


@FAST
@given(st.text())
def test_parse_filter_on_any_text(text: str) -> None:
    try:
        result = parse_filter(text)
    except InvalidFilterError:
        return
    assert isinstance(result, Filter)


@FAST
@given(st.lists(st.sampled_from(TOKENS), max_size=25).map(" ".join))
def test_parse_filter_on_token_soup(text: str) -> None:
    try:
        result = parse_filter(text)
    except InvalidFilterError:
        return
    assert parse_filter(str(result)) == result  # what it writes back reads the same


@pytest.mark.parametrize(
    "text",
    [
        "(" * 100_000 + "a == 1",
        "(" * 100_000 + "a == 1" + ")" * 100_000,
        "not " * 100_000 + "a == 1",
    ],
)
def test_parse_filter_refuses_deep_nesting(text: str) -> None:
    """Nesting past any recursion limit is an InvalidFilterError, not a RecursionError."""
    with pytest.raises(InvalidFilterError, match="nested deeper than"):
        parse_filter(text)


def test_parse_filter_reads_a_long_flat_filter() -> None:
    assert isinstance(parse_filter(" and ".join(["a == 1"] * 50_000)), Filter)


SCALARS = st.one_of(
    st.text(max_size=20),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.uuids(),
)
LEAF_VALUES = st.one_of(
    st.text(max_size=10), st.integers(-(2**70), 2**70), st.floats(allow_nan=False), st.uuids()
)


@st.composite
def filters(draw: st.DrawFn, depth: int = 0) -> Filter:
    if depth < 3 and draw(st.booleans()):
        left, right = draw(filters(depth + 1)), draw(filters(depth + 1))
        return draw(st.sampled_from([left & right, left | right, ~left]))
    key = metadata_key(draw(st.text(min_size=1, max_size=8)))
    value = draw(LEAF_VALUES)
    assume(not (isinstance(value, float) and math.isinf(value)))
    kind = type(value)
    operations: list[Any] = [key.is_equal_to, key.is_not_equal_to]
    if kind is not uuid.UUID:
        operations += [key.is_greater_than, key.is_less_than_or_equal_to]
    if kind is str:
        operations.append(key.contains_string)
    return draw(st.sampled_from(operations))(value)  # type: ignore[no-any-return]


@FAST
@given(filters())
def test_every_filter_round_trips_through_its_text(condition: Filter) -> None:
    assert parse_filter(str(condition)) == condition


@FAST
@given(
    st.dictionaries(st.one_of(st.text(max_size=8), st.integers(), st.none()), SCALARS | st.none())
)
def test_metadata_accepts_or_refuses_cleanly(data: dict[Any, Any]) -> None:
    try:
        metadata = Metadata(data)
    except RagloomError:
        return
    assert metadata.to_dict() == data or any(
        isinstance(v, float) and math.isnan(v) for v in data.values()
    )
    copy = metadata.copy()
    for key in list(copy):
        copy.remove(key)
    assert len(copy) == 0
    assert len(metadata) == len(data)


SPLITTERS = [
    DocumentByCharacterSplitter,
    DocumentByLineSplitter,
    DocumentByParagraphSplitter,
    DocumentBySentenceSplitter,
    DocumentByWordSplitter,
    RecursiveDocumentSplitter,
]
TEXT = st.lists(
    st.one_of(
        st.sampled_from(["\n", "\n\n", " ", ". ", "\r\n", "\t", "\u2028", "\x00", "!?"]),
        st.text(max_size=12),
    ),
    max_size=60,
).map("".join)


@settings(max_examples=120, deadline=None)
@given(
    splitter=st.sampled_from(SPLITTERS),
    text=TEXT,
    size=st.integers(-1, 60),
    overlap=st.integers(-1, 30),
)
def test_splitters_on_any_text_and_sizes(splitter: Any, text: str, size: int, overlap: int) -> None:
    try:
        instance = splitter(size, overlap)
    except RagloomError:
        return
    try:
        segments = instance.split(Document(text))
    except RagloomError:
        return
    for segment in segments:
        assert segment.text, "an empty segment"
        assert len(segment.text) <= size, (len(segment.text), size)
        assert segment.text in text or segment.text.strip() in text
