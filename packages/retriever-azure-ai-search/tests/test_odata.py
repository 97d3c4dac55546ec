"""ragloom Filters -> OData: escaping and key validation (injection attempts)."""

from __future__ import annotations

import pytest

from ragloom.core.errors import InvalidFilterError
from ragloom.core.filters import MetadataFilterBuilder as key
from ragloom.retrievers.azure_ai_search import ODataFilterCompiler

compile_ = ODataFilterCompiler().compile


def test_operations() -> None:
    f = (key("a").is_equal_to("x") & key("n").is_greater_than(2)) | ~key("b").is_in([True, False])
    assert compile_(f) == "((a eq 'x' and n gt 2) or not ((b eq true or b eq false)))"
    assert compile_(key("n").is_not_in([1, 2.5])) == "(n ne 1 and n ne 2.5)"


@pytest.mark.parametrize(
    ("value", "odata"),
    [
        ("O'Brien", "'O''Brien'"),
        ("x' or 1 eq 1 or a eq '", "'x'' or 1 eq 1 or a eq '''"),
        ("%s;--", "'%s;--'"),
    ],
)
def test_values_are_quoted(value: str, odata: str) -> None:
    assert compile_(key("name").is_equal_to(value)) == f"name eq {odata}"


@pytest.mark.parametrize("bad", ["a eq 'x' or b", "a;b", "1a", "a'", "a/", "a b", "a)"])
def test_bad_keys_are_refused(bad: str) -> None:
    with pytest.raises(InvalidFilterError, match="field name"):
        compile_(key(bad).is_equal_to("x"))


def test_contains_string_is_unsupported() -> None:
    with pytest.raises(InvalidFilterError):
        compile_(key("a").contains_string("x"))
