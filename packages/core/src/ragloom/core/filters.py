"""Metadata filters: a small typed AST, evaluated per row with ``test``.

Stores translate the tree with a :class:`~ragloom.core.filter_compiler.FilterCompiler`
(SQL, Milvus, Qdrant, the in-memory store's vectorized masks); the value rules they share
live in :mod:`ragloom.core.filter_values`, the textual syntax in
:mod:`ragloom.core.filter_syntax`.

Build filters with ``metadata_key("year").is_greater_than(2020)``, combine them with ``&``,
``|`` and ``~`` (or ``and_``, ``or_``, ``not_``). The nodes are plain frozen dataclasses whose
fields (``key``, ``value``, ``values``, ``operands``, ``expression``) a compiler reads.

Semantics, fixed here once for every store (they follow LangChain4j):

* a missing key makes every comparison false, except ``IsNotEqualTo`` and ``IsNotIn`` (true);
  ``Not`` is plain negation;
* int and float compare by exact numeric value (``1 == 1.0``, and ``2**53 + 1 != 2.0**53``);
  bool is not a number; a stored float NaN equals nothing and is neither greater nor less;
* str is ordered by code point; bool and UUID support only equality and membership;
* a UUID filter value also matches a stored str equal to its canonical form ``str(uuid)``
  (as in LangChain4j, for stores that keep UUIDs as text); a str filter value against a
  stored UUID is a type mismatch;
* comparing incompatible types (stored str vs int filter value, ...) raises
  :class:`InvalidFilterError` naming the key and both values, never silently false.
  ``And``/``Or`` evaluate every operand, so such an error is never hidden by another branch;
* bad filter values (None, lists, NaN, infinities, bool/UUID in an ordering, empty or mixed
  ``is_in`` collections, empty keys) raise :class:`InvalidFilterError` when the filter is built.

``And``/``Or`` compare equal modulo associativity: ``(a & b) & c == a & (b & c)``.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from ragloom.core.errors import InvalidArgumentTypeError, InvalidFilterError
from ragloom.core.filter_syntax import render_key, render_value
from ragloom.core.filter_values import (
    ALL_KINDS,
    ORDERED_KINDS,
    TEXT_KINDS,
    FilterValue,
    compare,
    describe,
    filter_key,
    filter_value,
    filter_values,
    is_member,
    mismatch_error,
    stored_value,
)

__all__ = [
    "And",
    "ContainsString",
    "Filter",
    "FilterValue",
    "IsEqualTo",
    "IsGreaterThan",
    "IsGreaterThanOrEqualTo",
    "IsIn",
    "IsLessThan",
    "IsLessThanOrEqualTo",
    "IsNotEqualTo",
    "IsNotIn",
    "MetadataFilterBuilder",
    "Not",
    "Or",
    "and_",
    "metadata_key",
    "not_",
    "or_",
]


class Filter(abc.ABC):
    """A condition on :class:`~ragloom.core.Metadata`; combine with ``&``, ``|`` and ``~``.

    Filters are immutable and hashable. ``bool(filter)`` raises: ``f1 and f2`` would silently
    drop ``f1`` -- use ``f1 & f2``, and ``filter is not None`` to test for presence.
    """

    __slots__ = ()

    @abc.abstractmethod
    def test(self, metadata: Mapping[str, Any]) -> bool:
        """Whether ``metadata`` matches; raises :class:`InvalidFilterError` on a type mismatch."""

    @abc.abstractmethod
    def _identity(self) -> tuple[object, ...]:
        """What equality and hashing compare (values with their exact types)."""

    @abc.abstractmethod
    def _render(self) -> str:
        """This filter in the syntax of :func:`~ragloom.core.parse_filter`."""

    def __and__(self, other: object) -> Filter:
        if not isinstance(other, Filter):
            return NotImplemented
        return And(self, other)

    def __or__(self, other: object) -> Filter:
        if not isinstance(other, Filter):
            return NotImplemented
        return Or(self, other)

    def __invert__(self) -> Filter:
        return Not(self)

    def __bool__(self) -> bool:
        raise InvalidArgumentTypeError(
            "a Filter has no truth value: combine filters with &, | and ~ "
            "(not 'and', 'or', 'not'), and test for a filter with 'is not None'"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Filter):
            return NotImplemented
        return type(self) is type(other) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._identity()))

    def __str__(self) -> str:
        return self._render()


@dataclass(frozen=True, slots=True, eq=False)
class _Comparison(Filter):
    """``key <op> value``; subclasses set the operator and which value kinds they accept."""

    key: str
    value: FilterValue

    _operation: ClassVar[str]
    _symbol: ClassVar[str]
    _op: ClassVar[str]  # the comparison evaluated; the result is inverted when _negated
    _negated: ClassVar[bool] = False
    _kinds: ClassVar[frozenset[str]] = ORDERED_KINDS

    def __post_init__(self) -> None:
        key = filter_key(self.key)
        object.__setattr__(self, "key", key)
        object.__setattr__(
            self, "value", filter_value(key, self.value, self._kinds, self._operation)
        )

    def test(self, metadata: Mapping[str, Any]) -> bool:
        if self.key not in metadata:
            return self._negated
        return compare(self.key, self._op, metadata[self.key], self.value) != self._negated

    def _identity(self) -> tuple[object, ...]:
        return (self.key, type(self.value), self.value)

    def _render(self) -> str:
        return f"{render_key(self.key)} {self._symbol} {render_value(self.value)}"


@dataclass(frozen=True, slots=True, eq=False)
class IsEqualTo(_Comparison):
    """``key == value`` (false when the key is missing)."""

    _operation = "is_equal_to"
    _symbol = "=="
    _op = "=="
    _kinds = ALL_KINDS


@dataclass(frozen=True, slots=True, eq=False)
class IsNotEqualTo(_Comparison):
    """``key != value`` (true when the key is missing)."""

    _operation = "is_not_equal_to"
    _symbol = "!="
    _op = "=="
    _negated = True
    _kinds = ALL_KINDS


@dataclass(frozen=True, slots=True, eq=False)
class IsGreaterThan(_Comparison):
    """``key > value`` for numbers or str (false when the key is missing)."""

    _operation = "is_greater_than"
    _symbol = ">"
    _op = ">"


@dataclass(frozen=True, slots=True, eq=False)
class IsGreaterThanOrEqualTo(_Comparison):
    """``key >= value`` for numbers or str (false when the key is missing)."""

    _operation = "is_greater_than_or_equal_to"
    _symbol = ">="
    _op = ">="


@dataclass(frozen=True, slots=True, eq=False)
class IsLessThan(_Comparison):
    """``key < value`` for numbers or str (false when the key is missing)."""

    _operation = "is_less_than"
    _symbol = "<"
    _op = "<"


@dataclass(frozen=True, slots=True, eq=False)
class IsLessThanOrEqualTo(_Comparison):
    """``key <= value`` for numbers or str (false when the key is missing)."""

    _operation = "is_less_than_or_equal_to"
    _symbol = "<="
    _op = "<="


@dataclass(frozen=True, slots=True, eq=False)
class ContainsString(_Comparison):
    """The stored str contains ``value`` (case-sensitive); a non-str stored value raises."""

    value: str

    _operation = "contains_string"
    _symbol = "contains"
    _kinds = TEXT_KINDS

    def test(self, metadata: Mapping[str, Any]) -> bool:
        if self.key not in metadata:
            return False
        stored = metadata[self.key]
        actual = stored_value(self.key, stored)
        if type(actual) is not str:
            raise mismatch_error(self.key, stored, self.value)
        return self.value in actual


@dataclass(frozen=True, slots=True, eq=False)
class _Membership(Filter):
    """``key in values``: a non-empty tuple of values of one kind (ints and floats mix)."""

    key: str
    values: tuple[FilterValue, ...]

    _operation: ClassVar[str]
    _negated: ClassVar[bool] = False

    def __post_init__(self) -> None:
        key = filter_key(self.key)
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "values", filter_values(key, self.values, self._operation))

    def test(self, metadata: Mapping[str, Any]) -> bool:
        if self.key not in metadata:
            return self._negated
        return is_member(self.key, metadata[self.key], self.values) != self._negated

    def _identity(self) -> tuple[object, ...]:
        return (self.key, frozenset((type(value), value) for value in self.values))

    def _render(self) -> str:
        keyword = "not in" if self._negated else "in"
        values = ", ".join(render_value(value) for value in self.values)
        return f"{render_key(self.key)} {keyword} ({values})"


@dataclass(frozen=True, slots=True, eq=False)
class IsIn(_Membership):
    """``key`` equals one of ``values`` (false when the key is missing)."""

    _operation = "is_in"


@dataclass(frozen=True, slots=True, eq=False)
class IsNotIn(_Membership):
    """``key`` equals none of ``values`` (true when the key is missing)."""

    _operation = "is_not_in"
    _negated = True


def _check_operand(owner: str, operand: object) -> None:
    if not isinstance(operand, Filter):
        raise InvalidFilterError(f"{owner} takes Filter operands, got {describe(operand)}")


_Junction = TypeVar("_Junction", "And", "Or")


def _flatten(node: And | Or) -> list[Filter]:
    """The operands of a chain of nodes of ``node``'s class, in order, without recursion."""
    cls = type(node)
    operands: list[Filter] = []
    stack: list[Filter] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, And | Or) and type(current) is cls:
            stack.append(current.right)
            stack.append(current.left)
        else:
            operands.append(current)
    return operands


