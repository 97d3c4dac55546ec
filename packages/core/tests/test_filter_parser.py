"""parse_filter and Filter.__str__: the textual filter language and its precise errors."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
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
    Not,
    Or,
    metadata_key,
    parse_filter,
)
from ragloom.core.metadata_table import MetadataTable

U = uuid.UUID("12345678-1234-5678-1234-567812345678")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'year >= 2020 and lang in ("en", "de")',
            And(IsGreaterThanOrEqualTo("year", 2020), IsIn("lang", ("en", "de"))),
        ),
        (
            "not (a == 1 or b != 'x')",
            Not(Or(IsEqualTo("a", 1), IsNotEqualTo("b", "x"))),
        ),
        ('title contains "RAG"', ContainsString("title", "RAG")),
        ("tenant not in (1, 2)", IsNotIn("tenant", (1, 2))),
        ("a > 1.5", IsGreaterThan("a", 1.5)),
        ("a < -2", IsLessThan("a", -2)),
        ("a <= 1e3", IsLessThanOrEqualTo("a", 1000.0)),
        ("a==-2.5E-1", IsEqualTo("a", -0.25)),
        ("flag == true", IsEqualTo("flag", True)),
        ("flag != FALSE", IsNotEqualTo("flag", False)),
        (f'id == uuid("{U}")', IsEqualTo("id", U)),
        (f"id in (uuid('{str(U).upper()}'),)", IsIn("id", (U,))),
        ("doc.meta-data_2 == 'x'", IsEqualTo("doc.meta-data_2", "x")),
        ("`my key` == 1", IsEqualTo("my key", 1)),
        ("`and` == 1", IsEqualTo("and", 1)),
        ("`2fa` == true", IsEqualTo("2fa", True)),
        ("größe > 3", IsGreaterThan("größe", 3)),
        ("a IN (1, 2.5,)", IsIn("a", (1, 2.5))),
        ("  a   ==\n1\t", IsEqualTo("a", 1)),
        (
            r'a == "tab\there \"q\" \\ \x41\u00e9\U0001F600"',
            IsEqualTo("a", 'tab\there "q" \\ Aé😀'),
        ),
        (r"a == 'it\'s'", IsEqualTo("a", "it's")),
        ("a == 123456789012345678901234567890", IsEqualTo("a", 123456789012345678901234567890)),
    ],
)
def test_parses(text: str, expected: Filter) -> None:
    assert parse_filter(text) == expected


def test_precedence_not_over_and_over_or() -> None:
    a, b, c, d = (metadata_key(k).is_equal_to(1) for k in "abcd")
    assert parse_filter("a == 1 or b == 1 and c == 1") == a | (b & c)
    assert parse_filter("a == 1 and b == 1 or c == 1") == (a & b) | c
    assert parse_filter("not a == 1 and b == 1") == ~a & b
    assert parse_filter("not not a == 1") == ~~a
    assert parse_filter("(a == 1 or b == 1) and c == 1") == (a | b) & c
    assert parse_filter("a == 1 and (b == 1 or not (c == 1 and d == 1))") == a & (b | ~(c & d))
    assert parse_filter("((a == 1))") == a


def test_renders_the_same_syntax() -> None:
    a, b, c = (metadata_key(k).is_equal_to(1) for k in "abc")
    assert str(a | (b & c)) == "a == 1 or b == 1 and c == 1"
    assert str((a | b) & c) == "(a == 1 or b == 1) and c == 1"
    assert str(~(a & b)) == "not (a == 1 and b == 1)"
    assert str(metadata_key("lang").is_in(["en", "de"])) == 'lang in ("en", "de")'
    assert str(metadata_key("n").is_not_in([1, 2.5])) == "n not in (1, 2.5)"
    assert str(metadata_key("t").contains_string('say "hi"\n')) == r't contains "say \"hi\"\n"'
    assert str(metadata_key("my key").is_less_than(-0.0)) == "`my key` < -0.0"
    assert str(metadata_key("in").is_equal_to(True)) == "`in` == true"
    assert str(metadata_key("id").is_equal_to(U)) == f'id == uuid("{U}")'
    assert str(metadata_key("x").is_greater_than(1e20)) == "x > 1e+20"


def test_parsed_filters_evaluate() -> None:
    table = MetadataTable()
    rows: list[dict[str, Any]] = [
        {"year": 2021, "lang": "en"},
        {"year": 2019, "lang": "en"},
        {"year": 2022.5, "lang": "fr"},
    ]
    table.append(rows)
    f = parse_filter('year >= 2020 and lang in ("en", "de")')
    assert f.mask(table).tolist() == [True, False, False]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("year >= ", "expected a value after '>=' at column 9, found end of input"),
        (
            "year >= 2020 and",
            "expected a metadata key after 'and' at column 17, found end of input",
        ),
        ("a = 1", "unexpected character '=' at column 3 (use '==' for equality)"),
        ("a == 1 && b == 2", "unexpected character '&' at column 8 (use 'and')"),
        ("a == en", "expected a value after '==' at column 6, found 'en'; quote text values"),
        ("(a == 1", "expected ')' after '1' at column 8, found end of input"),
        ("a == 1)", "expected 'and', 'or' or end of input after '1' at column 7, found ')'"),
        ("a == 1 b == 2", "expected 'and', 'or' or end of input after '1' at column 8, found 'b'"),
        ("a in ()", "expected a value after '(' at column 7, found ')'"),
        ("a in 1", "expected '(' after 'in' at column 6, found '1'"),
        ("a not 1", "expected 'in' after 'not' at column 7, found '1'"),
        ("a contains 1", "expected a quoted string after 'contains' at column 12, found '1'"),
        (
            "a",
            "expected an operator (==, !=, >, >=, <, <=, in, not in, contains) "
            "after 'a' at column 2, found end of input",
        ),
        ("", "expected a metadata key at column 1, found end of input"),
        ("and == 1", "found 'and'; quote keys that are keywords with backticks"),
        ("== 1", "expected a metadata key at column 1, found '=='"),
        ('a == "abc', "unterminated string starting at column 6"),
        ("`abc == 1", "unterminated key starting at column 1"),
        (r'a == "\q"', r"unknown escape '\q' at column 7"),
        (r'a == "\x4"', "invalid escape '\\x4\"' at column 7"),
        (r'a == "\UFFFFFFFF"', "beyond Unicode"),
        ("2fa == 1", "malformed number starting at column 1"),
        ("a == 1.2.3", "malformed number starting at column 6"),
        ('a == uuid("nope")', "invalid UUID 'nope' at column 11"),
        ("a == uuid(1)", "expected a quoted UUID after '(' at column 11, found '1'"),
        (
            "a in (1, 'x')",
            "is_in on key 'a' needs values of one type, got number and str (at column 1)",
        ),
        ("b and a > true", "expected an operator"),
        ("x == 1 or a > true", "bool value True is not supported"),
        ("x == 1 or a > true", "(at column 11)"),
        ("a == 1e999", "is not a finite number (at column 1)"),
        ("``== 1", "non-empty string, got '' (at column 1)"),
    ],
)
def test_errors_name_the_column_and_the_token(text: str, message: str) -> None:
    with pytest.raises(InvalidFilterError) as raised:
        parse_filter(text)
    assert message in str(raised.value)


def test_nothing_is_ever_evaluated() -> None:
    for text in [
        "__import__('os').system('true')",
        "a == __import__('os')",
        "a == (1).__class__",
        "a == 1; import os",
    ]:
        with pytest.raises(InvalidFilterError):
            parse_filter(text)
    with pytest.raises(InvalidFilterError):
        parse_filter(b"a == 1")  # type: ignore[arg-type]


def test_nesting_is_bounded_but_long_chains_are_fine() -> None:
    with pytest.raises(InvalidFilterError, match="nested deeper than 100 levels at column 101"):
        parse_filter("(" * 150 + "a == 1" + ")" * 150)
    with pytest.raises(InvalidFilterError, match="nested deeper"):
        parse_filter("not " * 150 + "a == 1")
    assert parse_filter("(" * 50 + "a == 1" + ")" * 50) == metadata_key("a").is_equal_to(1)
    chain = parse_filter(" or ".join(f"k == {i}" for i in range(10_000)))
    assert chain.test({"k": 9_999})
    assert parse_filter(str(chain)) == chain


# -- property: str() and parse_filter() are inverse -----------------------------------------

keys = st.one_of(st.text(min_size=1, max_size=8), st.sampled_from(["a", "x.y", "AND", "not"]))
finite_floats = st.floats(allow_nan=False, allow_infinity=False)
numbers = st.one_of(st.integers(), finite_floats)
values = st.one_of(st.text(max_size=8), numbers, st.booleans(), st.uuids())
orderable = st.one_of(st.text(max_size=8), numbers)


def _collection(kind: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Any]]:
    return st.lists(kind, min_size=1, max_size=3)


leaves = st.one_of(
    st.builds(IsEqualTo, keys, values),
    st.builds(IsNotEqualTo, keys, values),
    st.builds(IsGreaterThan, keys, orderable),
    st.builds(IsGreaterThanOrEqualTo, keys, orderable),
    st.builds(IsLessThan, keys, orderable),
    st.builds(IsLessThanOrEqualTo, keys, orderable),
    st.builds(
        IsIn,
        keys,
        st.one_of(*map(_collection, [st.text(), numbers, st.booleans(), st.uuids()])),
    ),
    st.builds(IsNotIn, keys, _collection(st.text())),
    st.builds(ContainsString, keys, st.text(max_size=8)),
)
filters = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.builds(And, children, children),
        st.builds(Or, children, children),
        st.builds(Not, children),
    ),
    max_leaves=8,
)


@settings(max_examples=500, deadline=None)
@given(f=filters)
def test_str_then_parse_gives_the_same_filter(f: Filter) -> None:
    text = str(f)
    assert parse_filter(text) == f
    assert str(parse_filter(text)) == text
