"""ragloom filters -> Milvus boolean expressions over the ``metadata``/``kinds`` JSON fields.

Milvus Lite 2.5 cannot evaluate ``not (...)``, so the compiler builds every node in both
polarities at once (negation normal form): a leaf gives its condition and its negation,
``And``/``Or`` combine them by De Morgan and ``Not`` swaps them. The core semantics hold:

* a missing key: Milvus already makes ``==``, ``<``, ``in``, ``like`` false and ``!=``,
  ``not in`` true on a missing JSON key; negated orderings add
  ``kinds[k] not in [number kinds]`` (or ``!= "s"``), true for a missing key or a NaN;
* int and float compare by value: Milvus compares int64 with int64 exactly and mixes via
  double, which is exact while the filter value is below 2**53 in magnitude;
* a UUID filter value is its canonical str, which equals a stored UUID (kept as its
  canonical str) and a stored str with that text;
* a type mismatch: the compiled ``probe`` finds a stored value of an incompatible kind
  under any filtered key (``kinds[k] in [...]``), and the store raises core's error.
  Lenient mode (the store's ``type_checks=False``) has no probe: a negated leaf is guarded
  by ``kinds[k] in [compatible kinds]`` (Milvus's JSON comparisons are already typed, so
  most positive leaves need no guard), and a mismatched entry matches neither side.

What an expression cannot say exactly (a key with control characters, ``/`` or ``~``, a str value
with control characters, a
number of 2**53 or more, a negated ``contains_string``) compiles to a *superset* and the
result is marked inexact: the store then checks each candidate with ``Filter.test``, the
reference semantics, in Python. Results are exact either way.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ragloom.core.errors import InvalidFilterError
from ragloom.core.filter_compiler import FilterCompiler
from ragloom.core.filter_values import NUMBER, STR, UUID, FilterValue, value_kind
from ragloom.core.filters import (
    And,
    ContainsString,
    Filter,
    IsEqualTo,
    IsIn,
    IsNotEqualTo,
    IsNotIn,
    Not,
    Or,
)
from ragloom.stores.milvus._expr import Expr, Param, expressible, join, key_expressible, path
from ragloom.stores.milvus._metadata import ALL_STORED_KINDS, KINDS_OF

_EXACT_LIMIT = 2**53
_FINITE_OR_INF = ("i", "f", "p", "m", "n")  # number kinds that order (not NaN; "n": old -inf)
_INVERSE = {">": "<=", ">=": "<", "<": ">=", "<=": ">"}


@dataclass(frozen=True, slots=True)
class Cond:
    """An expression, or a constant (``expr`` None); ``exact`` False marks a superset."""

    expr: Expr | None
    value: bool = True
    exact: bool = True


TRUE = Cond(None, True)
FALSE = Cond(None, False)
SUPERSET = Cond(None, True, exact=False)  # "maybe": checked in Python afterwards


def _and(operands: list[Cond]) -> Cond:
    if any(op.expr is None and not op.value for op in operands):
        return FALSE
    exact = all(op.exact for op in operands)
    exprs = [op.expr for op in operands if op.expr is not None]
    if not exprs:
        return Cond(None, True, exact)
    return Cond(exprs[0] if len(exprs) == 1 else join("and", exprs), True, exact)


def _or(operands: list[Cond]) -> Cond:
    exact = all(op.exact for op in operands)
    if any(op.expr is None and op.value for op in operands):
        return Cond(None, True, exact)
    exprs = [op.expr for op in operands if op.expr is not None]
    if not exprs:
        return FALSE
    return Cond(exprs[0] if len(exprs) == 1 else join("or", exprs), True, exact)


Pair = tuple[Cond, Cond]  # (the condition, its negation)


def _cmp(left: str, operator: str, value: FilterValue | tuple[FilterValue, ...]) -> Cond:
    return Cond((f"{left} {operator} ", Param(_param(value))))


def _param(value: FilterValue | tuple[FilterValue, ...]) -> str | int | float | bool | tuple:  # type: ignore[type-arg]
    if isinstance(value, tuple):
        return tuple(_param(item) for item in value)
    if value_kind(value) == UUID:
        return str(value)
    return value  # type: ignore[return-value]


def _exact_value(value: FilterValue) -> bool:
    kind = value_kind(value)
    if kind == NUMBER:
        return -_EXACT_LIMIT < value < _EXACT_LIMIT  # type: ignore[operator]
    if kind == STR:
        return expressible(value)  # type: ignore[arg-type]
    return True


@dataclass(frozen=True, slots=True)
class _Key:
    """A filtered key's paths and the stored kinds its filter value compares with."""

    metadata: str
    kinds: str
    compatible: tuple[str, ...]


