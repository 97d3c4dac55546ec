"""Metadata filters: a small typed AST, evaluated per row (``test``) or vectorized (``mask``).

Build filters with ``metadata_key("year").is_greater_than(2020)``, combine them with ``&``,
``|`` and ``~`` (or ``and_``, ``or_``, ``not_``). The nodes are plain frozen dataclasses so that
stores can translate them (SQL, Milvus, Qdrant) by matching on the class and reading its fields.

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
import math
import operator
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np
from numpy.typing import NDArray

from ragloom.core.errors import InvalidFilterError
from ragloom.core.metadata import MetadataValue

if TYPE_CHECKING:
    from ragloom.core.metadata_table import MetadataTable

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

FilterValue = MetadataValue

# Value kinds: values of one kind are comparable with each other.
_NUMBER, _BOOL, _STR, _UUID = "number", "bool", "str", "uuid"
_ALL_KINDS = frozenset({_NUMBER, _BOOL, _STR, _UUID})
_ORDERED_KINDS = frozenset({_NUMBER, _STR})
_TEXT_KINDS = frozenset({_STR})
_EXACT_TYPES = (str, int, float, bool, uuid.UUID)

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}

# The textual syntax shared by ``Filter.__str__`` and ``parse_filter``.
_RESERVED_WORDS = frozenset({"and", "or", "not", "in", "contains", "true", "false"})
_BARE_KEY = re.compile(r"[^\W\d][\w.\-]*")
_SIMPLE_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _exact_value(value: MetadataValue) -> MetadataValue:
    """``value`` as its exact base type (StrEnum -> str, IntEnum -> int, UUID subclass -> UUID)."""
    if type(value) in _EXACT_TYPES:  # bool cannot be subclassed, so it always is exact
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str.__str__(value)
    return uuid.UUID(int=value.int)


def _normalize_value(value: object) -> MetadataValue | None:
    """``value`` as an exact metadata type (numpy scalars unwrapped), or None if it is none."""
    if isinstance(value, _EXACT_TYPES):
        return _exact_value(value)
    if isinstance(value, np.generic):
        item = value.item()
        if isinstance(item, _EXACT_TYPES):
            return _exact_value(item)
    return None


def _kind_of(value: FilterValue) -> str:
    """The comparison kind of a normalized value: ``number``, ``bool``, ``str`` or ``uuid``."""
    kind = type(value)
    if kind is bool:
        return _BOOL
    if kind is int or kind is float:
        return _NUMBER
    if kind is str:
        return _STR
    return _UUID


def _describe(value: object) -> str:
    if isinstance(value, tuple) and value:
        return f"{value!r} ({type(value[0]).__name__} values)"
    return f"{value!r} ({type(value).__name__})"


def _mismatch_error(key: str, stored: object, value: object) -> InvalidFilterError:
    """The error for a stored value whose type cannot be compared with the filter value."""
    return InvalidFilterError(
        f"metadata key {key!r}: stored value {_describe(stored)} cannot be compared "
        f"with filter value {_describe(value)}"
    )


def _stored_value(key: str, stored: object) -> MetadataValue:
    value = _normalize_value(stored)
    if value is None:
        raise InvalidFilterError(
            f"metadata key {key!r} holds {_describe(stored)}, which is not a metadata value"
        )
    return value


def _filter_key(key: object) -> str:
    if not isinstance(key, str) or not key:
        raise InvalidFilterError(f"filter key must be a non-empty string, got {key!r}")
    return str.__str__(key)


def _filter_value(key: str, value: object, kinds: frozenset[str], operation: str) -> FilterValue:
    normalized = _normalize_value(value)
    if normalized is None:
        raise InvalidFilterError(
            f"{operation} on key {key!r}: unsupported filter value {_describe(value)}; "
            "use str, int, float, bool or uuid.UUID"
        )
    if type(normalized) is float and not math.isfinite(normalized):
        raise InvalidFilterError(
            f"{operation} on key {key!r}: filter value {value!r} is not a finite number"
        )
    kind = _kind_of(normalized)
    if kind not in kinds:
        raise InvalidFilterError(
            f"{operation} on key {key!r}: {kind} value {value!r} is not supported; "
            f"{operation} takes {' or '.join(sorted(kinds))} values"
        )
    return normalized


def _filter_values(key: str, values: object, operation: str) -> tuple[FilterValue, ...]:
    if isinstance(values, str | bytes | bytearray | Mapping) or not isinstance(values, Iterable):
        raise InvalidFilterError(
            f"{operation} on key {key!r} needs a collection of values, got {_describe(values)}"
        )
    seen: set[tuple[type, FilterValue]] = set()
    result: list[FilterValue] = []
    for item in values:
        value = _filter_value(key, item, _ALL_KINDS, operation)
        if (type(value), value) not in seen:
            seen.add((type(value), value))
            result.append(value)
    if not result:
        raise InvalidFilterError(f"{operation} on key {key!r} needs at least one value")
    kinds = {_kind_of(value) for value in result}
    if len(kinds) > 1:
        raise InvalidFilterError(
            f"{operation} on key {key!r} needs values of one type, "
            f"got {' and '.join(sorted(kinds))}"
        )
    return tuple(result)


def _compare(key: str, op: str, stored: object, value: FilterValue) -> bool:
    actual = _stored_value(key, stored)
    if _kind_of(actual) == _kind_of(value):
        return _OPS[op](actual, value)
    if type(actual) is str and type(value) is uuid.UUID:
        return _OPS[op](actual, str(value))
    raise _mismatch_error(key, stored, value)


def _is_member(key: str, stored: object, values: tuple[FilterValue, ...]) -> bool:
    actual = _stored_value(key, stored)
    if _kind_of(actual) == _kind_of(values[0]):
        return any(actual == value for value in values)
    if type(actual) is str and type(values[0]) is uuid.UUID:
        return any(actual == str(value) for value in values)
    raise _mismatch_error(key, stored, values)


def _quote(text: str, quote_char: str) -> str:
    """``text`` in ``quote_char`` quotes, escaped so that ``parse_filter`` reads it back."""
    out = [quote_char]
    for char in text:
        if char == quote_char:
            out.append("\\" + char)
        elif char in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[char])
        elif not char.isprintable():
            code = ord(char)
            out.append(
                f"\\x{code:02x}"
                if code < 0x100
                else f"\\u{code:04x}"
                if code < 0x10000
                else f"\\U{code:08x}"
            )
        else:
            out.append(char)
    out.append(quote_char)
    return "".join(out)


def _render_key(key: str) -> str:
    """``key`` bare when it is an identifier and not a reserved word, else in backticks."""
    if _BARE_KEY.fullmatch(key) and key.lower() not in _RESERVED_WORDS:
        return key
    return _quote(key, "`")


def _render_value(value: FilterValue) -> str:
    """A filter value as a literal of the textual syntax."""
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    if type(value) is float:
        return repr(value)
    if type(value) is str:
        return _quote(value, '"')
    return f'uuid("{value}")'


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
    def mask(self, table: MetadataTable) -> NDArray[np.bool_]:
        """``test`` for every row of ``table`` at once, as a new boolean array of ``len(table)``."""

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
        raise TypeError(
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
    _kinds: ClassVar[frozenset[str]] = _ORDERED_KINDS

    def __post_init__(self) -> None:
        key = _filter_key(self.key)
        object.__setattr__(self, "key", key)
        object.__setattr__(
            self, "value", _filter_value(key, self.value, self._kinds, self._operation)
        )

    def test(self, metadata: Mapping[str, Any]) -> bool:
        if self.key not in metadata:
            return self._negated
        return _compare(self.key, self._op, metadata[self.key], self.value) != self._negated

    def mask(self, table: MetadataTable) -> NDArray[np.bool_]:
        result = table._compare_mask(self.key, self._op, self.value)
        return np.logical_not(result, out=result) if self._negated else result

    def _identity(self) -> tuple[object, ...]:
        return (self.key, type(self.value), self.value)

    def _render(self) -> str:
        return f"{_render_key(self.key)} {self._symbol} {_render_value(self.value)}"


@dataclass(frozen=True, slots=True, eq=False)
class IsEqualTo(_Comparison):
    """``key == value`` (false when the key is missing)."""

    _operation = "is_equal_to"
    _symbol = "=="
    _op = "=="
    _kinds = _ALL_KINDS


@dataclass(frozen=True, slots=True, eq=False)
class IsNotEqualTo(_Comparison):
    """``key != value`` (true when the key is missing)."""

    _operation = "is_not_equal_to"
    _symbol = "!="
    _op = "=="
    _negated = True
    _kinds = _ALL_KINDS


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
    _kinds = _TEXT_KINDS

    def test(self, metadata: Mapping[str, Any]) -> bool:
        if self.key not in metadata:
            return False
        stored = metadata[self.key]
        actual = _stored_value(self.key, stored)
        if type(actual) is not str:
            raise _mismatch_error(self.key, stored, self.value)
        return self.value in actual

    def mask(self, table: MetadataTable) -> NDArray[np.bool_]:
        return table._contains_mask(self.key, self.value)


@dataclass(frozen=True, slots=True, eq=False)
class _Membership(Filter):
    """``key in values``: a non-empty tuple of values of one kind (ints and floats mix)."""

    key: str
    values: tuple[FilterValue, ...]

    _operation: ClassVar[str]
    _negated: ClassVar[bool] = False

    def __post_init__(self) -> None:
        key = _filter_key(self.key)
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "values", _filter_values(key, self.values, self._operation))

    def test(self, metadata: Mapping[str, Any]) -> bool:
        if self.key not in metadata:
            return self._negated
        return _is_member(self.key, metadata[self.key], self.values) != self._negated

    def mask(self, table: MetadataTable) -> NDArray[np.bool_]:
        result = table._in_mask(self.key, self.values)
        return np.logical_not(result, out=result) if self._negated else result

    def _identity(self) -> tuple[object, ...]:
        return (self.key, frozenset((type(value), value) for value in self.values))

    def _render(self) -> str:
        keyword = "not in" if self._negated else "in"
        values = ", ".join(_render_value(value) for value in self.values)
        return f"{_render_key(self.key)} {keyword} ({values})"


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
        raise InvalidFilterError(f"{owner} takes Filter operands, got {_describe(operand)}")


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

    def test(self, metadata: Mapping[str, Any]) -> bool:
        return all([operand.test(metadata) for operand in _flatten(self)])

    def mask(self, table: MetadataTable) -> NDArray[np.bool_]:
        first, *rest = _flatten(self)
        result = first.mask(table)
        for operand in rest:
            result &= operand.mask(table)
        return result

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

    def test(self, metadata: Mapping[str, Any]) -> bool:
        return any([operand.test(metadata) for operand in _flatten(self)])

    def mask(self, table: MetadataTable) -> NDArray[np.bool_]:
        first, *rest = _flatten(self)
        result = first.mask(table)
        for operand in rest:
            result |= operand.mask(table)
        return result

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

    def mask(self, table: MetadataTable) -> NDArray[np.bool_]:
        result = self.expression.mask(table)
        return np.logical_not(result, out=result)

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
        self.key = _filter_key(key)

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
        return IsIn(self.key, _filter_values(self.key, values, "is_in"))

    def is_not_in(self, values: Iterable[FilterValue]) -> IsNotIn:
        """The key is missing or its value equals none of ``values``."""
        return IsNotIn(self.key, _filter_values(self.key, values, "is_not_in"))

    def contains_string(self, value: str) -> ContainsString:
        """The stored str contains ``value`` (case-sensitive)."""
        return ContainsString(self.key, value)


def metadata_key(key: str) -> MetadataFilterBuilder:
    """Start a filter on ``key`` (LangChain4j's ``metadataKey``)."""
    return MetadataFilterBuilder(key)
