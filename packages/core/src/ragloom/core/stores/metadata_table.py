"""MetadataTable: the metadata of N rows in typed numpy columns, so filters evaluate as masks.

This is the in-memory store's filtered-search hot path. Each key has two arrays of the
table's capacity: ``codes`` (int8 type code, 0 = key missing in that row) and ``payload``
(int64): the int itself, a float's IEEE bits, a bool as 0/1, or for str, UUID and ints beyond
int64 an index into the column's dictionary of distinct values. Dictionary-encoding makes str
equality and ``in`` plain integer compares; per-key type counts make the type check O(1) and
let a column holding one type skip the type test. Not thread-safe: the owner locks.
:func:`~ragloom.core.stores.filter_mask.filter_mask` evaluates a whole filter over a table.
"""

from __future__ import annotations

import math
import operator
import struct
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError
from ragloom.core.filter_values import (
    BOOL,
    COMPARISONS,
    NUMBER,
    STR,
    UUID,
    FilterValue,
    exact_value,
    mismatch_error,
    value_kind,
)
from ragloom.core.metadata import Metadata, MetadataValue, validate_key, validate_value
from ragloom.core.stores._columnar import Arrays, StringColumn, encode_strings
from ragloom.core.stores.metadata_columns import CodedColumn, MetadataColumn

__all__ = ["CodedColumn", "MetadataColumn", "MetadataTable"]

_MISSING, _BOOL_CODE, _INT_CODE, _FLOAT_CODE, _STR_CODE, _UUID_CODE, _BIGINT_CODE = range(7)
_N_CODES = 7
_OBJECT_CODES = (_STR_CODE, _UUID_CODE, _BIGINT_CODE)
_CODES_OF_KIND = {
    NUMBER: (_INT_CODE, _FLOAT_CODE, _BIGINT_CODE),
    BOOL: (_BOOL_CODE,),
    STR: (_STR_CODE,),
    UUID: (_UUID_CODE, _STR_CODE),
}
_FILTER_KIND_OF_CODE = {code: kind for kind, codes in _CODES_OF_KIND.items() for code in codes}
_FILTER_KIND_OF_CODE[_STR_CODE] = STR  # a stored str is a str (UUID filters also match it)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_NP_OPS: dict[str, Callable[[Any, Any], NDArray[np.bool_]]] = {
    "==": operator.eq,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}
_FEW = 2  # up to this many candidates, == per candidate beats np.isin and gathers
_VECTOR_MIN = 16  # below this many rows, plain Python beats numpy's per-call overhead
_DOUBLE, _BITS = struct.Struct("<d"), struct.Struct("<q")
# Saved dictionary values: the kind of each (its text is str(value)) and the type code of
# the rows that may refer to it.
_STR_KIND, _UUID_KIND, _BIGINT_KIND = range(3)
_SAVED_KIND_OF_CODE = np.array([-1, -1, -1, -1, _STR_KIND, _UUID_KIND, _BIGINT_KIND], dtype=np.int8)


class _Absent:
    """Marks a key missing from a row, while encoding."""


_ABSENT = _Absent()

Mask = NDArray[np.bool_]
# type codes and payloads of encoded values: arrays for whole columns, lists for a few values
_Encoded = tuple[NDArray[np.int8] | list[int], NDArray[np.int64] | list[int]]


def _int64_compare(values: NDArray[np.int64], op: str, target: int | float) -> Mask:
    """Exactly ``values <op> target`` for int64 ``values`` and any finite number ``target``."""
    if type(target) is float:
        if target.is_integer():
            target = int(target)
        elif op == "==":
            return np.zeros(len(values), dtype=bool)
        else:  # no int lies strictly between floor(target) and target
            op = ">" if op in (">", ">=") else "<="
            target = math.floor(target)
    if target > _INT64_MAX:
        return np.full(len(values), op in ("<", "<="))
    if target < _INT64_MIN:
        return np.full(len(values), op in (">", ">="))
    return _NP_OPS[op](values, np.int64(target))


def _float64_compare(values: NDArray[np.float64], op: str, target: int | float) -> Mask:
    """Exactly ``values <op> target``, also for ints that no float64 represents."""
    if type(target) is int:
        try:
            nearest = float(target)
        except OverflowError:
            nearest = math.inf if target > 0 else -math.inf
        if nearest != target:  # exact int/float comparison; no float lies between the two
            if op == "==":
                return np.zeros(len(values), dtype=bool)
            above = op in (">", ">=")
            op = (">" if above else "<=") if nearest < target else (">=" if above else "<")
        target = nearest
    return _NP_OPS[op](values, target)