def _balanced(cls: type[_Junction], operands: list[Filter]) -> Filter:
    """``operands`` joined by ``cls`` as a _balanced tree, so long chains stay shallow."""
    if len(operands) == 1:
        return operands[0]
    middle = (len(operands) + 1) // 2
    return cls(_balanced(cls, operands[:middle]), _balanced(cls, operands[middle:]))


@dataclass(frozen=True, slots=True, eq=False)
class And(Filter):
    """Both ``left`` and ``right`` match (both are always evaluated)."""

    left: Filter
    right: Filter

    def __post_init__(self) -> None:
        _check_operand("And", self.left)
        _check_operand("And", self.right)

    @property
    def operands(self) -> list[Filter]:
        """The operands of this chain of ``And`` nodes, in order (``a & b & c``: three)."""
        return _flatten(self)

    def test(self, metadata: Mapping[str, Any]) -> bool:
        return all([operand.test(metadata) for operand in _flatten(self)])

    def _identity(self) -> tuple[object, ...]:
        return tuple(_flatten(self))

    def _render(self) -> str:
        return " and ".join(
            f"({operand._render()})" if isinstance(operand, Or) else operand._render()
            for operand in _flatten(self)
        )


@dataclass(frozen=True, slots=True, eq=False)
class Or(Filter):
    """``left`` or ``right`` matches (both are always evaluated)."""

    left: Filter
    right: Filter

    def __post_init__(self) -> None:
        _check_operand("Or", self.left)
        _check_operand("Or", self.right)

    @property
    def operands(self) -> list[Filter]:
        """The operands of this chain of ``Or`` nodes, in order (``a & b & c``: three)."""
        return _flatten(self)

    def test(self, metadata: Mapping[str, Any]) -> bool:
        return any([operand.test(metadata) for operand in _flatten(self)])

    def _identity(self) -> tuple[object, ...]:
        return tuple(_flatten(self))

    def _render(self) -> str:
        return " or ".join(operand._render() for operand in _flatten(self))


