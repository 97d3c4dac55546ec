"""Id checks and removal shared by the row stores: the in-memory embedding store and the
BM25 index. Both keep rows in insertion order, an id -> row index built lazily, an alive
mask and a :class:`MetadataTable`; removal tombstones rows and compaction comes later.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from ragloom.core.errors import RagloomError
from ragloom.core.filters import Filter
from ragloom.core.metadata_table import MetadataTable

Positions = npt.NDArray[np.intp]


def validate_ids(
    ids: Iterable[str],
    count: int,
    *,
    error: type[RagloomError],
    noun: str,
    unique: bool = True,
) -> list[str]:
    """``ids`` as a list, checked: ``count`` non-empty ``str`` s, distinct if ``unique``.

    Failures raise ``error``; ``noun`` names what the ids identify ("embedding", ...).
    """
    if isinstance(ids, str):
        raise error("ids must be a sequence of str, not one str")
    id_list = list(ids)
    if len(id_list) != count:
        raise error(f"got {len(id_list)} ids for {count} {noun}s")
    if set(map(type, id_list)) != {str} or "" in id_list:  # the usual case stays at C speed
        for item in id_list:
            if not isinstance(item, str) or not item:
                raise error(f"{noun} id must be a non-empty str, got {item!r}")
    if unique and len(set(id_list)) != count:
        duplicate = next(i for i, n in Counter(id_list).items() if n > 1)
        raise error(f"id {duplicate!r} appears more than once in one call")
    return id_list


# (digit offset in the 32 hex digits, offset in "8-4-4-4-12", width) of each group.
_UUID_GROUPS = ((0, 0, 8), (8, 9, 4), (12, 14, 4), (16, 19, 4), (20, 24, 12))


def uuid4_strings(count: int) -> list[str]:
    """``count`` random UUID4 strings, formatted in bulk (``str(uuid.uuid4())`` is 5x slower).

    One ``os.urandom`` call for all ids, ``bytes.hex`` for the digits, then each group of
    digits is copied as one opaque item a row (not digit by digit) next to the dashes.
    """
    raw = np.frombuffer(os.urandom(16 * count), dtype=np.uint8).reshape(count, 16).copy()
    raw[:, 6] = (raw[:, 6] & 0x0F) | 0x40  # version 4
    raw[:, 8] = (raw[:, 8] & 0x3F) | 0x80  # RFC 4122 variant
    hex_digits = raw.tobytes().hex().encode("ascii")
    digits = np.frombuffer(hex_digits, dtype=np.uint8).reshape(count, 32)
    text = np.empty((count, 37), dtype=np.uint8)  # "8-4-4-4-12" digits and a newline
    for source, target, width in _UUID_GROUPS:
        group = np.dtype(f"V{width}")
        text[:, target : target + width].view(group)[:] = digits[:, source : source + width].view(
            group
        )
    text[:, [8, 13, 18, 23]] = ord("-")
    text[:, 36] = ord("\n")
    ids = text.tobytes().decode("ascii").split("\n")
    ids.pop()  # the empty string after the last newline
    return ids


class TombstonedRows:
    """``remove`` and ``remove_all`` over tombstoned rows.

    A subclass names its error and id noun and provides ``_reset`` (forget everything),
    ``_ensure_index`` (the id -> row dict) and ``_kill`` (tombstone rows already out of
    the index, then compact when they pile up), all called with ``_lock`` held.
    """

    _id_error: ClassVar[type[RagloomError]]
    _id_noun: ClassVar[str]
    _lock: AbstractContextManager[Any]
    _size: int
    _alive: npt.NDArray[np.bool_]
    _ids: list[str]
    _index: dict[str, int] | None
    _metadata: MetadataTable

    def _reset(self) -> None:
        raise NotImplementedError

    def _ensure_index(self) -> dict[str, int]:
        raise NotImplementedError

    def _kill(self, rows: Positions) -> None:
        raise NotImplementedError

    def _validate_ids(self, ids: Iterable[str], count: int, *, unique: bool = True) -> list[str]:
        return validate_ids(ids, count, error=self._id_error, noun=self._id_noun, unique=unique)

    def remove(self, id: str) -> None:
        """Remove the entry with this id; an unknown id is ignored."""
        self.remove_all(self._validate_ids([id], 1))

    def remove_all(self, ids: Iterable[str] | None = None, *, filter: Filter | None = None) -> None:
        """Remove ``ids``, or the entries matching ``filter``, or (neither) everything."""
        error = self._id_error
        if ids is not None and filter is not None:
            raise error("remove_all takes ids or a filter, not both")
        if ids is None and filter is None:
            with self._lock:
                self._reset()
            return
        if ids is not None:
            if isinstance(ids, str):
                raise error("remove_all takes a collection of ids, not one str")
            id_list = list(ids)
            self._validate_ids(id_list, len(id_list), unique=False)
            with self._lock:
                index = self._ensure_index()
                popped = (index.pop(item, None) for item in id_list)
                self._kill(np.array([row for row in popped if row is not None], dtype=np.intp))
            return
        if not isinstance(filter, Filter):
            raise error(f"filter must be a ragloom Filter, got {type(filter).__name__}")
        with self._lock:
            if self._size == 0:
                return
            mask = np.asarray(filter.mask(self._metadata), dtype=bool) & self._alive[: self._size]
            rows = np.flatnonzero(mask)
            if self._index is not None:
                for row in rows.tolist():
                    del self._index[self._ids[row]]
            self._kill(rows)
