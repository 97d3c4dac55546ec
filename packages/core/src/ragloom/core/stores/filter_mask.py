"""filter_mask: a :class:`~ragloom.core.Filter` evaluated over a whole
:class:`~ragloom.core.stores.metadata_table.MetadataTable` as one boolean mask.

The in-memory store's and the BM25 index's compiler, like the pgvector store's SQL one:
each comparison is one vectorized pass over a typed column, ``And``/``Or`` combine masks
in place, and every operand is evaluated (a type mismatch anywhere raises, as ``test``
does row by row).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ragloom.core.filter_compiler import FilterCompiler
from ragloom.core.filter_values import FilterValue
from ragloom.core.filters import (
    ContainsString,
    Filter,
    IsEqualTo,
    IsIn,
    IsNotEqualTo,
    IsNotIn,
)
from ragloom.core.stores.metadata_table import MetadataTable

__all__ = ["MaskCompiler", "filter_mask"]

Mask = NDArray[np.bool_]


def filter_mask(filter: Filter, table: MetadataTable) -> Mask:
    """``filter.test`` for every row of ``table`` at once: a new bool array of ``len(table)``."""
    return MaskCompiler(table).compile(filter)


class MaskCompiler(FilterCompiler[Mask]):
    """Compiles a filter into the mask of the rows of ``table`` it matches."""

    backend = "the in-memory metadata table"

    def __init__(self, table: MetadataTable) -> None:
        self.table = table

    def is_equal_to(self, filter: IsEqualTo) -> Mask:
        return self.table.compare_mask(filter.key, "==", filter.value)

    def is_not_equal_to(self, filter: IsNotEqualTo) -> Mask:
        return self.not_(self.table.compare_mask(filter.key, "==", filter.value))

    def order(self, key: str, operator: str, value: FilterValue) -> Mask:
        return self.table.compare_mask(key, operator, value)

    def is_in(self, filter: IsIn) -> Mask:
        return self.table.in_mask(filter.key, filter.values)

    def is_not_in(self, filter: IsNotIn) -> Mask:
        return self.not_(self.table.in_mask(filter.key, filter.values))

    def contains_string(self, filter: ContainsString) -> Mask:
        return self.table.contains_mask(filter.key, filter.value)

    def and_(self, operands: list[Mask]) -> Mask:
        result = operands[0]
        for operand in operands[1:]:
            result &= operand
        return result

    def or_(self, operands: list[Mask]) -> Mask:
        result = operands[0]
        for operand in operands[1:]:
            result |= operand
        return result

    def not_(self, operand: Mask) -> Mask:
        return np.logical_not(operand, out=operand)
