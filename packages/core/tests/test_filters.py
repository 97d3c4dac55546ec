"""Filter semantics: truth table, numbers, UUIDs, NaN, errors, and mask == test (hypothesis)."""

from __future__ import annotations

import dataclasses
import enum
import math
import uuid
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragloom.core import (
    And,
    ContainsString,
    Filter,
    InvalidFilterError,
    IsEqualTo,
    IsGreaterThan,
    IsGreaterThanOrEqualTo,
    IsIn,
    IsLessThan,
    IsLessThanOrEqualTo,
    IsNotEqualTo,
    IsNotIn,
    Metadata,
    Not,
    Or,
    and_,
    metadata_key,
    not_,
    or_,
)
from ragloom.core.metadata_table import MetadataTable

U1 = uuid.UUID("1111aaaa-1111-4111-8111-11111111abcd")
U2 = uuid.UUID("22222222-2222-4222-8222-222222222222")


def evaluate(f: Filter, row: Mapping[str, Any]) -> bool:
    """``f`` on ``row`` through every path (dict, Metadata, table mask), checked to agree."""
    expected = f.test(row)
    assert f.test(Metadata(row)) is expected
    table = MetadataTable()
    table.append([row, {"unrelated": 1}, row])
    mask = f.mask(table)
    assert mask.dtype == bool
    assert mask.tolist() == [expected, f.test({"unrelated": 1}), expected]
    return expected


def raises_everywhere(f: Filter, row: Mapping[str, Any], match: str | None = None) -> None:
    with pytest.raises(InvalidFilterError, match=match):
        f.test(row)
    table = MetadataTable()
    table.append([{}, row])
    with pytest.raises(InvalidFilterError, match=match):
        f.mask(table)


# operation, stored value, a filter value that matches, one that does not, result if missing
TRUTH_TABLE = [
    ("is_equal_to", "beta", "beta", "alpha", False),
    ("is_not_equal_to", "beta", "alpha", "beta", True),
    ("is_greater_than", "beta", "alpha", "gamma", False),
    ("is_greater_than_or_equal_to", "beta", "beta", "gamma", False),
    ("is_less_than", "beta", "gamma", "alpha", False),
    ("is_less_than_or_equal_to", "beta", "beta", "alpha", False),
    ("is_in", "beta", ["alpha", "beta"], ["alpha"], False),
    ("is_not_in", "beta", ["alpha"], ["alpha", "beta"], True),
    ("contains_string", "beta", "et", "Et", False),
    ("is_equal_to", 5, 5, 6, False),
    ("is_not_equal_to", 5, 6, 5, True),
    ("is_greater_than", 5, 4, 5, False),
    ("is_greater_than_or_equal_to", 5, 5, 6, False),
    ("is_less_than", 5, 6, 5, False),
    ("is_less_than_or_equal_to", 5, 5, 4, False),
    ("is_in", 5, [4, 5], [4], False),
    ("is_not_in", 5, [4], [4, 5], True),
    ("is_equal_to", 2.5, 2.5, 2.25, False),
    ("is_not_equal_to", 2.5, 2.25, 2.5, True),
    ("is_greater_than", 2.5, 2.25, 2.5, False),
    ("is_greater_than_or_equal_to", 2.5, 2.5, 2.75, False),
    ("is_less_than", 2.5, 2.75, 2.5, False),
    ("is_less_than_or_equal_to", 2.5, 2.5, 2.25, False),
    ("is_in", 2.5, [1.5, 2.5], [1.5], False),
    ("is_not_in", 2.5, [1.5], [2.5], True),
    ("is_equal_to", True, True, False, False),
    ("is_not_equal_to", True, False, True, True),
    ("is_in", True, [True], [False], False),
    ("is_not_in", True, [False], [True, False], True),
    ("is_equal_to", U1, U1, U2, False),
    ("is_not_equal_to", U1, U2, U1, True),
    ("is_in", U1, [U2, U1], [U2], False),
    ("is_not_in", U1, [U2], [U1], True),
]