def _isin(values: NDArray[Any], candidates: Sequence[int] | Sequence[float]) -> Mask:
    """``np.isin``: one compare per candidate for a few, sorting for many (never its
    ``table`` method, which is slow on int64 payloads)."""
    if len(candidates) <= _FEW:
        matches: Mask = values == candidates[0]
        for candidate in candidates[1:]:
            matches |= values == candidate
        return matches
    matches = np.isin(values, np.asarray(candidates, dtype=values.dtype), kind="sort")
    return matches


def _as_float(value: int | float) -> float | None:
    """``value`` as a float if that is exact, else None."""
    if type(value) is float:
        return value
    try:
        as_float = float(value)
    except OverflowError:
        return None
    return as_float if as_float == value else None


def _as_int64(value: int | float) -> int | None:
    """``value`` as an int in the int64 range if that is exact, else None."""
    if isinstance(value, float):
        if not value.is_integer():
            return None
        value = int(value)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


def _counts(codes: NDArray[np.int8]) -> list[int]:
    """Rows of each type code (0 for missing: only present codes are counted); one compare
    pass per code beats ``np.bincount``, which first widens the int8 codes to intp."""
    return [0, *(int(np.count_nonzero(codes == code)) for code in range(1, _N_CODES))]


class _Column:
    """The values of one key: type codes, payloads and the dictionary of object values."""

    __slots__ = ("codes", "counts", "index", "objects", "payload")

    def __init__(self, capacity: int) -> None:
        self.codes: NDArray[np.int8] = np.zeros(capacity, dtype=np.int8)
        self.payload: NDArray[np.int64] = np.zeros(capacity, dtype=np.int64)
        self.counts: list[int] = [0] * _N_CODES
        self.objects: list[MetadataValue] = []
        self.index: dict[MetadataValue, int] = {}

    def copy(self) -> _Column:
        column = _Column(0)
        column.codes = self.codes.copy()
        column.payload = self.payload.copy()
        column.counts = list(self.counts)
        column.objects = list(self.objects)
        column.index = dict(self.index)
        return column

    def resize(self, capacity: int) -> None:
        codes = np.zeros(capacity, dtype=np.int8)
        payload = np.zeros(capacity, dtype=np.int64)
        keep = min(capacity, len(self.codes))
        codes[:keep] = self.codes[:keep]
        payload[:keep] = self.payload[:keep]
        self.codes, self.payload = codes, payload

    def intern(self, values: list[Any]) -> list[int]:
        """Dictionary codes of ``values``, adding the new ones."""
        index = self.index
        for value in dict.fromkeys(values):  # the distinct values, in first-seen order
            if value not in index:
                index[value] = len(index)
                self.objects.append(value)
        return list(map(index.__getitem__, values))

    def intern_array(self, values: list[Any]) -> NDArray[np.int64]:
        """:meth:`intern` as an array (no list of codes in between)."""
        index = self.index
        for value in dict.fromkeys(values):
            if value not in index:
                index[value] = len(index)
                self.objects.append(value)
        return np.fromiter(map(index.__getitem__, values), dtype=np.int64, count=len(values))

    def present(self) -> int:
        return sum(self.counts)

    def value(self, row: int) -> MetadataValue:
        value: MetadataValue = _decode(
            self, self.codes[row : row + 1], self.payload[row : row + 1]
        )[0]
        return value

    def compact(self, keep: Mask, size: int) -> None:
        """Keep the rows of ``keep`` (a mask over the first ``size`` rows), in order."""
        codes = self.codes[:size][keep]
        kept = len(codes)
        self.codes[:kept] = codes
        self.codes[kept:size] = _MISSING
        self.payload[:kept] = self.payload[:size][keep]
        self.counts = _counts(codes)
        self.shrink_dictionary(kept)

    def shrink_dictionary(self, size: int) -> None:
        """Drop the dictionary values no row refers to, once they outnumber the rows."""
        if len(self.objects) <= 2 * size + 64:
            return
        rows = np.flatnonzero(np.isin(self.codes[:size], _OBJECT_CODES))
        used, inverse = np.unique(self.payload[rows], return_inverse=True)
        self.objects = [self.objects[code] for code in used.tolist()]
        self.index = {value: code for code, value in enumerate(self.objects)}
        self.payload[rows] = inverse


