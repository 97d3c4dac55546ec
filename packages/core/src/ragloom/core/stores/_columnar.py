"""Columnar data files: named numpy arrays in one file, and strings as UTF-8 + offsets.

An arrays file is the raw bytes of its arrays one after another, each starting at a
multiple of 64 bytes; its *layout* (kept in the manifest, JSON) names each array's dtype,
shape and offset. Reading needs no parser of the data at all (no pickle, no JSON per
row): the file is read into one buffer, or memory-mapped, and every array is a view into
it, which is what lets a saved store open in milliseconds. Only the dtypes of
``_DTYPES`` are accepted, and every array must lie inside the file.

A column of strings (some maybe ``None``) is three arrays: ``data`` (uint8, the UTF-8
bytes of all strings), ``offsets`` (int64, ``count + 1`` byte offsets) and ``null`` (bool).
:class:`StringColumn` decodes one string at a time (for a memory-mapped store) or all at
once, with vectorized offsets and one ``decode`` call.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

__all__ = [
    "Buffer",
    "ByteSink",
    "StringColumn",
    "encode_strings",
    "raw_bytes",
    "read_arrays",
    "write_arrays",
]

Buffer = bytes | bytearray | memoryview


class ByteSink(Protocol):
    """Where a data file's bytes go: a binary file, or anything with its ``write``."""

    def write(self, data: Buffer, /) -> int: ...


Arrays = dict[str, npt.NDArray[Any]]
Layout = dict[str, dict[str, Any]]

_ALIGN = 64
_DTYPES = frozenset({"|u1", "|i1", "|b1", "<i8", "<f4"})
_PAD = bytes(_ALIGN)


def raw_bytes(array: npt.NDArray[Any]) -> memoryview:
    """The bytes of a C-contiguous array, not copied (also for an empty array)."""
    return array.reshape(-1).view(np.uint8).data


def write_arrays(sink: ByteSink, arrays: Mapping[str, npt.NDArray[Any]]) -> Layout:
    """Write ``arrays`` (C-contiguous, dtypes of ``_DTYPES``) one after another; return
    their layout for the manifest."""
    layout: Layout = {}
    offset = 0
    for name, array in arrays.items():
        data = np.ascontiguousarray(array)
        if data.dtype.str not in _DTYPES:
            raise TypeError(f"array {name!r}: dtype {data.dtype.str} cannot be saved")
        layout[name] = {"dtype": data.dtype.str, "shape": list(data.shape), "offset": offset}
        sink.write(raw_bytes(data))
        offset += data.nbytes
        padding = -offset % _ALIGN
        sink.write(_PAD[:padding])
        offset += padding
    return layout


def read_arrays(buffer: npt.NDArray[np.uint8], layout: object) -> Arrays:
    """Views of the arrays ``layout`` describes into ``buffer`` (a file's bytes).

    Raises ``ValueError`` for a malformed layout or an array outside the buffer.
    """
    if not isinstance(layout, Mapping):
        raise ValueError(f"array layout must be an object, got {layout!r}")
    arrays: Arrays = {}
    for name, entry in layout.items():
        if not isinstance(entry, Mapping):
            raise ValueError(f"array {name!r}: malformed layout entry {entry!r}")
        dtype, shape, offset = entry.get("dtype"), entry.get("shape"), entry.get("offset")
        if dtype not in _DTYPES:
            raise ValueError(f"array {name!r}: unsupported dtype {dtype!r}")
        if not (
            isinstance(shape, list)
            and shape
            and all(type(n) is int and n >= 0 for n in shape)
            and type(offset) is int
            and offset >= 0
            and offset % _ALIGN == 0
        ):
            raise ValueError(f"array {name!r}: malformed shape {shape!r} or offset {offset!r}")
        kind = np.dtype(dtype)
        nbytes = kind.itemsize * int(np.prod(shape, dtype=np.int64))
        if offset + nbytes > buffer.size:
            raise ValueError(f"array {name!r} ends beyond the end of the file")
        arrays[name] = buffer[offset : offset + nbytes].view(kind).reshape(shape)
    return arrays