@dataclass
class MilvusFilterCompiler(FilterCompiler[Pair]):
    """Filter -> (condition, negation) expressions; notes each key's type check.

    ``lenient`` (the store's ``type_checks=False``): an entry holding a value of an
    incompatible type matches neither a leaf nor its negation, instead of raising.
    """

    backend = "the Milvus store"
    lenient: bool = False
    probes: dict[str, set[str]] = field(default_factory=dict)
    probe_complete: bool = True
    incompatible: dict[str, set[str]] = field(default_factory=dict)  # every key, named or not

    def leaf(self, key: str, kind: str, values: tuple[FilterValue, ...]) -> _Key | None:
        """The paths of ``key``, noting its type check; None if the key or a value cannot be
        written exactly in an expression."""
        allowed = set(KINDS_OF[kind]) | ({"s"} if kind == UUID else set())
        clashing = {k for k in ALL_STORED_KINDS if k not in allowed}
        self.incompatible.setdefault(key, set()).update(clashing)
        if not key_expressible(key):
            self.probe_complete = False
            return None
        self.probes.setdefault(key, set()).update(clashing)
        if not all(_exact_value(value) for value in values):
            return None
        return _Key(path("metadata", key), path("kinds", key), tuple(sorted(allowed)))

    def guarded(
        self, key: _Key, positive: Cond, negative: Cond, *, nan: bool = False, typed: bool = True
    ) -> Pair:
        """Strict: as given (mismatches raise before). Lenient: both sides only for entries
        of a compatible kind; the negation also for a missing key (and a NaN if ``nan``).
        ``typed``: Milvus's own JSON comparison already fails for every incompatible kind,
        so the condition needs no kind guard (its negation still does)."""
        if not self.lenient:
            return positive, negative
        compatible = _cmp(key.kinds, "in", key.compatible)
        absent = [_cmp(key.kinds, "not in", ALL_STORED_KINDS)]
        if nan:
            absent.append(_cmp(key.kinds, "==", "x"))
        guarded = positive if typed else _and([positive, compatible])
        return guarded, _or([_and([negative, compatible]), *absent])

    def equality(self, key: str, value: FilterValue) -> Pair:
        found = self.leaf(key, value_kind(value), (value,))
        if found is None:
            return SUPERSET, SUPERSET
        return self.guarded(
            found,
            _cmp(found.metadata, "==", value),
            _cmp(found.metadata, "!=", value),
            typed=not _uuid_text(value),
        )

    def membership(self, key: str, values: tuple[FilterValue, ...]) -> Pair:
        found = self.leaf(key, value_kind(values[0]), values)
        if found is None:
            return SUPERSET, SUPERSET
        return self.guarded(
            found,
            _cmp(found.metadata, "in", values),
            _cmp(found.metadata, "not in", values),
            typed=not any(_uuid_text(value) for value in values),
        )

    def order(self, key: str, operator: str, value: FilterValue) -> Pair:
        kind = value_kind(value)
        found = self.leaf(key, kind, (value,))
        if found is None:
            return SUPERSET, SUPERSET
        positive = _cmp(found.metadata, operator, value)
        inverse = _cmp(found.metadata, _INVERSE[operator], value)
        if self.lenient:
            # a str ordering also compares stored UUIDs (kept as text): guard it
            return self.guarded(found, positive, inverse, nan=kind == NUMBER, typed=kind == NUMBER)
        ordered = _FINITE_OR_INF if kind == NUMBER else ("s",)
        incomparable = _cmp(found.kinds, "not in", ordered)  # missing key, NaN (or a mismatch)
        return positive, _or([inverse, incomparable])

    def is_equal_to(self, filter: IsEqualTo) -> Pair:
        return self.equality(filter.key, filter.value)

    def is_not_equal_to(self, filter: IsNotEqualTo) -> Pair:
        positive, negative = self.equality(filter.key, filter.value)
        return negative, positive

    def is_in(self, filter: IsIn) -> Pair:
        return self.membership(filter.key, filter.values)

    def is_not_in(self, filter: IsNotIn) -> Pair:
        positive, negative = self.membership(filter.key, filter.values)
        return negative, positive

    def contains_string(self, filter: ContainsString) -> Pair:
        found = self.leaf(filter.key, STR, (filter.value,))
        if found is None:
            return SUPERSET, SUPERSET
        if filter.value:
            pattern = "%" + _like_escape(filter.value) + "%"
            # "not like" does not exist in Milvus Lite: the negation is checked in Python.
            positive = Cond((f"{found.metadata} like ", Param(pattern)))
        else:  # every str contains "" (Milvus Lite's like "%" matches nothing)
            positive = _cmp(found.kinds, "==", "s")
        return self.guarded(found, positive, SUPERSET, typed=False)[0], SUPERSET

    def and_(self, operands: list[Pair]) -> Pair:
        return _and([p for p, _ in operands]), _or([n for _, n in operands])

    def or_(self, operands: list[Pair]) -> Pair:
        return _or([p for p, _ in operands]), _and([n for _, n in operands])

    def not_(self, operand: Pair) -> Pair:
        return operand[1], operand[0]