@pytest.mark.parametrize(
    ("operation", "stored", "matching", "other", "if_missing"),
    TRUTH_TABLE,
    ids=[f"{row[0]}-{type(row[1]).__name__}" for row in TRUTH_TABLE],
)
def test_truth_table(
    operation: str, stored: Any, matching: Any, other: Any, if_missing: bool
) -> None:
    build = getattr(metadata_key("k"), operation)
    assert evaluate(build(matching), {"k": stored}) is True
    assert evaluate(build(other), {"k": stored}) is False
    assert evaluate(build(matching), {"other": stored}) is if_missing
    assert evaluate(build(matching), {}) is if_missing
    assert evaluate(~build(matching), {"k": stored}) is False
    assert evaluate(~build(matching), {}) is (not if_missing)


@pytest.mark.parametrize(
    "operation",
    [
        "is_greater_than",
        "is_greater_than_or_equal_to",
        "is_less_than",
        "is_less_than_or_equal_to",
    ],
)
@pytest.mark.parametrize("value", [True, U1])
def test_ordering_rejects_bool_and_uuid_when_built(operation: str, value: Any) -> None:
    with pytest.raises(InvalidFilterError, match=operation):
        getattr(metadata_key("k"), operation)(value)


def test_int_and_float_compare_by_exact_value() -> None:
    k = metadata_key("k")
    assert evaluate(k.is_equal_to(1), {"k": 1.0})
    assert evaluate(k.is_equal_to(1.0), {"k": 1})
    assert evaluate(k.is_equal_to(0), {"k": -0.0})
    assert evaluate(k.is_in([2.0, 7]), {"k": 2})
    assert evaluate(k.is_in([2, 7]), {"k": 2.0})
    assert not evaluate(k.is_equal_to(2.5), {"k": 2})
    assert evaluate(k.is_greater_than(1.5), {"k": 2})
    assert not evaluate(k.is_greater_than(2.5), {"k": 2})
    assert evaluate(k.is_less_than_or_equal_to(2.5), {"k": 2})
    assert evaluate(k.is_greater_than_or_equal_to(2), {"k": 2.0})
    # beyond 2**53 a float no longer represents every int: comparisons stay exact
    assert not evaluate(k.is_equal_to(2**53 + 1), {"k": float(2**53)})
    assert evaluate(k.is_less_than(2**53 + 1), {"k": float(2**53)})
    assert evaluate(k.is_greater_than(float(2**53)), {"k": 2**53 + 1})
    assert not evaluate(k.is_in([2**53 + 1]), {"k": float(2**53)})
    # beyond int64 and beyond float range
    assert evaluate(k.is_equal_to(2**70), {"k": 2**70})
    assert evaluate(k.is_greater_than(2**63 - 1), {"k": 2**63})
    assert evaluate(k.is_less_than(2**64), {"k": 2**63 - 1})
    assert evaluate(k.is_less_than(10**400), {"k": 1e308})
    assert evaluate(k.is_greater_than(-(10**400)), {"k": -1e308})
    assert evaluate(k.is_equal_to(float(2**70)), {"k": 2**70})
    assert evaluate(k.is_in([2**70, 3]), {"k": 2**70})


def test_mixed_int_and_float_column() -> None:
    rows: list[dict[str, Any]] = [{"k": 1}, {"k": 1.0}, {"k": 1.5}, {"k": 2**64}, {}, {"k": 2}]
    table = MetadataTable()
    table.append(rows)
    for f in [
        metadata_key("k").is_equal_to(1),
        metadata_key("k").is_greater_than(1.25),
        metadata_key("k").is_not_in([1, 2.0]),
        metadata_key("k").is_less_than_or_equal_to(2**64),
    ]:
        assert f.mask(table).tolist() == [f.test(row) for row in rows]
    assert metadata_key("k").is_equal_to(1).mask(table).tolist() == [1, 1, 0, 0, 0, 0]