def encode_strings(values: Sequence[str | None], name: str) -> Arrays:
    """The arrays of a string column: ``<name>.data``, ``.offsets`` and ``.null``."""
    null = np.fromiter((value is None for value in values), dtype=bool, count=len(values))
    present: Sequence[str] = (
        [value or "" for value in values] if null.any() else values  # type: ignore[assignment]
    )
    joined = "".join(present)
    data = joined.encode("utf-8")
    lengths = np.fromiter(map(len, present), dtype=np.int64, count=len(present))
    offsets = np.zeros(len(present) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if len(data) != len(joined):  # not ASCII: character offsets -> byte offsets
        starts = (np.frombuffer(data, dtype=np.uint8) & 0xC0) != 0x80
        char_starts = np.flatnonzero(starts)
        offsets = np.append(char_starts, len(data))[offsets]
    return {
        f"{name}.data": np.frombuffer(data, dtype=np.uint8),
        f"{name}.offsets": offsets,
        f"{name}.null": null,
    }


class StringColumn(Sequence[str | None]):
    """A column of strings read from :func:`encode_strings` arrays, decoded on demand.

    Checked on construction (shapes, offsets in order and inside the data); a string that
    is not valid UTF-8 raises ``UnicodeDecodeError`` when decoded.
    """

    __slots__ = ("_data", "_null", "_offsets")

    def __init__(self, arrays: Arrays, name: str, count: int) -> None:
        try:
            data, offsets, null = (arrays[f"{name}.{part}"] for part in ("data", "offsets", "null"))
        except KeyError as exc:
            raise ValueError(f"string column {name!r}: array {exc} missing") from exc
        if (
            data.dtype != np.uint8
            or data.ndim != 1
            or offsets.dtype != np.int64
            or offsets.shape != (count + 1,)
            or null.dtype != bool
            or null.shape != (count,)
        ):
            raise ValueError(f"string column {name!r}: arrays of the wrong type or shape")
        if offsets[0] != 0 or offsets[-1] != data.size or (offsets[1:] < offsets[:-1]).any():
            raise ValueError(f"string column {name!r}: offsets out of order or out of range")
        self._data, self._offsets, self._null = data, offsets, null

    def __len__(self) -> int:
        return len(self._null)

    def __getitem__(self, row: int) -> str | None:  # type: ignore[override]
        if self._null[row]:
            return None
        start, stop = int(self._offsets[row]), int(self._offsets[row + 1])
        return self._data[start:stop].tobytes().decode("utf-8")

    def __iter__(self) -> Iterator[str | None]:
        return iter(self.to_list())

    def to_list(self) -> list[str | None]:
        """Every string, decoded at once (one ``decode`` call, vectorized offsets)."""
        values = self._split() if len(self) > 1 else None
        if values is None:
            values = self._sliced()
        if self._null.any():
            for row in np.flatnonzero(self._null).tolist():
                values[row] = None
        return values

    def _split(self) -> list[str | None] | None:
        """The strings by one ``str.split`` at NUL bytes put between them (C speed, where
        slicing is one Python step a string), or None when a string holds a NUL itself or
        an offset splits a UTF-8 character (then :meth:`_sliced` decides)."""
        data = self._data
        if data.size and not data.all():  # a NUL inside a string
            return None
        joined = np.insert(data, self._offsets[1:-1], 0)
        try:
            return joined.tobytes().decode("utf-8").split("\x00")  # type: ignore[return-value]
        except UnicodeDecodeError:
            return None

    def _sliced(self) -> list[str | None]:
        """The strings sliced one by one out of the decoded data."""
        raw = self._data.tobytes()
        text = raw.decode("utf-8")
        offsets = self._offsets
        if len(text) != len(raw):  # not ASCII: byte offsets -> character offsets
            starts = np.append((self._data & 0xC0) != 0x80, True)
            if not starts[offsets].all():
                raise ValueError("string offsets split a UTF-8 character")
            chars = np.zeros(len(raw) + 1, dtype=np.int64)
            np.cumsum(starts[:-1], out=chars[1:])
            offsets = chars[offsets]
        bounds = offsets.tolist()
        return [text[start:stop] for start, stop in itertools.pairwise(bounds)]