def _uuid_text(value: FilterValue) -> bool:
    """Whether a str filter value reads like a stored UUID (which is kept as that text)."""
    if type(value) is not str:
        return False
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


def _like_escape(text: str) -> str:
    """``text`` matched literally by ``like`` (``\\``, ``%`` and ``_`` escaped)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


@dataclass(frozen=True)
class CompiledFilter:
    """A filter's Milvus condition, its exactness, and its type-mismatch probe;
    ``incompatible``: each filtered key's stored kinds that would be a mismatch."""

    condition: Cond
    probe: Expr | None
    probe_complete: bool
    incompatible: dict[str, set[str]]


def compile_filter(condition: Filter, *, lenient: bool = False) -> CompiledFilter:
    """The Milvus expression of ``condition`` (see the module docstring)."""
    compiler = MilvusFilterCompiler(lenient=lenient)
    positive, _ = compiler.compile(condition)
    checks = [
        _cmp(path("kinds", key), "in", tuple(sorted(kinds)))
        for key, kinds in compiler.probes.items()
    ]
    probe = _or(checks).expr if checks else None
    return CompiledFilter(positive, probe, compiler.probe_complete, compiler.incompatible)


def matches(condition: Filter, metadata: Mapping[str, Any], *, lenient: bool = False) -> bool:
    """Whether ``metadata`` passes ``condition``: core's ``Filter.test``, or when ``lenient``
    the same with a type-mismatched leaf matching neither itself nor its negation."""
    if not lenient:
        return condition.test(metadata)
    return _lenient(condition, metadata, False)


def _lenient(condition: Filter, metadata: Mapping[str, Any], negated: bool) -> bool:
    if isinstance(condition, Not):
        return _lenient(condition.expression, metadata, not negated)
    if isinstance(condition, And | Or):
        results = [_lenient(operand, metadata, negated) for operand in condition.operands]
        return all(results) if isinstance(condition, And) != negated else any(results)
    try:
        return condition.test(metadata) != negated
    except InvalidFilterError:
        return False
