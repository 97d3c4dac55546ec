"""One type per metadata key per store: the write-side check every store shares.

A filter that compares a key with a value of another type raises (the spec's rule), so a
single row holding ``tenant=7`` would make every ``tenant == "a"`` query fail for every
tenant. Stores therefore refuse the mistyped *write* instead: a key's type is the type its
``metadata_schema`` declares, else the type of the values the store holds for it (the first
write fixes it). Types are the filter kinds of :mod:`ragloom.core.filter_values`: ``str``,
``bool``, ``uuid.UUID``, and numbers (``int`` and ``float`` compare with each other, so they
are one type). A batch is refused as a whole (stores validate a batch completely before
they change anything); :class:`~ragloom.core.EmbeddingStoreIngestor` writes one document
per call, so one mistyped document fails alone.

A store calls :func:`batch_kinds` on the batch's metadata (before taking its lock), then
asks its storage which kinds it holds for those keys (:func:`conflicting_kinds` lists the
kinds to look for) and raises :func:`held_type_error` for a conflict. Checks run per key
over a whole batch with C-level ``map``/``set``, not per value in Python.
"""

from __future__ import annotations

import operator
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence

import numpy as np

from ragloom.core.errors import InvalidArgumentError, MetadataTypeError
from ragloom.core.filter_values import ALL_KINDS, BOOL, NUMBER, STR, UUID
from ragloom.core.metadata import MetadataValue
from ragloom.core.stores.metadata_columns import CodedColumn, MetadataColumn

__all__ = [
    "KIND_NAMES",
    "BatchKinds",
    "batch_kinds",
    "check_held",
    "check_held_row",
    "column_kinds",
    "conflicting_kinds",
    "held_type_error",
    "kind_of",
    "kind_of_type",
    "metadata_schema",
]

KIND_NAMES = {STR: "str", NUMBER: "int/float", BOOL: "bool", UUID: "uuid.UUID"}
"""How messages name each kind."""

_KIND_OF_TYPE: dict[type, str] = {
    str: STR,
    int: NUMBER,
    float: NUMBER,
    bool: BOOL,
    uuid.UUID: UUID,
}

BatchKinds = dict[str, tuple[str, int]]
"""Key -> (its kind in the batch, the position of the first row holding it)."""


def kind_of(value: object) -> str:
    """The kind of a metadata value (subclasses such as ``StrEnum`` included), or ``"?"``."""
    return _KIND_OF_TYPE.get(type(value)) or kind_of_type(type(value))


def metadata_schema(schema: Mapping[str, type] | None) -> dict[str, str]:
    """Key -> kind of a declaration such as ``{"tenant": str, "year": int}``, checked."""
    if schema is None:
        return {}
    if not isinstance(schema, Mapping):
        raise InvalidArgumentError(
            f"metadata_schema must map keys to types, got {type(schema).__name__}"
        )
    declared: dict[str, str] = {}
    for key, declared_type in schema.items():
        if not isinstance(key, str) or not key:
            raise InvalidArgumentError(f"metadata_schema: key must be a non-empty str, got {key!r}")
        kind = _KIND_OF_TYPE.get(declared_type) if isinstance(declared_type, type) else None
        if kind is None:
            raise InvalidArgumentError(
                f"metadata_schema: key {key!r} has type {declared_type!r}; "
                "use str, int, float, bool or uuid.UUID"
            )
        declared[key] = kind
    return declared


def _name(kind: str) -> str:
    return KIND_NAMES.get(kind, kind)


def held_type_error(key: str, held: str, given: str, position: int) -> MetadataTypeError:
    """The error for segment ``position`` writing ``given`` where the store holds ``held``."""
    return MetadataTypeError(
        f"segment {position}: metadata key {key!r} expects {_name(held)} values (the type the "
        f"store holds for it), got {_name(given)}; a metadata key keeps one type per store"
    )


def batch_kinds(
    rows: Sequence[Mapping[str, MetadataValue]] | None,
    declared: Mapping[str, str] | None = None,
) -> BatchKinds:
    """The one kind of each metadata key of a batch; raises :class:`MetadataTypeError` if
    two rows give a key different types, or a row contradicts ``declared`` (key -> kind)."""
    if not rows:
        return {}
    keys: set[str] = set().union(*rows)
    columns: dict[str, MetadataColumn] = {
        key: list(map(operator.methodcaller("get", key), rows)) for key in keys
    }
    return column_kinds(columns, declared)


