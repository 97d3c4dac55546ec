"""LangChain filter forms to ragloom filters.

A LangChain vector store takes a ``filter`` whose form each store chooses. The adapter
accepts three, all compiled to a ragloom :class:`~ragloom.core.filters.Filter` that the
wrapped store runs natively (so a pgvector store filters in SQL, Qdrant in its payload
index):

- a ragloom ``Filter`` (``metadata_key("year") >= ...``), used as is;
- a ``str`` in ragloom's filter syntax (``'year >= 2020 and lang in ("en", "de")'``);
- LangChain's dict form (the one PGVector, Chroma, Qdrant and Milvus adapters share):
  ``{"key": value}`` is equality, ``{"key": {"$op": value}}`` an operator among
  ``$eq $ne $gt $gte $lt $lte $in $nin $contains``, and ``$and``/``$or`` (lists) and
  ``$not`` (a dict) combine. Several keys in one dict are and-ed.

A callable filter (LangChain's ``InMemoryVectorStore`` form) cannot run inside a store:
it raises :class:`~ragloom.core.errors.UnsupportedFilterError` rather than filtering
after the search, which would silently return fewer than ``k`` documents.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

from ragloom.core.errors import InvalidFilterError, UnsupportedFilterError
from ragloom.core.filter_parser import parse_filter
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

__all__ = ["FilterLike", "to_ragloom_filter"]

FilterLike: TypeAlias = Filter | str | Mapping[str, Any]
"""What a ``filter=`` argument of the adapters accepts (``None`` is no filter)."""

_COMPARISONS: dict[str, Callable[[str, Any], Filter]] = {
    "$eq": IsEqualTo,
    "$ne": IsNotEqualTo,
    "$gt": IsGreaterThan,
    "$gte": IsGreaterThanOrEqualTo,
    "$lt": IsLessThan,
    "$lte": IsLessThanOrEqualTo,
    "$contains": ContainsString,
}
_MEMBERSHIPS: dict[str, Callable[[str, tuple[Any, ...]], Filter]] = {
    "$in": IsIn,
    "$nin": IsNotIn,
}
_OPERATORS = ", ".join([*_COMPARISONS, *_MEMBERSHIPS])


def to_ragloom_filter(filter: FilterLike | None) -> Filter | None:
    """The ragloom filter ``filter`` stands for; ``None`` and ``{}`` mean no filter.

    Raises :class:`InvalidFilterError` naming the operator, key or value at fault.
    """
    if filter is None or isinstance(filter, Filter):
        return filter
    if isinstance(filter, str):
        return parse_filter(filter)
    if isinstance(filter, Mapping):
        return _from_dict(filter) if filter else None
    if callable(filter):
        raise UnsupportedFilterError(
            "a callable filter cannot run inside a ragloom store; pass a ragloom Filter, "
            "a filter string such as 'year >= 2020', or a dict such as "
            "{'year': {'$gte': 2020}}"
        )
    raise InvalidFilterError(
        f"filter must be a ragloom Filter, a str or a dict, got {type(filter).__name__}"
    )


def _from_dict(clauses: Mapping[str, Any]) -> Filter:
    """The and of every clause of one dict (an empty dict inside a filter is an error)."""
    if not clauses:
        raise InvalidFilterError("an empty dict inside a filter matches nothing in particular")
    return and_(*(_clause(key, value) for key, value in clauses.items()))


def _clause(key: str, value: Any) -> Filter:
    if key in ("$and", "$or"):
        if isinstance(value, str | bytes) or not isinstance(value, Sequence) or not value:
            raise InvalidFilterError(f"{key} takes a non-empty list of filters, got {value!r}")
        operands = [_operand(key, item) for item in value]
        return and_(*operands) if key == "$and" else or_(*operands)
    if key == "$not":
        return not_(_operand(key, value))
    if key.startswith("$"):
        raise InvalidFilterError(
            f"unknown logical operator {key!r}; use $and, $or or $not at the top level and "
            f"{_OPERATORS} under a metadata key"
        )
    if isinstance(value, Mapping):
        if not value:
            raise InvalidFilterError(f"metadata key {key!r}: empty operator dict")
        return and_(*(_operator(key, op, operand) for op, operand in value.items()))
    return IsEqualTo(key, value)


def _operand(owner: str, item: Any) -> Filter:
    if not isinstance(item, Mapping):
        raise InvalidFilterError(f"{owner} takes dict filters, got {item!r}")
    return _from_dict(item)


def _operator(key: str, op: str, operand: Any) -> Filter:
    if op in _COMPARISONS:
        return _COMPARISONS[op](key, operand)
    if op in _MEMBERSHIPS:
        if isinstance(operand, str | bytes | Mapping) or not isinstance(operand, Sequence):
            raise InvalidFilterError(
                f"metadata key {key!r}: {op} takes a list of values, got {operand!r}"
            )
        return _MEMBERSHIPS[op](key, tuple(operand))
    raise UnsupportedFilterError(
        f"metadata key {key!r}: operator {op!r} has no ragloom equivalent; use one of {_OPERATORS}"
    )
