"""A batch's metadata as columns, one per key: the form the author kit's validation hands
to stores (:func:`~ragloom.core.stores.validation.check_columns`) and the
in-memory engine's :class:`~ragloom.core.stores.metadata_table.MetadataTable` takes in."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragloom.core.metadata import MetadataValue

__all__ = ["CodedColumn", "MetadataColumn"]


@dataclass(frozen=True, slots=True)
class CodedColumn:
    """A metadata column of a batch as codes into its distinct values: row ``i`` holds
    ``values[codes[i]]``, or lacks the key where ``codes[i]`` is -1 (dictionary encoding,
    done once a batch, so that each later step works on the few distinct values)."""

    codes: NDArray[np.int64]
    values: list[MetadataValue]

    @classmethod
    def of(cls, column: Sequence[Any], values: list[MetadataValue]) -> CodedColumn:
        """The coded form of ``column`` (``None`` where a row lacks the key), whose distinct
        values other than ``None`` are ``values``."""
        index: dict[Any, int] = dict(zip(values, range(len(values)), strict=True))
        index[None] = -1
        codes = np.fromiter(map(index.__getitem__, column), dtype=np.int64, count=len(column))
        return cls(codes, values)

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, row: int) -> Any:
        code = int(self.codes[row])
        return None if code < 0 else self.values[code]

    def take(self, rows: Sequence[int]) -> CodedColumn:
        """The column of ``rows`` only."""
        return CodedColumn(self.codes[np.asarray(rows, dtype=np.intp)], self.values)

    def tolist(self) -> list[Any]:
        """The values of the rows, ``None`` where a row lacks the key."""
        return [self.values[code] if code >= 0 else None for code in self.codes.tolist()]


MetadataColumn = list[Any] | NDArray[Any] | CodedColumn
"""The values of one metadata key over a batch, ``None`` where a row lacks the key: a list,
a numpy array of bools or numbers, or a :class:`CodedColumn`."""
