"""Filter values: their kinds, normalization and comparison, one rule for every store.

A store that translates filters (SQL, Milvus, Qdrant, the in-memory masks) uses these
helpers so that it agrees with :meth:`Filter.test` on what compares with what:

* :func:`value_kind` sorts a value into one of four kinds -- ``NUMBER`` (int and float,
  compared by exact numeric value), ``BOOL`` (not a number), ``STR`` (code point order)
  and ``UUID`` (which also matches a stored str equal to its canonical form);
* :func:`normalize_value` turns enum members, ``UUID`` subclasses and numpy scalars into
  exact ``str``/``int``/``float``/``bool``/``UUID`` values;
* :func:`mismatch_error` is the :class:`InvalidFilterError` every store raises when a
  stored value cannot be compared with a filter value.
"""

from __future__ import annotations

import math
import operator
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from ragloom.core.errors import InvalidFilterError
from ragloom.core.metadata import MetadataValue

__all__ = [
    "ALL_KINDS",
    "BOOL",
    "COMPARISONS",
    "NUMBER",
    "ORDERED_KINDS",
    "STR",
    "TEXT_KINDS",
    "UUID",
    "FilterValue",
    "compare",
    "describe",
    "exact_value",
    "filter_key",
    "filter_value",
    "filter_values",
    "is_member",
    "mismatch_error",
    "normalize_value",
    "stored_value",
    "value_kind",
]

FilterValue = MetadataValue

# Value kinds: values of one kind are comparable with each other.
NUMBER, BOOL, STR, UUID = "number", "bool", "str", "uuid"
ALL_KINDS = frozenset({NUMBER, BOOL, STR, UUID})
ORDERED_KINDS = frozenset({NUMBER, STR})
TEXT_KINDS = frozenset({STR})
_EXACT_TYPES = (str, int, float, bool, uuid.UUID)

COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}
"""The comparison operators of the filters, by symbol."""


def exact_value(value: MetadataValue) -> MetadataValue:
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


def normalize_value(value: object) -> MetadataValue | None:
    """``value`` as an exact metadata type (numpy scalars unwrapped), or None if it is none."""
    if isinstance(value, _EXACT_TYPES):
        return exact_value(value)
    if isinstance(value, np.generic):
        item = value.item()
        if isinstance(item, _EXACT_TYPES):
            return exact_value(item)
    return None


def value_kind(value: FilterValue) -> str:
    """The comparison kind of a normalized value: ``NUMBER``, ``BOOL``, ``STR`` or ``UUID``."""
    kind = type(value)
    if kind is bool:
        return BOOL
    if kind is int or kind is float:
        return NUMBER
    if kind is str:
        return STR
    return UUID


def describe(value: object) -> str:
    """``value`` and its type, for error messages (a tuple by the type of its values)."""
    if isinstance(value, tuple) and value:
        return f"{value!r} ({type(value[0]).__name__} values)"
    return f"{value!r} ({type(value).__name__})"


def mismatch_error(key: str, stored: object, value: object) -> InvalidFilterError:
    """The error for a stored value whose type cannot be compared with the filter value."""
    return InvalidFilterError(
        f"metadata key {key!r}: stored value {describe(stored)} cannot be compared "
        f"with filter value {describe(value)}"
    )


def stored_value(key: str, stored: object) -> MetadataValue:
    """A stored value, normalized; raises :class:`InvalidFilterError` if it is none."""
    value = normalize_value(stored)
    if value is None:
        raise InvalidFilterError(
            f"metadata key {key!r} holds {describe(stored)}, which is not a metadata value"
        )
    return value


def filter_key(key: object) -> str:
    """A filter's key, checked: a non-empty ``str`` (as exact ``str``)."""
    if not isinstance(key, str) or not key:
        raise InvalidFilterError(f"filter key must be a non-empty string, got {key!r}")
    return str.__str__(key)


def filter_value(key: str, value: object, kinds: frozenset[str], operation: str) -> FilterValue:
    """A filter's value, normalized and checked: finite, and of one of ``kinds``."""
    normalized = normalize_value(value)
    if normalized is None:
        raise InvalidFilterError(
            f"{operation} on key {key!r}: unsupported filter value {describe(value)}; "
            "use str, int, float, bool or uuid.UUID"
        )
    if type(normalized) is float and not math.isfinite(normalized):
        raise InvalidFilterError(
            f"{operation} on key {key!r}: filter value {value!r} is not a finite number"
        )
    kind = value_kind(normalized)
    if kind not in kinds:
        raise InvalidFilterError(
            f"{operation} on key {key!r}: {kind} value {value!r} is not supported; "
            f"{operation} takes {' or '.join(sorted(kinds))} values"
        )
    return normalized


def filter_values(key: str, values: object, operation: str) -> tuple[FilterValue, ...]:
    """The values of ``is_in``/``is_not_in``: a non-empty collection of one kind, deduplicated."""
    if isinstance(values, str | bytes | bytearray | Mapping) or not isinstance(values, Iterable):
        raise InvalidFilterError(
            f"{operation} on key {key!r} needs a collection of values, got {describe(values)}"
        )
    seen: set[tuple[type, FilterValue]] = set()
    result: list[FilterValue] = []
    for item in values:
        value = filter_value(key, item, ALL_KINDS, operation)
        if (type(value), value) not in seen:
            seen.add((type(value), value))
            result.append(value)
    if not result:
        raise InvalidFilterError(f"{operation} on key {key!r} needs at least one value")
    kinds = {value_kind(value) for value in result}
    if len(kinds) > 1:
        raise InvalidFilterError(
            f"{operation} on key {key!r} needs values of one type, "
            f"got {' and '.join(sorted(kinds))}"
        )
    return tuple(result)


def compare(key: str, op: str, stored: object, value: FilterValue) -> bool:
    """``stored <op> value`` under the filter semantics (raises on a type mismatch)."""
    actual = stored_value(key, stored)
    if value_kind(actual) == value_kind(value):
        return COMPARISONS[op](actual, value)
    if type(actual) is str and type(value) is uuid.UUID:
        return COMPARISONS[op](actual, str(value))
    raise mismatch_error(key, stored, value)


def is_member(key: str, stored: object, values: tuple[FilterValue, ...]) -> bool:
    """Whether ``stored`` equals one of ``values`` (raises on a type mismatch)."""
    actual = stored_value(key, stored)
    if value_kind(actual) == value_kind(values[0]):
        return any(actual == value for value in values)
    if type(actual) is str and type(values[0]) is uuid.UUID:
        return any(actual == str(value) for value in values)
    raise mismatch_error(key, stored, values)
