"""Unit tests (no server) of the expression builder and the filter compiler."""

from __future__ import annotations

import uuid

import pytest

from ragloom.core.errors import InvalidFilterError
from ragloom.core.filters import metadata_key
from ragloom.stores.milvus._expr import (
    Param,
    expressible,
    literal,
    render_literal,
    render_template,
)
from ragloom.stores.milvus._filters import compile_filter


def test_values_travel_as_template_parameters_never_as_text() -> None:
    nasty = 'x" or id != "'
    condition = metadata_key("k").is_equal_to(nasty) | metadata_key("n").is_in([1, 2.5])
    compiled = compile_filter(condition)
    assert compiled.condition.expr is not None
    assert compiled.condition.exact
    text, params = render_template(compiled.condition.expr)
    assert nasty not in text
    assert "2.5" not in text
    assert text == '(metadata["k"] == {p0} or metadata["n"] in {p1})'
    assert params == {"p0": nasty, "p1": [1, 2.5]}


def test_not_is_pushed_down_to_the_leaves() -> None:
    condition = ~(metadata_key("a").is_greater_than(3) & metadata_key("b").is_equal_to(True))
    expr = compile_filter(condition).condition.expr
    assert expr is not None
    text, params = render_template(expr)
    assert "not (" not in text
    assert text == ('((metadata["a"] <= {p0} or kinds["a"] not in {p1}) or metadata["b"] != {p2})')
    assert params == {"p0": 3, "p1": ["i", "f", "p", "m", "n"], "p2": True}


def test_keys_are_escaped_string_literals() -> None:
    expr = compile_filter(metadata_key('a"]\\b').is_equal_to(1)).condition.expr
    assert expr is not None
    assert render_literal(expr) == 'metadata["a\\"]\\\\b"] == 1'


def test_literals_escape_quotes_and_backslashes_and_refuse_the_rest() -> None:
    assert literal("a\"b\\c'd") == '"a\\"b\\\\c\'d"'
    assert literal((1, 2.5, True, "x")) == '[1, 2.5, true, "x"]'
    assert literal(uuid.UUID(int=1).hex) == f'"{uuid.UUID(int=1).hex}"'
    for bad in ("a\nb", "a\x00b", "a\x7fb", "\ud800"):
        assert not expressible(bad)
        with pytest.raises(InvalidFilterError):
            literal(bad)
    with pytest.raises(InvalidFilterError):
        literal(2**64)
    with pytest.raises(InvalidFilterError):
        literal(float("nan"))
    assert render_literal(("a == ", Param("{p0}"))) == 'a == "{p0}"'


def test_inexpressible_filters_become_checked_supersets() -> None:
    for condition in (
        metadata_key("k").is_equal_to("a\nb"),
        metadata_key("k\n").is_equal_to(1),
        metadata_key("k").is_greater_than(2**53),
        ~metadata_key("k").contains_string("x"),
    ):
        assert not compile_filter(condition).condition.exact, condition
    key_unnamed = compile_filter(metadata_key("k\n").is_equal_to(1))
    assert not key_unnamed.probe_complete


def test_like_patterns_escape_wildcards() -> None:
    expr = compile_filter(metadata_key("k").contains_string("50%_\\")).condition.expr
    assert expr is not None
    _, params = render_template(expr)
    assert params == {"p0": "%50\\%\\_\\\\%"}


def test_type_probe_lists_the_incompatible_kinds() -> None:
    compiled = compile_filter(metadata_key("k").is_equal_to(uuid.UUID(int=1)))
    assert compiled.probe is not None
    _, params = render_template(compiled.probe)
    assert params == {"p0": ["b", "f", "i", "m", "n", "p", "x"]}  # a stored str may match a UUID