def _object_kind(value: MetadataValue) -> int:
    """The saved kind of a dictionary value (str, UUID or an int beyond int64)."""
    if type(value) is str:
        return _STR_KIND
    return _UUID_KIND if type(value) is uuid.UUID else _BIGINT_KIND


def _column_from_arrays(arrays: Arrays, prefix: str, size: int, key: str) -> _Column:
    """One saved column, checked: codes, payloads and dictionary agree (see ``to_arrays``)."""
    try:
        codes, payload, kinds = (arrays[f"{prefix}.{n}"] for n in ("codes", "payload", "kinds"))
    except KeyError as exc:
        raise ValueError(f"metadata key {key!r}: array {exc} missing") from exc
    texts = StringColumn(arrays, f"{prefix}.objects", len(kinds)).to_list()
    if (
        codes.dtype != np.int8
        or codes.shape != (size,)
        or payload.dtype != np.int64
        or payload.shape != (size,)
        or kinds.dtype != np.uint8
        or kinds.ndim != 1
    ):
        raise ValueError(f"metadata key {key!r}: arrays of the wrong type or shape")
    if size and (codes.min() < 0 or codes.max() >= _N_CODES):
        raise ValueError(f"metadata key {key!r}: invalid type codes")
    if None in texts or (kinds > _BIGINT_KIND).any():
        raise ValueError(f"metadata key {key!r}: invalid dictionary values")
    objects: list[MetadataValue] = texts  # type: ignore[assignment]
    for row in np.flatnonzero(kinds != _STR_KIND).tolist():
        text = str(texts[row])
        value: MetadataValue = uuid.UUID(text) if kinds[row] == _UUID_KIND else int(text)
        if kinds[row] == _BIGINT_KIND and _INT64_MIN <= int(value) <= _INT64_MAX:
            raise ValueError(f"metadata key {key!r}: {value} is not a big int")
        objects[row] = value
    counts = _counts(codes)
    _check_references(key, codes, payload, counts, kinds, len(objects))
    if counts[_BOOL_CODE]:
        bools = payload[codes == _BOOL_CODE]
        if ((bools < 0) | (bools > 1)).any():
            raise ValueError(f"metadata key {key!r}: invalid bool values")
    column = _Column(0)
    column.codes, column.payload, column.counts = codes, payload, counts
    column.objects = objects
    column.index = dict(zip(objects, range(len(objects)), strict=True))
    if len(column.index) != len(objects):
        raise ValueError(f"metadata key {key!r}: duplicate dictionary values")
    return column


def _check_references(
    key: str,
    codes: NDArray[np.int8],
    payload: NDArray[np.int64],
    counts: list[int],
    kinds: NDArray[np.uint8],
    size: int,
) -> None:
    """Raise unless every row of a str, UUID or big-int code refers to a dictionary value
    of that kind (vectorized; no gather when every row is of one kind)."""
    referring = sum(counts[code] for code in _OBJECT_CODES)
    if not referring:
        return
    every = referring == len(codes)
    selected = None if every else codes >= _STR_CODE  # the object codes are the last ones
    targets = payload if selected is None else payload[selected]
    if targets.min() < 0 or targets.max() >= size:
        raise ValueError(f"metadata key {key!r}: rows refer to missing dictionary values")
    if kinds.min() == kinds.max():  # one kind: no row may hold another object code
        expected = _OBJECT_CODES[int(kinds[0])]
        wrong = any(counts[code] for code in _OBJECT_CODES if code != expected)
    else:
        row_codes = codes if selected is None else codes[selected]
        wrong = bool((kinds[targets] != _SAVED_KIND_OF_CODE[row_codes]).any())
    if wrong:
        raise ValueError(f"metadata key {key!r}: rows refer to dictionary values of another type")


def _decode(column: _Column, codes: NDArray[np.int8], payload: NDArray[np.int64]) -> list[Any]:
    """The Python values of cells given by ``codes`` and ``payload`` (all present)."""
    values: list[Any] = payload.tolist()
    floats: list[float] | None = None
    for i, code in enumerate(codes.tolist()):
        if code == _BOOL_CODE:
            values[i] = bool(values[i])
        elif code == _FLOAT_CODE:
            if floats is None:
                floats = payload.view(np.float64).tolist()
            values[i] = floats[i]
        elif code != _INT_CODE:
            values[i] = column.objects[values[i]]
    return values