def test_bool_is_not_a_number() -> None:
    k = metadata_key("k")
    raises_everywhere(k.is_equal_to(1), {"k": True}, "stored value True")
    raises_everywhere(k.is_equal_to(True), {"k": 1}, "filter value True")
    raises_everywhere(k.is_in([0, 1]), {"k": False})
    raises_everywhere(k.is_greater_than(0), {"k": True})
    with pytest.raises(InvalidFilterError, match="one type"):
        k.is_in([True, 1])


def test_uuid_filter_value_matches_its_canonical_string() -> None:
    k = metadata_key("k")
    assert evaluate(k.is_equal_to(U1), {"k": str(U1)})
    assert evaluate(k.is_in([U2, U1]), {"k": str(U1)})
    assert not evaluate(k.is_not_in([U1]), {"k": str(U1)})
    assert not evaluate(k.is_equal_to(U1), {"k": str(U1).upper()})
    assert not evaluate(k.is_equal_to(U1), {"k": "not a uuid"})
    assert evaluate(k.is_not_equal_to(U1), {"k": "not a uuid"})


def test_str_filter_value_against_stored_uuid_is_a_mismatch() -> None:
    raises_everywhere(metadata_key("k").is_equal_to(str(U1)), {"k": U1}, "cannot be compared")
    raises_everywhere(metadata_key("k").contains_string("aaaa"), {"k": U1})
    with pytest.raises(InvalidFilterError, match="one type"):
        metadata_key("k").is_in([U1, str(U2)])


def test_stored_nan_equals_nothing() -> None:
    k = metadata_key("k")
    row = {"k": math.nan}
    assert not evaluate(k.is_equal_to(1.0), row)
    assert evaluate(k.is_not_equal_to(1.0), row)
    assert not evaluate(k.is_greater_than(-1e308), row)
    assert not evaluate(k.is_less_than(1e308), row)
    assert not evaluate(k.is_greater_than_or_equal_to(0), row)
    assert not evaluate(k.is_in([1.0, 2]), row)
    assert evaluate(k.is_not_in([1.0]), row)
    assert evaluate(k.is_greater_than(1e308), {"k": math.inf})


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, np.float32("nan")])
def test_non_finite_filter_values_are_rejected(value: float) -> None:
    with pytest.raises(InvalidFilterError, match="finite"):
        metadata_key("k").is_equal_to(value)
    with pytest.raises(InvalidFilterError, match="finite"):
        metadata_key("k").is_in([1.0, value])


def test_string_comparisons() -> None:
    k = metadata_key("k")
    assert evaluate(k.contains_string("RAG"), {"k": "about RAG systems"})
    assert not evaluate(k.contains_string("rag"), {"k": "about RAG systems"})
    assert evaluate(k.contains_string(""), {"k": ""})
    assert evaluate(k.is_less_than("b"), {"k": "B"})  # code point order
    assert evaluate(k.is_greater_than("z"), {"k": "é"})
    assert not evaluate(k.is_equal_to("a"), {"k": "a "})


def test_incompatible_types_raise_at_apply_time_naming_key_and_values() -> None:
    f = metadata_key("year").is_greater_than(2020)
    message = r"'year'.*stored value '2021' \(str\).*filter value 2020 \(int\)"
    raises_everywhere(f, {"year": "2021"}, message)
    raises_everywhere(metadata_key("k").contains_string("1"), {"k": 1}, "stored value 1")
    raises_everywhere(metadata_key("k").is_in(["a"]), {"k": 1.5}, r"\('a',\) \(str values\)")
    raises_everywhere(metadata_key("k").is_not_equal_to(True), {"k": "true"})
    # a present value of the wrong type raises even where the answer would not depend on it
    raises_everywhere(metadata_key("k").is_not_in([1]), {"k": "x"})


def test_and_or_evaluate_every_operand_so_type_errors_are_never_hidden() -> None:
    ok = metadata_key("a").is_equal_to(1)
    broken = metadata_key("b").is_equal_to(1)
    raises_everywhere(ok | broken, {"a": 1, "b": "x"})
    raises_everywhere(~ok & broken, {"a": 1, "b": "x"})


