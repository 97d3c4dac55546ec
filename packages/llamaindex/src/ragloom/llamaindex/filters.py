"""LlamaIndex ``MetadataFilters`` to ragloom filters, so that the wrapped store filters natively.

Operators: ``==`` ``!=`` ``>`` ``>=`` ``<`` ``<=``, ``in``/``nin`` (a list), ``text_match``
(case-sensitive substring); conditions ``and``, ``or`` and ``not`` (none of the filters
matches, as LlamaIndex's own stores read it), nested ``MetadataFilters`` included. A
missing key makes a comparison false except ``!=`` and ``nin``, as in LlamaIndex. The
array operators (``any``, ``all``, ``contains``), ``text_match_insensitive`` and
``is_empty`` have no ragloom equivalent (ragloom metadata holds no arrays, and a filter
cannot test for absence): they raise :class:`UnsupportedFilterError`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from ragloom.core.errors import InvalidFilterError, UnsupportedFilterError
from ragloom.core.filters import (
    ContainsString,
    Filter,
    IsEqualTo,
    IsGreaterThan,
    IsGreaterThanOrEqualTo,
    IsIn,
    IsLessThan,
    IsLessThanOrEqualTo,
    IsNotEqualTo,
    IsNotIn,
    and_,
    not_,
    or_,
)

__all__ = ["to_ragloom_filter"]

_COMPARISONS: dict[FilterOperator, Callable[[str, Any], Filter]] = {
    FilterOperator.EQ: IsEqualTo,
    FilterOperator.NE: IsNotEqualTo,
    FilterOperator.GT: IsGreaterThan,
    FilterOperator.GTE: IsGreaterThanOrEqualTo,
    FilterOperator.LT: IsLessThan,
    FilterOperator.LTE: IsLessThanOrEqualTo,
    FilterOperator.TEXT_MATCH: ContainsString,
}
_MEMBERSHIPS: dict[FilterOperator, Callable[[str, tuple[Any, ...]], Filter]] = {
    FilterOperator.IN: IsIn,
    FilterOperator.NIN: IsNotIn,
}


def to_ragloom_filter(filters: MetadataFilters | None) -> Filter | None:
    """The ragloom filter of LlamaIndex's ``filters``; ``None`` or no filters: none."""
    if filters is None or not filters.filters:
        return None
    return _filters(filters)


def _filters(filters: MetadataFilters) -> Filter:
    if not filters.filters:
        raise InvalidFilterError("nested MetadataFilters without filters")
    operands = [
        _filters(item) if isinstance(item, MetadataFilters) else _filter(item)
        for item in filters.filters
    ]
    condition = filters.condition or FilterCondition.AND
    if condition == FilterCondition.AND:
        return and_(*operands)
    if condition == FilterCondition.OR:
        return or_(*operands)
    return not_(or_(*operands))  # NOT: none of the filters matches


def _filter(item: MetadataFilter) -> Filter:
    if item.operator in _COMPARISONS:
        return _COMPARISONS[item.operator](item.key, item.value)
    if item.operator in _MEMBERSHIPS:
        if not isinstance(item.value, list):
            raise InvalidFilterError(
                f"metadata key {item.key!r}: {item.operator.value} takes a list, got {item.value!r}"
            )
        return _MEMBERSHIPS[item.operator](item.key, tuple(item.value))
    raise UnsupportedFilterError(
        f"metadata key {item.key!r}: operator {item.operator.value!r} has no ragloom "
        "equivalent (ragloom metadata holds no arrays and cannot test for absence)"
    )
