"""Filter -> SQL over the ``metadata`` JSONB column, with bound parameters only.

Every key and value travels as a parameter; the SQL text is made of fixed fragments. The
translation keeps the core semantics (``ragloom.core.filters``):

- each comparison is ``COALESCE(<test>, false)``, never NULL, so a missing key makes it
  false, ``NOT`` is plain negation, and ``IsNotEqualTo``/``IsNotIn`` (the negations of
  ``IsEqualTo``/``IsIn``) are true for a missing key;
- equality is JSONB containment ``metadata @> {"k": v}`` (GIN-indexable): JSONB compares
  numbers as ``numeric``, so ``2 == 2.0`` and nothing else; a UUID value also matches a
  str holding its canonical form; membership is ``metadata -> k = ANY(jsonb[])``;
- orderings cast to ``numeric`` (exact; ±inf included, NaN excluded) or compare text
  ``COLLATE "C"`` (code point order, in a UTF-8 database); ``ContainsString`` is
  ``strpos`` (case-sensitive);
- type mismatches: a filter's :attr:`CompiledFilter.mismatch_tags` are the kind tags of
  stored values it cannot compare with; the caller looks for any row carrying one (one
  GIN index probe) in the same statement, and raises ``InvalidFilterError`` if found, as
  the in-memory store does whenever any stored value has an incompatible type.

PostgreSQL text cannot hold NUL, and the store refuses it on input, so a key containing
NUL is missing from every row and a str value containing NUL equals no stored value; the
orderings against such a value are rewritten on its prefix before the NUL (exactly
equivalent for NUL-free stored strings).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from psycopg import sql
from psycopg.types.json import Jsonb

from ragloom.core import filter_values
from ragloom.core.errors import InvalidFilterError
from ragloom.core.filter_compiler import FilterCompiler
from ragloom.core.filter_values import FilterValue, value_kind
from ragloom.core.filters import (
    ContainsString,
    Filter,
    IsEqualTo,
    IsIn,
    IsNotEqualTo,
    IsNotIn,
)
from ragloom.stores.pgvector._metadata import (
    BOOL,
    NUMBER,
    STR,
    UUID,
    encode_number,
    kind_tag,
)

__all__ = ["CompiledFilter", "compile_filter", "jsonb_text", "storable_text"]

_TRUE, _FALSE = sql.SQL("TRUE"), sql.SQL("FALSE")
# The stored kind tag of each core value kind.
_TAGS = {
    filter_values.NUMBER: NUMBER,
    filter_values.STR: STR,
    filter_values.BOOL: BOOL,
    filter_values.UUID: UUID,
}
# Stored kinds that a filter value of each kind cannot be compared with.
_INCOMPATIBLE = {
    NUMBER: (STR, BOOL, UUID),
    STR: (NUMBER, BOOL, UUID),
    BOOL: (NUMBER, STR, UUID),
    UUID: (NUMBER, BOOL),  # a UUID filter value also compares with stored str
}
# Each placeholder occurs once (psycopg binds positionally): k1..k3 are the key, v1, v2
# the value.
_NUMBER_ORDER = sql.SQL(
    "COALESCE(CASE jsonb_typeof(metadata -> {k1}) "
    "WHEN 'number' THEN (metadata -> {k2})::numeric {op} {v1}::numeric "
    "WHEN 'object' THEN NULLIF((metadata -> {k3} ->> '$float')::numeric, 'NaN') {op} {v2}::numeric "
    "END, false)"
)
_STR_ORDER = sql.SQL(
    "COALESCE(CASE WHEN jsonb_typeof(metadata -> {k1}) = 'string' "
    'THEN (metadata ->> {k2}) COLLATE "C" {op} {v1} END, false)'
)
_CONTAINS = sql.SQL(
    "COALESCE(CASE WHEN jsonb_typeof(metadata -> {k1}) = 'string' "
    "THEN strpos(metadata ->> {k2}, {v1}) > 0 END, false)"
)
_MEMBER = sql.SQL("COALESCE((metadata -> {k1}) = ANY({v1}::jsonb[]), false)")


def _identity(text: Any) -> Any:
    return text


def jsonb_text(text: str) -> Jsonb:
    """A JSONB parameter from JSON text we already encoded (sent as is)."""
    return Jsonb(text, dumps=_identity)


@dataclass
class CompiledFilter:
    """The SQL condition of a filter, its parameters and its mismatch tags."""

    condition: sql.Composable
    params: list[Any] = field(default_factory=list)
    mismatch_tags: list[str] = field(default_factory=list)


def _tag(value: FilterValue) -> str:
    return _TAGS[value_kind(value)]


def _json(value: FilterValue) -> list[str]:
    """The stored JSON forms ``value`` equals (a UUID equals two)."""
    if type(value) is bool:
        return ["true" if value else "false"]
    if type(value) is int or type(value) is float:
        return [encode_number(value)]
    if type(value) is str:
        return [_json_str(value)]
    text = str(value)
    return [f'{{"$uuid": "{text}"}}', f'"{text}"']


def _json_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def storable_text(text: str) -> bool:
    """Whether PostgreSQL text can hold ``text`` (the store refuses anything else)."""
    if "\x00" in text:
        return False
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class _SqlCompiler(FilterCompiler[sql.Composable]):
    backend = "the pgvector store"

    def __init__(self) -> None:
        self.params: list[Any] = []
        self.tags: dict[str, None] = {}

    def param(self, value: Any) -> sql.Composable:
        self.params.append(value)
        return sql.Placeholder()

    def fill(
        self, template: sql.SQL, key: str, value: Any, **fixed: sql.Composable
    ) -> sql.Composed:
        """``template`` with a placeholder (and a parameter) per occurrence of k1.., v1..

        The parameters are appended in the template's textual order.
        """
        text = template.as_string()
        names = [name for name in ("k1", "k2", "k3", "v1", "v2") if "{" + name + "}" in text]
        names.sort(key=lambda name: text.index("{" + name + "}"))
        args: dict[str, sql.Composable] = {}
        for name in names:
            args[name] = self.param(key if name[0] == "k" else value)
        return template.format(**args, **fixed)

    def check_types(self, key: str, kind: str) -> None:
        for other in _INCOMPATIBLE[kind]:
            self.tags[kind_tag(other, key)] = None

    def is_equal_to(self, filter: IsEqualTo) -> sql.Composable:
        return self.equal(filter.key, filter.value)

    def is_not_equal_to(self, filter: IsNotEqualTo) -> sql.Composable:
        return self.not_(self.equal(filter.key, filter.value))

    def is_in(self, filter: IsIn) -> sql.Composable:
        return self.member(filter.key, filter.values)

    def is_not_in(self, filter: IsNotIn) -> sql.Composable:
        return self.not_(self.member(filter.key, filter.values))

    def contains_string(self, filter: ContainsString) -> sql.Composable:
        return self.contains(filter.key, filter.value)

    def and_(self, operands: list[sql.Composable]) -> sql.Composable:
        return sql.SQL("({})").format(sql.SQL(" AND ").join(operands))

    def or_(self, operands: list[sql.Composable]) -> sql.Composable:
        return sql.SQL("({})").format(sql.SQL(" OR ").join(operands))

    def not_(self, operand: sql.Composable) -> sql.Composable:
        if operand is _FALSE:
            return _TRUE
        if operand is _TRUE:
            return _FALSE
        return sql.SQL("(NOT {})").format(operand)

    def equal(self, key: str, value: FilterValue) -> sql.Composable:
        if not storable_text(key):  # no stored key holds NUL: missing everywhere
            return _FALSE
        self.check_types(key, _tag(value))
        if type(value) is str and not storable_text(value):  # no stored str holds it
            return _FALSE
        forms = [
            sql.SQL("metadata @> {v}").format(v=self.param(self.document(key, form)))
            for form in _json(value)
        ]
        if len(forms) == 1:
            return forms[0]
        return sql.SQL("({})").format(sql.SQL(" OR ").join(forms))

    def member(self, key: str, values: tuple[FilterValue, ...]) -> sql.Composable:
        if not storable_text(key):
            return _FALSE
        self.check_types(key, _tag(values[0]))
        forms = [
            jsonb_text(form)
            for value in values
            if not (type(value) is str and not storable_text(value))
            for form in _json(value)
        ]
        if not forms:
            return _FALSE
        return self.fill(_MEMBER, key, forms)

    def contains(self, key: str, value: str) -> sql.Composable:
        if not storable_text(key):
            return _FALSE
        self.check_types(key, STR)
        if not storable_text(value):  # no stored str contains it
            return _FALSE
        return self.fill(_CONTAINS, key, value)

    def order(self, key: str, operator: str, value: FilterValue) -> sql.Composable:
        if not storable_text(key):
            return _FALSE
        kind = _tag(value)
        self.check_types(key, kind)
        if kind == NUMBER:
            assert isinstance(value, int | float)
            number = encode_number(value)
            return self.fill(_NUMBER_ORDER, key, number, op=sql.SQL(operator))
        assert isinstance(value, str)
        if not storable_text(value.replace("\x00", "")):
            raise InvalidFilterError(
                f"filter value {value!r} on key {key!r} is not valid Unicode (lone surrogate)"
            )
        if "\x00" in value:
            # NUL-free s vs x = p + NUL + rest: s > x and s >= x iff s > p; s < x, s <= x
            # iff s <= p (s == p sorts before x, and no s equals x).
            value = value[: value.index("\x00")]
            operator = ">" if operator in (">", ">=") else "<="
        return self.fill(_STR_ORDER, key, value, op=sql.SQL(operator))

    def document(self, key: str, form: str) -> Jsonb:
        return jsonb_text("{" + _json_str(key) + ": " + form + "}")


def compile_filter(condition: Filter) -> CompiledFilter:
    """The SQL of ``condition`` over the ``metadata`` column (see the module docstring)."""
    if not isinstance(condition, Filter):
        raise InvalidFilterError(f"filter must be a ragloom Filter, got {type(condition).__name__}")
    compiler = _SqlCompiler()
    sql_condition = compiler.compile(condition)
    return CompiledFilter(sql_condition, compiler.params, list(compiler.tags))