def test_mask_error_is_the_error_test_raises() -> None:
    rows: list[dict[str, Any]] = [{"k": 1}, {"k": "one"}, {"k": True}]
    table = MetadataTable()
    table.append(rows)
    f = metadata_key("k").is_greater_than(0)
    with pytest.raises(InvalidFilterError) as from_test:
        f.test(rows[1])
    with pytest.raises(InvalidFilterError) as from_mask:
        f.mask(table)
    assert str(from_mask.value) == str(from_test.value)


def test_a_stored_value_that_is_not_metadata_is_an_error() -> None:
    with pytest.raises(InvalidFilterError, match="not a metadata value"):
        metadata_key("k").is_equal_to(1).test({"k": [1]})
    assert metadata_key("k").is_equal_to(1).test({"k": np.int64(1)})


@pytest.mark.parametrize("value", [None, [1], {"a": 1}, b"x", (1,), object(), 1j, np.array([1])])
def test_unsupported_filter_values_are_rejected_when_built(value: Any) -> None:
    with pytest.raises(InvalidFilterError, match="unsupported filter value"):
        metadata_key("k").is_equal_to(value)


def test_other_build_errors() -> None:
    k = metadata_key("k")
    for key in ["", None, 1]:
        with pytest.raises(InvalidFilterError, match="non-empty string"):
            metadata_key(key)  # type: ignore[arg-type]
    with pytest.raises(InvalidFilterError, match="non-empty string"):
        IsEqualTo("", 1)
    with pytest.raises(InvalidFilterError, match="contains_string"):
        k.contains_string(1)  # type: ignore[arg-type]
    with pytest.raises(InvalidFilterError, match="at least one value"):
        k.is_in([])
    with pytest.raises(InvalidFilterError, match="collection"):
        k.is_in("abc")  # a str is not a collection of values
    with pytest.raises(InvalidFilterError, match="collection"):
        k.is_not_in(5)  # type: ignore[arg-type]
    with pytest.raises(InvalidFilterError, match="one type"):
        k.is_not_in([1, "1"])
    with pytest.raises(InvalidFilterError, match="unsupported"):
        k.is_in([1, None])  # type: ignore[list-item]
    with pytest.raises(InvalidFilterError, match="Filter operands"):
        And(k.is_equal_to(1), "k == 1")  # type: ignore[arg-type]
    with pytest.raises(InvalidFilterError, match="at least one"):
        and_()
    with pytest.raises(TypeError):
        k.is_equal_to(1) & "x"


def test_values_are_normalized_to_exact_types() -> None:
    class Color(enum.StrEnum):
        RED = "red"

    class Level(enum.IntEnum):
        HIGH = 3

    assert type(metadata_key("k").is_equal_to(Color.RED).value) is str
    assert type(metadata_key("k").is_equal_to(Level.HIGH).value) is int
    assert metadata_key("k").is_in(np.array([1, 2])).values == (1, 2)
    numpy_scalars: list[Any] = [np.float32(0.5), np.bool_(True)]
    assert type(metadata_key("k").is_equal_to(numpy_scalars[0]).value) is float
    assert type(metadata_key("k").is_equal_to(numpy_scalars[1]).value) is bool
    assert metadata_key("k").is_in([1, 1, 2, 1]).values == (1, 2)
    assert evaluate(metadata_key("k").is_equal_to(Color.RED), {"k": "red"})


def test_nested_and_or_not() -> None:
    a, b, c = (metadata_key(name).is_equal_to(1) for name in "abc")
    row = {"a": 1, "b": 2}
    assert evaluate(a & ~b, row)
    assert not evaluate(a & b, row)
    assert evaluate(a | b, row)
    assert not evaluate(b | c, row)
    assert evaluate(~(b | c), row)
    assert evaluate((a & (b | ~c)) | (b & c), row)
    assert evaluate(and_(a, or_(b, not_(c))), row)
    assert not evaluate(and_(a, b, ~c), row)
    assert evaluate(or_(b, c, a), row)
    assert and_(a) is a
    assert or_(a) is a
    assert not_(a) == Not(a)
    assert (a & b) == And(a, b)
    assert (a | b) == Or(a, b)
    assert ~a == Not(a)


