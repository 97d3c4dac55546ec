"""Metadata: a typed key-value map attached to documents, segments and queries.

Values are ``str``, ``int``, ``float``, ``bool`` or ``uuid.UUID``. ``bool`` is its own
type (never treated as an int), so that filters and stores see exactly what was put.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any, TypeVar, overload

from ragloom.core.errors import InvalidMetadataError

__all__ = [
    "MetadataValue",
    "ALLOWED_TYPES",
    "validate_key",
    "validate_value",
    "validated_dict",
    "Metadata",
    "as_metadata",
]

MetadataValue = str | int | float | bool | uuid.UUID
ALLOWED_TYPES: tuple[type, ...] = (str, bool, int, float, uuid.UUID)
_EXACT_TYPES = frozenset(ALLOWED_TYPES)
_T = TypeVar("_T")


def validate_key(key: object) -> str:
    """Return ``key`` if it is a non-empty string, else raise :class:`InvalidMetadataError`."""
    if not isinstance(key, str) or not key:
        raise InvalidMetadataError(f"metadata key must be a non-empty string, got {key!r}")
    return key


def validate_value(key: str, value: object) -> MetadataValue:
    """Return ``value`` normalised to an allowed type, or raise naming ``key``.

    numpy scalars are accepted and turned into the Python type they stand for.
    """
    if type(value) in ALLOWED_TYPES:
        return value  # type: ignore[return-value]
    if isinstance(value, ALLOWED_TYPES):  # subclasses, e.g. enum.StrEnum
        return value  # type: ignore[return-value]
    item = getattr(value, "item", None)
    if item is not None and type(value).__module__ == "numpy":
        converted = item()
        if isinstance(converted, ALLOWED_TYPES):
            return converted  # type: ignore[return-value]
    raise InvalidMetadataError(
        f"metadata key {key!r}: value {value!r} has type {type(value).__name__}; "
        "allowed types are str, int, float, bool and uuid.UUID"
    )


def validated_dict(entries: Mapping[str, Any] | None) -> dict[str, MetadataValue]:
    """A new dict of the entries of ``entries`` (None: empty), each key and value validated.

    A plain dict of exact types (the usual case) is checked in one pass and copied at C
    speed; anything else goes entry by entry through :func:`validate_key` and
    :func:`validate_value`.
    """
    if not entries:
        return {}
    if type(entries) is dict:
        for key, value in entries.items():
            if type(value) not in _EXACT_TYPES or type(key) is not str or not key:
                break
        else:
            return entries.copy()
    return {validate_key(key): validate_value(key, value) for key, value in entries.items()}


class Metadata(MutableMapping[str, MetadataValue]):
    """A validated ``dict``-like map from non-empty string keys to typed values."""

    __slots__ = ("_data",)

    def __init__(self, entries: Mapping[str, Any] | None = None, /, **kwargs: Any) -> None:
        data = validated_dict(entries)
        for key, value in kwargs.items():
            data[validate_key(key)] = validate_value(key, value)
        self._data = data

    @classmethod
    def from_dict(cls, entries: Mapping[str, Any] | None) -> Metadata:
        """Build metadata from a mapping, validating every entry."""
        return cls(entries)

    @classmethod
    def _trusted(cls, data: dict[str, MetadataValue]) -> Metadata:
        """Wrap an already validated dict without copying it (internal fast path)."""
        instance = cls.__new__(cls)
        instance._data = data
        return instance

    def __getitem__(self, key: str) -> MetadataValue:
        return self._data[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._data[validate_key(key)] = validate_value(key, value)

    def __delitem__(self, key: str) -> None:
        del self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Metadata):
            return _typed_items(self._data) == _typed_items(other._data)
        if isinstance(other, Mapping):
            return _typed_items(self._data) == _typed_items(dict(other))
        return NotImplemented

    def __repr__(self) -> str:
        return f"Metadata({self._data!r})"

    def put(self, key: str, value: Any) -> Metadata:
        """Set ``key`` to ``value`` and return ``self`` (chainable, like the spec's ``put``)."""
        self[key] = value
        return self

    def put_all(self, entries: Mapping[str, Any]) -> Metadata:
        """Set every entry of ``entries``; nothing is changed if one entry is invalid."""
        validated = {validate_key(k): validate_value(k, v) for k, v in entries.items()}
        self._data.update(validated)
        return self

    def remove(self, key: str) -> MetadataValue | None:
        """Remove ``key`` and return its value, or ``None`` if it was absent."""
        return self._data.pop(key, None)

    def contains_key(self, key: str) -> bool:
        """Whether ``key`` is present (the spec's ``containsKey``)."""
        return key in self._data

    def copy(self) -> Metadata:
        """A shallow copy (values are immutable, so this is a full copy)."""
        return Metadata._trusted(dict(self._data))

    def to_dict(self) -> dict[str, MetadataValue]:
        """A plain ``dict`` copy of the entries."""
        return dict(self._data)

    @overload
    def get_typed(self, key: str, kind: type[_T]) -> _T | None: ...
    @overload
    def get_typed(self, key: str, kind: type[_T], default: _T) -> _T: ...
    def get_typed(self, key: str, kind: type[_T], default: _T | None = None) -> _T | None:
        """Return the value of ``key`` checked to be of ``kind`` (int accepted for float).

        Raises :class:`InvalidMetadataError` naming the key when the stored type differs.
        """
        if key not in self._data:
            return default
        value = self._data[key]
        if kind is float and type(value) is int:
            return float(value)  # type: ignore[return-value]
        if (kind is int and type(value) is bool) or not isinstance(value, kind):
            raise InvalidMetadataError(
                f"metadata key {key!r} holds {type(value).__name__} {value!r}, not {kind.__name__}"
            )
        return value

    def get_string(self, key: str) -> str | None:
        """The ``str`` value of ``key``, ``None`` when absent."""
        return self.get_typed(key, str)

    def get_int(self, key: str) -> int | None:
        """The ``int`` value of ``key``, ``None`` when absent."""
        return self.get_typed(key, int)

    def get_float(self, key: str) -> float | None:
        """The numeric value of ``key`` as ``float``, ``None`` when absent."""
        return self.get_typed(key, float)

    def get_bool(self, key: str) -> bool | None:
        """The ``bool`` value of ``key``, ``None`` when absent."""
        return self.get_typed(key, bool)

    def get_uuid(self, key: str) -> uuid.UUID | None:
        """The ``uuid.UUID`` value of ``key``, ``None`` when absent."""
        return self.get_typed(key, uuid.UUID)


def _typed_items(data: Mapping[str, Any]) -> dict[str, tuple[type, Any]]:
    """Entries keyed with their type, so that ``True`` and ``1`` are not equal metadata."""
    return {k: (type(v), v) for k, v in data.items()}


def as_metadata(value: Metadata | Mapping[str, Any] | None) -> Metadata:
    """Coerce ``None``, a mapping or a :class:`Metadata` into a :class:`Metadata` (no copy)."""
    if value is None:
        return Metadata()
    if isinstance(value, Metadata):
        return value
    return Metadata(value)