def _encode(column: _Column, key: str, values: list[Any], absent: object = _ABSENT) -> _Encoded:
    """Type codes and payloads of ``values`` (``absent`` = missing); validates every value."""
    if len(values) >= _VECTOR_MIN:
        encoded = _encode_uniform(column, values, absent)
        if encoded is not None:
            return encoded
    return _encode_each(column, key, values, absent)


def _encode_array(values: NDArray[Any]) -> _Encoded | None:
    """Codes and payloads of a numpy column of bools or numbers (None: ints beyond int64)."""
    kind = values.dtype.kind
    if kind == "b":
        code, payload = _BOOL_CODE, values.astype(np.int64)
    elif kind == "f":
        code, payload = _FLOAT_CODE, values.astype(np.float64).view(np.int64)
    elif kind == "u" and values.dtype.itemsize == 8 and len(values) and values.max() > _INT64_MAX:
        return None
    else:
        code, payload = _INT_CODE, values.astype(np.int64)
    return np.full(len(values), code, dtype=np.int8), payload


def _encode_coded(column: _Column, key: str, coded: CodedColumn) -> _Encoded | None:
    """Codes and payloads of a coded column of str or UUID values (None: other values)."""
    types = set(map(type, coded.values))
    if types != {str} and types != {uuid.UUID}:
        return None
    codes = np.where(coded.codes >= 0, _STR_CODE if str in types else _UUID_CODE, _MISSING)
    lookup = np.array([*column.intern(coded.values), 0], dtype=np.int64)  # -1: the 0 at the end
    return codes.astype(np.int8), lookup[coded.codes]


def _encode_uniform(column: _Column, values: list[Any], absent: object) -> _Encoded | None:
    """Whole-column encoding when every present value has one exact type, else None."""
    types = set(map(type, values))
    rows: list[int] | None = None
    present = values
    if type(absent) in types:
        types.discard(type(absent))
        rows = [i for i, value in enumerate(values) if value is not absent]
        present = [values[i] for i in rows]
    if len(types) != 1:
        return None
    kind = types.pop()
    if kind is int:
        try:
            payload = np.array(present, dtype=np.int64)
        except OverflowError:  # beyond int64: dictionary-encoded one by one
            return None
        code = _INT_CODE
    elif kind is float:
        payload = np.array(present, dtype=np.float64).view(np.int64)
        code = _FLOAT_CODE
    elif kind is bool:
        payload = np.array(present, dtype=np.int64)
        code = _BOOL_CODE
    elif kind is str or kind is uuid.UUID:
        payload = column.intern_array(present)
        code = _STR_CODE if kind is str else _UUID_CODE
    else:
        return None
    if rows is None:
        return np.full(len(values), code, dtype=np.int8), payload
    codes = np.zeros(len(values), dtype=np.int8)
    codes[rows] = code
    scattered = np.zeros(len(values), dtype=np.int64)
    scattered[rows] = payload
    return codes, scattered


def _encode_each(column: _Column, key: str, values: list[Any], absent: object) -> _Encoded:
    """Value-by-value encoding (mixed types, subclasses, numpy scalars, small batches)."""
    codes = [_MISSING] * len(values)
    payload = [0] * len(values)
    object_rows: list[int] = []
    object_values: list[MetadataValue] = []
    for row, raw in enumerate(values):
        if raw is absent:
            continue
        value = exact_value(validate_value(key, raw))
        if isinstance(value, bool):
            codes[row], payload[row] = _BOOL_CODE, int(value)
        elif isinstance(value, int) and _INT64_MIN <= value <= _INT64_MAX:
            codes[row], payload[row] = _INT_CODE, value
        elif isinstance(value, float):
            codes[row], payload[row] = _FLOAT_CODE, _BITS.unpack(_DOUBLE.pack(value))[0]
        else:
            codes[row] = (
                _STR_CODE
                if isinstance(value, str)
                else _UUID_CODE
                if isinstance(value, uuid.UUID)
                else _BIGINT_CODE
            )
            object_rows.append(row)
            object_values.append(value)
    for row, code in zip(object_rows, column.intern(object_values), strict=True):
        payload[row] = code
    return codes, payload


