"""ragloom filters -> Qdrant ``models.Filter``, with core's semantics.

Each metadata key is stored in one typed payload field per kind (``_payload``), so:

* ``==``/``in`` on str, bool and UUID are Qdrant keyword/bool matches; a UUID filter
  value also matches a stored str equal to its canonical form (two fields, ``should``);
* numbers are one float64 field, compared with ``Range``: int and float by value. An int
  filter value that is not a float64 is turned into the exact float bounds (``x < 2**53+1``
  is ``x <= 2**53`` over stored floats); stored ints are always exact floats;
* ``contains_string`` is ``MatchSubstring`` (byte-wise, case-sensitive: exact);
* ``!=``/``not in`` are ``must_not`` of the positive condition: true when the key is missing;
* a str ordering (``>``, ``<=``, ...) has no Qdrant form: it compiles to the exact
  superset "holds a str at this key" and the result is marked inexact, so the store
  checks each candidate with :meth:`Filter.test` (``not`` of an inexact part has no
  superset but everything).

Type mismatches: each comparison records the payload fields of the kinds it cannot
compare with (``mismatch``); the store probes the ``kinds`` field for them and raises
:class:`InvalidFilterError` like the in-memory store.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from qdrant_client import models

from ragloom.core.errors import InvalidFilterError
from ragloom.core.filter_compiler import FilterCompiler
from ragloom.core.filter_values import (
    BOOL,
    NUMBER,
    STR,
    UUID,
    FilterValue,
    mismatch_error,
    value_kind,
)
from ragloom.core.filters import (
    ContainsString,
    Filter,
    IsEqualTo,
    IsIn,
    IsNotEqualTo,
    IsNotIn,
)
from ragloom.core.kit.steps import ClientCall, Steps
from ragloom.stores.qdrant._payload import decode_meta
from ragloom.stores.qdrant._payload import field as payload_field

__all__ = [
    "CompiledFilter",
    "Native",
    "QdrantFilterCompiler",
    "check_types",
    "compile_filter",
]

# Stored kinds a filter value of each kind cannot be compared with.
_INCOMPATIBLE = {
    NUMBER: (STR, BOOL, UUID),
    STR: (NUMBER, BOOL, UUID),
    UUID: (NUMBER, BOOL),
    BOOL: (NUMBER, STR, UUID),
}
# A condition no point satisfies: "kinds" only ever holds field names.
_NOTHING = models.FieldCondition(key="kinds", match=models.MatchValue(value="!"))


@dataclass(frozen=True)
class Native:
    """A Qdrant filter matching a superset of the entries (None: every entry).

    ``exact`` says the superset is the exact set, so no check after the query is needed.
    """

    filter: models.Filter | None
    exact: bool


@dataclass
class CompiledFilter:
    """A compiled filter: the native part, and the fields that would be a type mismatch."""

    native: Native
    mismatch: dict[str, tuple[str, Any]] = field(default_factory=dict)


def _leaf(condition: models.Condition) -> Native:
    return Native(models.Filter(must=[condition]), exact=True)


def _any(conditions: list[models.Condition]) -> models.Condition:
    """One condition true when any of ``conditions`` is (nothing when there are none)."""
    if not conditions:
        return _NOTHING
    if len(conditions) == 1:
        return conditions[0]
    return models.Filter(should=conditions)


def _utf8(text: str) -> bool:
    """Whether ``text`` can be stored (the store refuses lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _int_bounds(value: int) -> tuple[float, float]:
    """The floats just below-or-at and at-or-above ``value`` (equal when it is exact)."""
    try:
        near = float(value)
    except OverflowError:
        near = math.inf if value > 0 else -math.inf
    if near == value:
        return near, near
    if near < value:
        return near, math.nextafter(near, math.inf)
    return math.nextafter(near, -math.inf), near


def _range(name: str, op: str, value: FilterValue) -> models.Condition:
    """``field <op> value`` over stored float64 numbers, exact for any int or float."""
    if type(value) is float:
        low = high = value
    else:
        assert isinstance(value, int)
        low, high = _int_bounds(value)
    exact = low == high
    is_number = models.FieldCondition(key="kinds", match=models.MatchValue(value=name))
    if op == "==":
        if not exact or math.isinf(low):
            return _NOTHING
        return models.FieldCondition(key=name, range=models.Range(gte=low, lte=low))
    if op in (">", ">="):  # x > v, x >= v: at or above `high` (strictly above if exact and >)
        if high == math.inf:
            return _NOTHING
        if high == -math.inf:
            return is_number
        if exact and op == ">":
            return models.FieldCondition(key=name, range=models.Range(gt=high))
        return models.FieldCondition(key=name, range=models.Range(gte=high))
    # x < v, x <= v: at or below `low` (strictly below if exact and <)
    if low == -math.inf:
        return _NOTHING
    if low == math.inf:
        return is_number
    if exact and op == "<":
        return models.FieldCondition(key=name, range=models.Range(lt=low))
    return models.FieldCondition(key=name, range=models.Range(lte=low))


class QdrantFilterCompiler(FilterCompiler[Native]):
    """ragloom filters -> :class:`Native` Qdrant filters (see the module docstring).

    One instance per filter: it collects the fields a type mismatch would be stored in.
    """

    backend = "the Qdrant store"

    def __init__(self) -> None:
        self.mismatch: dict[str, tuple[str, Any]] = {}

    def _check(self, key: str, kind: str, value: Any) -> None:
        for other in _INCOMPATIBLE[kind]:
            self.mismatch.setdefault(payload_field(other, key), (key, value))

    def _equal(self, key: str, value: FilterValue) -> models.Condition:
        kind = value_kind(value)
        self._check(key, kind, value)
        return _any(self._equal_forms(key, kind, [value]))

    def _member(self, key: str, values: tuple[FilterValue, ...]) -> models.Condition:
        kind = value_kind(values[0])
        self._check(key, kind, values)
        return _any(self._equal_forms(key, kind, list(values)))

    @staticmethod
    def _equal_forms(key: str, kind: str, values: list[FilterValue]) -> list[models.Condition]:
        """Conditions, one of which holds when the stored value equals one of ``values``."""
        if kind == NUMBER:
            forms = [_range(payload_field(NUMBER, key), "==", value) for value in values]
            return [form for form in forms if form is not _NOTHING]
        if kind == BOOL:
            return [
                models.FieldCondition(
                    key=payload_field(BOOL, key), match=models.MatchValue(value=v)
                )
                for v in values
                if isinstance(v, bool)
            ]
        texts = [v for v in (str(value) for value in values) if _utf8(v)]
        if not texts:
            return []
        names = [payload_field(STR, key)] + ([payload_field(UUID, key)] if kind == UUID else [])
        match: models.MatchValue | models.MatchAny = (
            models.MatchValue(value=texts[0]) if len(texts) == 1 else models.MatchAny(any=texts)
        )
        return [models.FieldCondition(key=name, match=match) for name in names]

    def order(self, key: str, operator: str, value: FilterValue) -> Native:
        kind = value_kind(value)
        self._check(key, kind, value)
        if kind == NUMBER:
            return _leaf(_range(payload_field(NUMBER, key), operator, value))
        # str order: Qdrant has none; "holds a str here" is the exact superset.
        name = payload_field(STR, key)
        return Native(
            models.Filter(
                must=[models.FieldCondition(key="kinds", match=models.MatchValue(value=name))]
            ),
            exact=False,
        )

    def is_equal_to(self, filter: IsEqualTo) -> Native:
        return _leaf(self._equal(filter.key, filter.value))

    def is_not_equal_to(self, filter: IsNotEqualTo) -> Native:
        return self.not_(_leaf(self._equal(filter.key, filter.value)))

    def is_in(self, filter: IsIn) -> Native:
        return _leaf(self._member(filter.key, filter.values))

    def is_not_in(self, filter: IsNotIn) -> Native:
        return self.not_(_leaf(self._member(filter.key, filter.values)))

    def contains_string(self, filter: ContainsString) -> Native:
        self._check(filter.key, STR, filter.value)
        name = payload_field(STR, filter.key)
        if not _utf8(filter.value):
            return _leaf(_NOTHING)
        if not filter.value:  # every str contains "": "holds a str here"
            return _leaf(models.FieldCondition(key="kinds", match=models.MatchValue(value=name)))
        return _leaf(
            models.FieldCondition(key=name, match=models.MatchSubstring(substring=filter.value))
        )

    def and_(self, operands: list[Native]) -> Native:
        parts: list[models.Condition] = [op.filter for op in operands if op.filter is not None]
        return Native(
            models.Filter(must=parts) if parts else None, all(op.exact for op in operands)
        )

    def or_(self, operands: list[Native]) -> Native:
        if any(op.filter is None for op in operands):
            return Native(None, exact=all(op.exact for op in operands))
        parts: list[models.Condition] = [op.filter for op in operands if op.filter is not None]
        return Native(models.Filter(should=parts), all(op.exact for op in operands))

    def not_(self, operand: Native) -> Native:
        if not operand.exact:  # the complement of a superset bounds nothing
            return Native(None, exact=False)
        if operand.filter is None:  # not(everything): nothing
            return _leaf(_NOTHING)
        return Native(models.Filter(must_not=[operand.filter]), exact=True)


def compile_filter(condition: Filter) -> CompiledFilter:
    """The Qdrant form of ``condition`` and the fields a type mismatch would be in."""
    if not isinstance(condition, Filter):
        raise InvalidFilterError(f"filter must be a ragloom Filter, got {type(condition).__name__}")
    compiler = QdrantFilterCompiler()
    native = compiler.compile(condition)
    return CompiledFilter(native, compiler.mismatch)


def check_types(compiled: CompiledFilter, collection: str) -> Steps[None]:
    """Raise core's InvalidFilterError if a point of ``collection`` stores a value whose
    type clashes with the filter's (one scroll for the first point holding a clashing
    kind under a filtered key)."""
    if not compiled.mismatch:
        return
    probe = models.Filter(
        must=[
            models.FieldCondition(key="kinds", match=models.MatchAny(any=list(compiled.mismatch)))
        ]
    )
    records, _ = yield ClientCall.of(
        "checking filter types",
        "scroll",
        collection,
        scroll_filter=probe,
        limit=1,
        with_payload=["kinds", "meta"],
    )
    if not records or records[0].payload is None:
        return
    payload = records[0].payload
    name = next(name for name in payload["kinds"] if name in compiled.mismatch)
    key, value = compiled.mismatch[name]
    raise mismatch_error(key, decode_meta(payload)[key], value)