def test_long_chains_do_not_recurse() -> None:
    filters = [metadata_key("k").is_not_equal_to(i) for i in range(5000)]
    chained: Filter = filters[0]
    for f in filters[1:]:
        chained = chained & f
    table = MetadataTable()
    table.append([{"k": 5000}, {"k": 3}])
    assert chained.mask(table).tolist() == [True, False]
    assert chained.test({"k": 5000})
    assert chained == and_(*filters)
    assert hash(chained) == hash(and_(*filters))
    assert str(chained).count(" and ") == 4999


def test_equality_is_typed_and_ignores_associativity_and_in_order() -> None:
    k = metadata_key("k")
    assert k.is_equal_to(1) != k.is_equal_to(True)
    assert k.is_equal_to(1) != k.is_equal_to(1.0)
    assert k.is_equal_to(1) != k.is_not_equal_to(1)
    assert k.is_equal_to(1) != metadata_key("j").is_equal_to(1)
    assert k.is_in([1, 2]) == k.is_in([2, 1])
    assert k.is_in([1, 2]) != k.is_in([1, 2.0])
    assert hash(k.is_in([1, 2])) == hash(k.is_in([2, 1]))
    a, b, c = (metadata_key(name).is_equal_to(1) for name in "abc")
    assert (a & b) & c == a & (b & c)
    assert (a & b) != (b & a)
    assert (a & b) != (a | b)
    assert len({a & b, And(a, b), a | b}) == 2


def test_filters_have_no_truth_value() -> None:
    f = metadata_key("tenant").is_equal_to(1)
    with pytest.raises(TypeError, match="&"):
        bool(f)
    with pytest.raises(TypeError):
        f and metadata_key("user").is_equal_to(2)