def _as_dict(row: Mapping[str, MetadataValue]) -> Mapping[str, Any]:
    if type(row) is dict:
        return row
    if isinstance(row, Metadata):
        return row._data  # already validated; avoids copying every row
    return dict(row)


class MetadataTable:
    """The metadata of N rows as typed columns, for vectorized filtering (``filter_mask``).

    Appends are amortized O(1) (capacity doubling); ``delete`` compacts and keeps order.
    Rows are returned as plain dicts of exact types (a StrEnum value comes back as str).
    """

    __slots__ = ("_capacity", "_columns", "_size")

    def __init__(self) -> None:
        self._columns: dict[str, _Column] = {}
        self._size = 0
        self._capacity = 0

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"MetadataTable(rows={self._size}, keys={list(self._columns)!r})"

    def append(self, rows: Sequence[Mapping[str, MetadataValue]]) -> None:
        """Add ``rows`` at the end; nothing is added if one of them is invalid."""
        dicts: list[Mapping[str, Any]] = list(rows)
        if set(map(type, dicts)) != {dict}:  # plain dicts (the usual case) need no conversion
            dicts = [_as_dict(row) for row in dicts]
        if not dicts:
            return
        if not any(dicts):
            self.append_empty(len(dicts))
            return
        keys = dict.fromkeys(dicts[0])  # the first row's order, then the others sorted
        keys.update(dict.fromkeys(sorted(set().union(*dicts).difference(keys), key=str)))
        encoded = []
        for key in keys:
            validate_key(key)
            column = self._columns.get(key) or _Column(0)
            try:
                values = list(map(operator.itemgetter(key), dicts))
            except KeyError:
                values = [d.get(key, _ABSENT) for d in dicts]
            encoded.append((key, column, *_encode(column, key, values)))
        start = self._size
        self._reserve(start + len(dicts))
        for key, column, codes, payload in encoded:
            self._write(key, column, start, codes, payload)
        self._size = start + len(dicts)

    def append_columns(self, columns: Mapping[str, MetadataColumn], count: int) -> None:
        """Add ``count`` rows given column by column (key -> its values, ``None`` where a row
        lacks the key; arrays and coded columns are encoded as a whole); nothing is added if
        a value is invalid. The same rows as :meth:`append` of the row dicts."""
        if count <= 0:
            return
        encoded = []
        for key, values in columns.items():
            validate_key(key)
            column = self._columns.get(key) or _Column(0)
            found: _Encoded | None = None
            if isinstance(values, CodedColumn):
                found = _encode_coded(column, key, values)
            elif isinstance(values, np.ndarray):
                found = _encode_array(values)
            if found is None:
                listed = values.tolist() if isinstance(values, np.ndarray | CodedColumn) else values
                found = _encode(column, key, listed, None)
            if len(found[0]) != count:
                raise InvalidArgumentError(
                    f"metadata {key!r}: {len(found[0])} values for {count} rows"
                )
            encoded.append((key, column, *found))
        start = self._size
        self._reserve(start + count)
        for key, column, codes, payload in encoded:
            self._write(key, column, start, codes, payload)
        written = {key for key, _, codes, _ in encoded}
        for key, column in self._columns.items():
            if key not in written:
                column.codes[start : start + count] = _MISSING
                column.payload[start : start + count] = 0
        self._size = start + count
        self._drop_empty_columns()

    def append_empty(self, count: int) -> None:
        """Add ``count`` rows without metadata at the end (as ``append([{}] * count)``)."""
        if count <= 0:
            return
        start = self._size
        self._reserve(start + count)
        for column in self._columns.values():
            column.codes[start : start + count] = _MISSING
            column.payload[start : start + count] = 0
        self._size = start + count

    def set_row(self, i: int, row: Mapping[str, MetadataValue]) -> None:
        """Replace the metadata of row ``i``; nothing changes if ``row`` is invalid."""
        i = self._row_index(i)
        values = _as_dict(row)
        encoded = []
        for key, value in values.items():
            validate_key(key)
            column = self._columns.get(key) or _Column(0)
            encoded.append((key, column, *_encode(column, key, [value])))
        for column in self._columns.values():
            code = int(column.codes[i])
            if code:
                column.counts[code] -= 1
                column.codes[i] = _MISSING
        for key, column, codes, payload in encoded:
            self._write(key, column, i, codes, payload)
            column.shrink_dictionary(self._size)
        self._drop_empty_columns()

    def blank(self, positions: NDArray[np.integer[Any]] | Sequence[int]) -> None:
        """Empty the metadata of the rows at ``positions``, keeping the rows (vectorized).

        A store that tombstones removed rows blanks them, so their values no longer take
        part in filters, type checks included.
        """
        selected = self._positions(positions)
        if not selected.size:
            return
        for column in self._columns.values():
            column.codes[selected] = _MISSING
            column.counts = _counts(column.codes[: self._size])
            column.shrink_dictionary(self._size)
        self._drop_empty_columns()

    def delete(self, positions: NDArray[np.integer[Any]] | Sequence[int]) -> None:
        """Remove the rows at ``positions`` (duplicates allowed); the others keep their order."""
        selected = self._positions(positions)
        if not selected.size:
            return
        keep = np.ones(self._size, dtype=bool)
        keep[selected] = False
        for column in self._columns.values():
            column.compact(keep, self._size)
        self._size = int(keep.sum())
        self._drop_empty_columns()

    def key_kinds(self, key: str) -> list[str]:
        """The filter kinds of the values the live rows hold for ``key`` (from the type
        counts, O(1)); :mod:`~ragloom.core.stores.metadata_types` keeps it to one."""
        column = self._columns.get(key)
        if column is None:
            return []
        return list({_FILTER_KIND_OF_CODE[code] for code, n in enumerate(column.counts) if n})

    def row(self, i: int) -> dict[str, MetadataValue]:
        """The metadata of row ``i`` (negative ``i`` counts from the end)."""
        i = self._row_index(i)
        return {key: column.value(i) for key, column in self._columns.items() if column.codes[i]}

    def take(
        self, positions: NDArray[np.integer[Any]] | Sequence[int]
    ) -> list[dict[str, MetadataValue]]:
        """The metadata of the rows at ``positions``, in that order."""
        return self._take(self._positions(positions))

    def _take(self, selected: NDArray[np.intp]) -> list[dict[str, MetadataValue]]:
        """:meth:`take` of positions known to be valid (the owner's search results)."""
        rows: list[dict[str, MetadataValue]] = [{} for _ in range(len(selected))]
        for key, column in self._columns.items():
            codes = column.codes.take(selected)
            if codes.all():  # every row holds the key: no second gather
                values = _decode(column, codes, column.payload.take(selected))
                for row, value in zip(rows, values, strict=True):
                    row[key] = value
                continue
            present = codes.nonzero()[0]
            if not present.size:
                continue
            values = _decode(column, codes[present], column.payload[selected[present]])
            for row_index, value in zip(present.tolist(), values, strict=True):
                rows[row_index][key] = value
        return rows

    def clear(self) -> None:
        """Remove every row and release the memory."""
        self._columns = {}
        self._size = 0
        self._capacity = 0

    def copy(self) -> MetadataTable:
        """An independent copy."""
        table = MetadataTable()
        table._columns = {key: column.copy() for key, column in self._columns.items()}
        table._size = self._size
        table._capacity = self._capacity
        return table

    # -- columnar persistence --------------------------------------------------------------

    def to_arrays(self) -> tuple[list[str], Arrays]:
        """The keys, and the arrays of every column (``metadata.<i>.codes``, ``.payload``,
        ``.kinds`` and the ``.objects`` string column) for a columnar save."""
        keys = list(self._columns)
        arrays: Arrays = {}
        for i, column in enumerate(self._columns.values()):
            prefix = f"metadata.{i}"
            arrays[f"{prefix}.codes"] = column.codes[: self._size]
            arrays[f"{prefix}.payload"] = column.payload[: self._size]
            kinds = [_object_kind(v) for v in column.objects]
            arrays[f"{prefix}.kinds"] = np.array(kinds, dtype=np.uint8)
            texts = column.objects if set(kinds) <= {_STR_KIND} else list(map(str, column.objects))
            arrays.update(encode_strings(texts, f"{prefix}.objects"))  # type: ignore[arg-type]
        return keys, arrays

    @classmethod
    def from_arrays(cls, size: int, keys: object, arrays: Arrays) -> MetadataTable:
        """The table :meth:`to_arrays` saved, every array checked (vectorized); the arrays
        are used, not copied. Raises ``ValueError`` (or ``InvalidMetadataError``) naming
        the defect."""
        if not isinstance(keys, list):
            raise ValueError(f"metadata keys must be a list, got {keys!r}")
        table = cls()
        table._size = table._capacity = size
        for i, key in enumerate(keys):
            validate_key(key)
            if key in table._columns:
                raise ValueError(f"metadata key {key!r} appears twice")
            column = _column_from_arrays(arrays, f"metadata.{i}", size, key)
            if column.present():
                table._columns[key] = column
        return table

    # -- storage ---------------------------------------------------------------------------

    def _reserve(self, size: int) -> None:
        if size <= self._capacity:
            return
        self._capacity = max(size, 2 * self._capacity, 16)
        for column in self._columns.values():
            column.resize(self._capacity)

    def _write(
        self,
        key: str,
        column: _Column,
        start: int,
        codes: NDArray[np.int8] | list[int],
        payload: NDArray[np.int64] | list[int],
    ) -> None:
        if key not in self._columns:
            column.resize(self._capacity)
            self._columns[key] = column
        column.codes[start : start + len(codes)] = codes
        column.payload[start : start + len(codes)] = payload
        counts = column.counts
        if isinstance(codes, list):
            for code in codes:
                counts[code] += 1
            counts[_MISSING] = 0
        else:
            for code, count in enumerate(_counts(codes)):
                counts[code] += count

    def _drop_empty_columns(self) -> None:
        for key in [key for key, column in self._columns.items() if not column.present()]:
            del self._columns[key]

    def _row_index(self, i: int) -> int:
        i = operator.index(i)
        if not -self._size <= i < self._size:
            raise IndexError(f"row {i} is out of range for a table of {self._size} rows")
        return i % self._size

    def _positions(self, positions: NDArray[np.integer[Any]] | Sequence[int]) -> NDArray[np.intp]:
        array = np.asarray(positions)
        if array.size == 0:
            return np.zeros(0, dtype=np.intp)
        if array.ndim != 1 or array.dtype == bool or not np.issubdtype(array.dtype, np.integer):
            raise InvalidArgumentTypeError(
                f"positions must be a 1-d array of ints, got {array.dtype} {array.shape}"
            )
        if array.min() < 0 or array.max() >= self._size:
            raise IndexError(
                f"positions must be in [0, {self._size}), got {array.min()}..{array.max()}"
            )
        return array.astype(np.intp, copy=False)

    # -- evaluation, used by filter_mask ------------------------------------------------------

    def compare_mask(self, key: str, op: str, value: FilterValue) -> Mask:
        """Rows whose ``key`` value satisfies ``<op> value`` (``op`` in ==, >, >=, <, <=)."""
        column = self._checked_column(key, value_kind(value), value)
        if column is None:
            return np.zeros(self._size, dtype=bool)
        payload = column.payload[: self._size]
        counts = column.counts
        parts: list[Mask | None] = []
        if type(value) is bool:  # only == is allowed on bools
            parts.append(self._gate(column, _BOOL_CODE, payload == int(value)))
        elif type(value) is int or type(value) is float:
            if counts[_INT_CODE]:
                parts.append(self._gate(column, _INT_CODE, _int64_compare(payload, op, value)))
            if counts[_FLOAT_CODE]:
                floats = payload.view(np.float64)
                parts.append(self._gate(column, _FLOAT_CODE, _float64_compare(floats, op, value)))
            compare = COMPARISONS[op]
            parts.append(
                self._lookup(column, _BIGINT_CODE, lambda v: type(v) is int and compare(v, value))
            )
        elif op == "==":  # str or UUID: one integer compare against the dictionary code
            if type(value) is uuid.UUID:
                parts.append(self._codes_in(column, _UUID_CODE, [value]))
                value = str(value)
            parts.append(self._codes_in(column, _STR_CODE, [value]))
        else:
            compare = COMPARISONS[op]
            parts.append(
                self._lookup(column, _STR_CODE, lambda v: type(v) is str and compare(v, value))
            )
        return self._union(parts)

    def in_mask(self, key: str, values: tuple[FilterValue, ...]) -> Mask:
        """Rows whose ``key`` value equals one of ``values`` (all of one kind)."""
        column = self._checked_column(key, value_kind(values[0]), values)
        if column is None:
            return np.zeros(self._size, dtype=bool)
        payload = column.payload[: self._size]
        counts = column.counts
        parts: list[Mask | None] = []
        first = values[0]
        if type(first) is bool:
            found = _isin(payload, [int(v) for v in values])
            parts.append(self._gate(column, _BOOL_CODE, found))
        elif type(first) is int or type(first) is float:
            numbers = [v for v in values if isinstance(v, int | float)]
            ints = [i for i in map(_as_int64, numbers) if i is not None]
            floats = [f for f in map(_as_float, numbers) if f is not None]
            if counts[_INT_CODE] and ints:
                found = _isin(payload, ints)
                parts.append(self._gate(column, _INT_CODE, found))
            if counts[_FLOAT_CODE] and floats:
                found = _isin(payload.view(np.float64), floats)
                parts.append(self._gate(column, _FLOAT_CODE, found))
            parts.append(
                self._lookup(column, _BIGINT_CODE, lambda v: type(v) is int and v in values)
            )
        elif type(first) is uuid.UUID:
            parts.append(self._codes_in(column, _UUID_CODE, values))
            parts.append(self._codes_in(column, _STR_CODE, [str(v) for v in values]))
        else:
            parts.append(self._codes_in(column, _STR_CODE, values))
        return self._union(parts)

    def contains_mask(self, key: str, text: str) -> Mask:
        """Rows whose ``key`` value is a str containing ``text``."""
        column = self._checked_column(key, STR, text)
        if column is None:
            return np.zeros(self._size, dtype=bool)
        return self._union(
            [self._lookup(column, _STR_CODE, lambda v: type(v) is str and text in v)]
        )

    def _checked_column(self, key: str, kind: str, value: object) -> _Column | None:
        """The column of ``key``, after checking that every present value is of a kind
        comparable with ``kind``; raises the error ``Filter.test`` raises for the first one."""
        column = self._columns.get(key)
        if column is None:
            return None
        allowed = _CODES_OF_KIND[kind]
        if column.present() != sum(column.counts[code] for code in allowed):
            codes = column.codes[: self._size]
            first = int(np.flatnonzero((codes != _MISSING) & ~np.isin(codes, allowed))[0])
            raise mismatch_error(key, column.value(first), value)
        return column

    def _gate(self, column: _Column, code: int, matches: Mask) -> Mask:
        """``matches`` restricted to the rows holding type ``code`` (in place)."""
        if column.counts[code] != self._size:
            matches &= column.codes[: self._size] == code
        return matches

    def _codes_in(self, column: _Column, code: int, values: Iterable[MetadataValue]) -> Mask | None:
        """Rows of type ``code`` whose dictionary value is one of ``values``."""
        if not column.counts[code]:
            return None
        found = [c for c in map(column.index.get, values) if c is not None]
        if not found:
            return None
        if len(found) <= _FEW:
            payload = column.payload[: self._size]
            return self._gate(column, code, _isin(payload, found))
        table = np.zeros(len(column.objects), dtype=bool)
        table[found] = True
        return self._rows_in_table(column, code, table)

    def _lookup(self, column: _Column, code: int, predicate: Callable[[Any], bool]) -> Mask | None:
        """Rows of type ``code`` whose dictionary value satisfies ``predicate`` (which runs
        once per distinct value, not per row)."""
        if not column.counts[code]:
            return None
        table = np.fromiter(map(predicate, column.objects), dtype=bool, count=len(column.objects))
        return self._rows_in_table(column, code, table)

    def _rows_in_table(self, column: _Column, code: int, table: Mask) -> Mask | None:
        """Rows of type ``code`` whose dictionary index is marked in ``table``."""
        marked = np.flatnonzero(table)
        if not marked.size:
            return None
        payload = column.payload[: self._size]
        if marked.size <= _FEW:  # a compare or two beats a gather
            return self._gate(column, code, _isin(payload, marked.tolist()))
        if column.counts[code] == self._size:
            return table[payload]
        rows = column.codes[: self._size] == code
        matches = np.zeros(self._size, dtype=bool)
        matches[rows] = table[payload[rows]]
        return matches

    def _union(self, parts: list[Mask | None]) -> Mask:
        result: Mask | None = None
        for part in parts:
            if part is None:
                continue
            if result is None:
                result = part
            else:
                result |= part
        return np.zeros(self._size, dtype=bool) if result is None else result
