"""The test server's OData $filter evaluator: Azure's semantics for the subset it parses."""

from __future__ import annotations

import pytest

from ragloom.retrievers.azure_ai_search.odata_eval import ODataError, parse_filter

DOC = {
    "s": "O'Brien",
    "n": 2.5,
    "i": 3,
    "b": True,
    "none": None,
    "tags": ["a", "b"],
    "meta": [{"key": "lang", "s": "en", "n": None}, {"key": "year", "s": None, "n": 2020.0}],
    "sub": {"x": 1},
}


@pytest.mark.parametrize(
    ("odata", "expected"),
    [
        ("s eq 'O''Brien'", True),
        ("s ne 'O''Brien'", False),
        ("n gt 2 and n lt 3", True),
        ("n ge 2.5 and i le 3 and i eq 3.0", True),
        ("b eq true", True),
        ("not (b eq true)", False),
        ("not b eq false", True),
        ("missing eq 'x' or s eq 'x'", False),
        ("missing ne 'x'", True),  # a missing field is null: ne holds
        ("none eq null and missing eq null", True),
        ("none gt 1 or none lt 1 or none ge 1", False),  # comparisons with null are false
        ("sub/x eq 1 and sub/y eq null", True),
        ("s gt 'A' and s lt 'P'", True),  # ordinal string order
        ("tags/any()", True),
        ("tags/any(t: t eq 'b')", True),
        ("tags/all(t: t eq 'b')", False),
        ("missing/any()", False),
        ("meta/any(m: m/key eq 'year' and m/n ge 2020)", True),
        ("meta/any(m: m/key eq 'lang' and m/n ge 2020)", False),
        ("not meta/any(m: m/key eq 'draft')", True),
        ("meta/any(m: m/key eq 'lang' and search.in(m/s, 'de|en', '|'))", True),
        ("search.in(s, 'a, b')", False),
        ("search.in(s, 'x;O''Brien', ';')", True),
        ("(((i eq 3)))", True),
        ("n eq -2.5e0 or n eq 25E-1", True),
    ],
)
def test_evaluates_like_azure(odata: str, expected: bool) -> None:
    assert parse_filter(odata)(DOC) is expected


@pytest.mark.parametrize(
    "odata",
    [
        "s eq 1",  # incompatible types
        "b gt false",  # booleans have no order
        "s eq",  # incomplete
        "s eq 'x' and",
        "s eq 'unterminated",
        "(s eq 'x'",
        "s eq 'x')",
        "search.ismatch('x')",
        "geo.distance(p, q) lt 1",
        "s",  # not a boolean expression
        "meta/any(eq: eq eq 1)",
    ],
)
def test_invalid_filters_are_400s(odata: str) -> None:
    with pytest.raises(ODataError):
        parse_filter(odata)(DOC)


def test_unknown_fields_are_reported_through_check_field() -> None:
    def check(path: str) -> None:
        if path != "s":
            raise ODataError(f"Could not find a property named '{path}'")

    assert parse_filter("s eq 'O''Brien'", check)(DOC)
    with pytest.raises(ODataError, match="nope"):
        parse_filter("nope eq 1", check)