def test_nodes_are_plain_frozen_dataclasses() -> None:
    f = metadata_key("k").is_in([1, 2])
    assert dataclasses.is_dataclass(f)
    assert [field.name for field in dataclasses.fields(f)] == ["key", "values"]
    assert not hasattr(f, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.key = "j"  # type: ignore[misc]
    assert repr(metadata_key("k").is_equal_to("x")) == "IsEqualTo(key='k', value='x')"
    classes = {
        IsEqualTo: "is_equal_to",
        IsNotEqualTo: "is_not_equal_to",
        IsGreaterThan: "is_greater_than",
        IsGreaterThanOrEqualTo: "is_greater_than_or_equal_to",
        IsLessThan: "is_less_than",
        IsLessThanOrEqualTo: "is_less_than_or_equal_to",
        ContainsString: "contains_string",
    }
    for cls, method in classes.items():
        node = getattr(metadata_key("k"), method)("v")
        assert type(node) is cls
        match node:
            case cls(key=key, value=value):
                assert (key, value) == ("k", "v")
    assert type(metadata_key("k").is_not_in([1])) is IsNotIn
    assert type(metadata_key("k").is_in([1])) is IsIn
    assert dataclasses.fields(Not(f))[0].name == "expression"
    assert [x.name for x in dataclasses.fields(Or(f, f))] == ["left", "right"]


def test_mask_on_an_empty_table_and_an_unknown_key() -> None:
    table = MetadataTable()
    assert metadata_key("k").is_equal_to(1).mask(table).shape == (0,)
    table.append([{"a": 1}, {"a": 2}])
    assert metadata_key("k").is_equal_to(1).mask(table).tolist() == [False, False]
    assert metadata_key("k").is_not_in([1]).mask(table).tolist() == [True, True]


# -- property: the vectorized mask is exactly the row-by-row test -------------------------

UUIDS = [uuid.UUID(int=i) for i in (1, 2, 3)]
TRICKY_INTS = [2**53, 2**53 + 1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**70, 10**400]
TRICKY_FLOATS = [0.5, -0.0, 2.0**53, 2.0**63, 1e308]
stored_numbers = st.one_of(
    st.integers(-3, 3),
    st.sampled_from(TRICKY_INTS),
    st.floats(-4, 4).map(lambda x: round(x * 2) / 2),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(TRICKY_FLOATS),
)
stored_strings = st.one_of(
    st.text(alphabet="abAB", max_size=3), st.sampled_from([str(u) for u in UUIDS])
)
STORED = {
    "n": stored_numbers,
    "s": stored_strings,
    "b": st.booleans(),
    "u": st.sampled_from(UUIDS),
}
STORED["x"] = st.one_of(*STORED.values())
rows_strategy = st.lists(
    st.fixed_dictionaries({}, optional=STORED),
    max_size=10,
)

filter_numbers = st.one_of(
    st.integers(-3, 3),
    st.sampled_from(TRICKY_INTS),
    st.floats(-4, 4).map(lambda x: round(x * 4) / 4),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(TRICKY_FLOATS),
)
filter_strings = stored_strings
VALUES = {
    "n": filter_numbers,
    "s": st.one_of(filter_strings, st.sampled_from(UUIDS)),
    "b": st.booleans(),
    "u": st.sampled_from(UUIDS),
}
VALUES["x"] = st.one_of(*VALUES.values())
EQUALITIES = [IsEqualTo, IsNotEqualTo]
ORDERINGS = [IsGreaterThan, IsGreaterThanOrEqualTo, IsLessThan, IsLessThanOrEqualTo]


def _leaves(key: str, values: st.SearchStrategy[Any]) -> st.SearchStrategy[Filter]:
    keys = st.one_of(st.just(key), st.sampled_from(list(STORED)))
    orderable = values.filter(lambda v: type(v) in (int, float, str))
    collections = values.flatmap(
        lambda v: st.lists(
            values.filter(lambda w: type(w) is type(v) or {type(v), type(w)} <= {int, float}),
            max_size=3,
        ).map(lambda rest: [v, *rest])
    )
    return st.one_of(
        st.builds(lambda c, k, v: c(k, v), st.sampled_from(EQUALITIES), keys, values),
        st.builds(lambda c, k, v: c(k, v), st.sampled_from(ORDERINGS), keys, orderable),
        st.builds(lambda c, k, v: c(k, v), st.sampled_from([IsIn, IsNotIn]), keys, collections),
        st.builds(ContainsString, keys, st.text(alphabet="abAB", max_size=2)),
    )


filters_strategy = st.recursive(
    st.one_of(*(_leaves(key, values) for key, values in VALUES.items())),
    lambda children: st.one_of(
        st.builds(And, children, children),
        st.builds(Or, children, children),
        st.builds(Not, children),
    ),
    max_leaves=6,
)


def _table(rows: list[dict[str, Any]], cuts: list[int]) -> MetadataTable:
    table = MetadataTable()
    start = 0
    for cut in sorted(cuts):
        table.append(rows[start:cut])
        start = cut
    table.append(rows[start:])
    return table


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=rows_strategy, f=filters_strategy, data=st.data())
def test_mask_equals_test_on_every_row(
    rows: list[dict[str, Any]], f: Filter, data: st.DataObject
) -> None:
    cuts = data.draw(st.lists(st.integers(0, len(rows)), max_size=3))
    table = _table(rows, cuts)
    results: list[bool] = []
    errors: list[str] = []
    for row in rows:
        try:
            results.append(f.test(row))
        except InvalidFilterError as error:
            errors.append(str(error))
    if errors:
        with pytest.raises(InvalidFilterError) as raised:
            f.mask(table)
        assert str(raised.value) in errors
    else:
        assert f.mask(table).tolist() == results
        assert [f.test(table.row(i)) for i in range(len(table))] == results