@dataclass(frozen=True, slots=True, eq=False)
class Not(Filter):
    """The negation of ``expression`` (a missing key is not special here)."""

    expression: Filter

    def __post_init__(self) -> None:
        _check_operand("Not", self.expression)

    def test(self, metadata: Mapping[str, Any]) -> bool:
        return not self.expression.test(metadata)

    def _identity(self) -> tuple[object, ...]:
        return (self.expression,)

    def _render(self) -> str:
        return f"not ({self.expression._render()})"


def _junction(cls: type[_Junction], name: str, filters: tuple[Filter, ...]) -> Filter:
    if not filters:
        raise InvalidFilterError(f"{name} needs at least one filter")
    for operand in filters:
        _check_operand(name, operand)
    return _balanced(cls, list(filters))


def and_(*filters: Filter) -> Filter:
    """All of ``filters`` match (one filter is returned as is)."""
    return _junction(And, "and_", filters)


def or_(*filters: Filter) -> Filter:
    """Any of ``filters`` matches (one filter is returned as is)."""
    return _junction(Or, "or_", filters)


def not_(expression: Filter) -> Filter:
    """``expression`` does not match."""
    return Not(expression)


class MetadataFilterBuilder:
    """Builds comparisons on one key: ``metadata_key("lang").is_in(["en", "de"])``."""

    __slots__ = ("key",)

    def __init__(self, key: str) -> None:
        self.key = filter_key(key)

    def is_equal_to(self, value: FilterValue) -> IsEqualTo:
        """The stored value equals ``value``."""
        return IsEqualTo(self.key, value)

    def is_not_equal_to(self, value: FilterValue) -> IsNotEqualTo:
        """The key is missing or its value differs from ``value``."""
        return IsNotEqualTo(self.key, value)

    def is_greater_than(self, value: int | float | str) -> IsGreaterThan:
        """The stored value is greater than ``value``."""
        return IsGreaterThan(self.key, value)

    def is_greater_than_or_equal_to(self, value: int | float | str) -> IsGreaterThanOrEqualTo:
        """The stored value is greater than or equal to ``value``."""
        return IsGreaterThanOrEqualTo(self.key, value)

    def is_less_than(self, value: int | float | str) -> IsLessThan:
        """The stored value is less than ``value``."""
        return IsLessThan(self.key, value)

    def is_less_than_or_equal_to(self, value: int | float | str) -> IsLessThanOrEqualTo:
        """The stored value is less than or equal to ``value``."""
        return IsLessThanOrEqualTo(self.key, value)

    def is_in(self, values: Iterable[FilterValue]) -> IsIn:
        """The stored value equals one of ``values`` (a non-empty collection of one type)."""
        return IsIn(self.key, filter_values(self.key, values, "is_in"))

    def is_not_in(self, values: Iterable[FilterValue]) -> IsNotIn:
        """The key is missing or its value equals none of ``values``."""
        return IsNotIn(self.key, filter_values(self.key, values, "is_not_in"))

    def contains_string(self, value: str) -> ContainsString:
        """The stored str contains ``value`` (case-sensitive)."""
        return ContainsString(self.key, value)


def metadata_key(key: str) -> MetadataFilterBuilder:
    """Start a filter on ``key`` (LangChain4j's ``metadataKey``)."""
    return MetadataFilterBuilder(key)
