"""Removal shared by the row stores: the in-memory embedding store and the
BM25 index. Both keep rows in insertion order, an id -> row index built lazily, an alive
mask and a :class:`MetadataTable`; removal tombstones rows and compaction comes later.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from ragloom.core.errors import RagloomError
from ragloom.core.filters import Filter
from ragloom.core.stores.arguments import removal_target
from ragloom.core.stores.filter_mask import filter_mask
from ragloom.core.stores.metadata_table import MetadataTable
from ragloom.core.stores.validation import validate_ids

__all__ = [
    "Positions",
    "TombstonedRows",
]

Positions = npt.NDArray[np.intp]


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

    def remove_all(
        self, ids: Iterable[str] | Filter | None = None, *, filter: Filter | None = None
    ) -> None:
        """Remove ``ids``, or the entries matching ``filter`` (also when passed as ``ids``),
        or (neither) everything."""
        id_list, filter = removal_target(ids, filter, error=self._id_error, noun=self._id_noun)
        if id_list is None and filter is None:
            with self._lock:
                self._reset()
            return
        if id_list is not None:
            with self._lock:
                index = self._ensure_index()
                popped = (index.pop(item, None) for item in id_list)
                self._kill(np.array([row for row in popped if row is not None], dtype=np.intp))
            return
        assert filter is not None
        with self._lock:
            if self._size == 0:
                return
            mask = filter_mask(filter, self._metadata) & self._alive[: self._size]
            rows = np.flatnonzero(mask)
            if self._index is not None:
                for row in rows.tolist():
                    del self._index[self._ids[row]]
            self._kill(rows)