def column_kinds(
    columns: Mapping[str, MetadataColumn],
    declared: Mapping[str, str] | None = None,
) -> BatchKinds:
    """:func:`batch_kinds` of a batch given column by column: key -> the values of the rows,
    ``None`` where a row lacks the key (a list, an array or a coded column)."""
    kinds: BatchKinds = {}
    for key in sorted(columns):
        values = columns[key]
        expected = (declared or {}).get(key)
        if isinstance(values, np.ndarray) and values.dtype.kind not in _ARRAY_KINDS:
            values = values.tolist()  # a column of str or objects: typed value by value
        position = 0
        if isinstance(values, np.ndarray):
            found = {_ARRAY_KINDS[values.dtype.kind]} if len(values) else set()
        elif isinstance(values, CodedColumn):
            found = set(map(kind_of, values.values))
            present = values.codes >= 0
            position = int(present.argmax()) if len(present) else 0
        else:
            types = set(map(type, values))
            found = {_KIND_OF_TYPE.get(t) or kind_of_type(t) for t in types - {type(None)}}
            if type(None) in types:
                position = next((i for i, value in enumerate(values) if value is not None), 0)
        if not found:
            continue  # no row holds the key
        if len(found) == 1 and (expected is None or found == {expected}):
            kinds[key] = (found.pop(), position)
            continue
        listed = values if isinstance(values, list) else values.tolist()
        _raise_mixed(key, listed, expected)
    return kinds


_ARRAY_KINDS = {"b": BOOL, "i": NUMBER, "u": NUMBER, "f": NUMBER}


def _raise_mixed(key: str, values: Sequence[object], expected: str | None) -> None:
    """Raise the :class:`MetadataTypeError` for the first row whose kind differs from the
    first row's (or from ``expected``, the declared kind)."""
    first: tuple[str, int] | None = (expected, -1) if expected is not None else None
    for position, value in enumerate(values):
        if value is None:
            continue
        kind = kind_of(value)
        if first is None:
            first = (kind, position)
        elif kind != first[0]:
            if first[1] < 0:
                raise MetadataTypeError(
                    f"segment {position}: metadata key {key!r} is declared "
                    f"{_name(first[0])} in metadata_schema, got {_name(kind)}"
                )
            raise MetadataTypeError(
                f"segment {position}: metadata key {key!r} expects {_name(first[0])} values "
                f"(as segment {first[1]} of the batch), got {_name(kind)}; a metadata key "
                "keeps one type per store"
            )
    raise AssertionError("unreachable: the column holds two kinds")  # pragma: no cover


def kind_of_type(value_type: type) -> str:
    """The kind of values of ``value_type`` (a subclass of a metadata type), or ``"?"``."""
    for base in (bool, int, float, str, uuid.UUID):  # bool first: it is an int
        if issubclass(value_type, base):
            return _KIND_OF_TYPE[base]
    return "?"


def conflicting_kinds(kinds: BatchKinds) -> dict[str, list[str]]:
    """Key -> the kinds a store must not already hold for it (what a probe looks for)."""
    return {key: sorted(ALL_KINDS - {kind}) for key, (kind, _) in kinds.items()}


def check_held(kinds: BatchKinds, held: Callable[[str], Collection[str]]) -> None:
    """Raise :func:`held_type_error` for the first key whose ``held(key)`` kinds (what the
    store holds for it) include another kind than the batch's."""
    for key, (kind, position) in kinds.items():
        other = [k for k in held(key) if k != kind]
        if other:
            raise held_type_error(key, other[0], kind, position)


def check_held_row(kinds: BatchKinds, row: Mapping[str, MetadataValue]) -> None:
    """Raise :func:`held_type_error` if the stored metadata ``row`` (what a store's probe
    found) holds one of the batch's keys with another kind."""
    for key, (kind, position) in kinds.items():
        if key in row and kind_of(row[key]) != kind:
            raise held_type_error(key, kind_of(row[key]), kind, position)
