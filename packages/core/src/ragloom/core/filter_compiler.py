"""FilterCompiler: translate a :class:`~ragloom.core.Filter` tree into a backend's form.

A store subclasses ``FilterCompiler[T]`` with one method per filter class (one, ``order``,
for the four orderings) (``T`` is what
the backend takes: an SQL fragment, a Milvus expression, a Qdrant ``Filter``, a numpy
mask) and calls :meth:`FilterCompiler.compile`. Every method is abstract, so a compiler
that forgets a class cannot be instantiated (it fails on first use, naming the
methods); a filter class the compiler does not know raises
:class:`~ragloom.core.errors.UnsupportedFilterError`. ``And``/``Or`` chains arrive
flattened (``a & b & c`` is one call with three operands, without recursion on the
chain), and every operand is compiled, as the semantics require.

A backend that cannot express a filter at all (no substring search, say) raises
:meth:`unsupported` from that method: a clear error, never a silently wrong result.
"""

from __future__ import annotations

import abc
from typing import Generic, TypeVar

from ragloom.core.errors import UnsupportedFilterError
from ragloom.core.filter_values import FilterValue
from ragloom.core.filters import (
    And,
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
    Not,
    Or,
)

__all__ = ["FilterCompiler"]

T = TypeVar("T")


class FilterCompiler(abc.ABC, Generic[T]):
    """Base of filter translators: implement one method per filter class, call ``compile``."""

    backend: str = "this store"
    """Named in :class:`UnsupportedFilterError` messages (e.g. ``"the Qdrant store"``)."""

    def compile(self, filter: Filter) -> T:
        """``filter`` in the backend's form."""
        if isinstance(filter, And):
            return self.and_([self.compile(operand) for operand in filter.operands])
        if isinstance(filter, Or):
            return self.or_([self.compile(operand) for operand in filter.operands])
        if isinstance(filter, Not):
            return self.not_(self.compile(filter.expression))
        for cls in type(filter).__mro__:
            operator = _ORDERINGS.get(cls)
            if operator is not None:
                assert isinstance(filter, _ORDERING_CLASSES)
                return self.order(filter.key, operator, filter.value)
            method = _METHODS.get(cls)
            if method is not None:
                result: T = getattr(self, method)(filter)
                return result
        raise self.unsupported(filter)

    def unsupported(self, filter: Filter) -> UnsupportedFilterError:
        """The error for a filter this backend cannot translate (raise it)."""
        return UnsupportedFilterError(
            f"{self.backend} cannot translate filter {type(filter).__name__}: {filter}"
        )

    @abc.abstractmethod
    def is_equal_to(self, filter: IsEqualTo) -> T:
        """``key == value``; false when the key is missing."""

    @abc.abstractmethod
    def is_not_equal_to(self, filter: IsNotEqualTo) -> T:
        """``key != value``; true when the key is missing."""

    @abc.abstractmethod
    def order(self, key: str, operator: str, value: FilterValue) -> T:
        """``key <operator> value`` with ``operator`` one of ``>``, ``>=``, ``<``, ``<=``
        (``IsGreaterThan`` ... ``IsLessThanOrEqualTo``); a number or a str value; false when
        the key is missing."""

    @abc.abstractmethod
    def is_in(self, filter: IsIn) -> T:
        """``key`` equals one of ``values``; false when the key is missing."""

    @abc.abstractmethod
    def is_not_in(self, filter: IsNotIn) -> T:
        """``key`` equals none of ``values``; true when the key is missing."""

    @abc.abstractmethod
    def contains_string(self, filter: ContainsString) -> T:
        """The stored str contains ``value``; false when the key is missing."""

    @abc.abstractmethod
    def and_(self, operands: list[T]) -> T:
        """All operands hold (two or more, already compiled)."""

    @abc.abstractmethod
    def or_(self, operands: list[T]) -> T:
        """Any operand holds (two or more, already compiled)."""

    @abc.abstractmethod
    def not_(self, operand: T) -> T:
        """The operand does not hold (already compiled)."""


_METHODS: dict[type[Filter], str] = {
    IsEqualTo: "is_equal_to",
    IsNotEqualTo: "is_not_equal_to",
    IsIn: "is_in",
    IsNotIn: "is_not_in",
    ContainsString: "contains_string",
}
_ORDERINGS: dict[type[Filter], str] = {
    IsGreaterThan: ">",
    IsGreaterThanOrEqualTo: ">=",
    IsLessThan: "<",
    IsLessThanOrEqualTo: "<=",
}
_ORDERING_CLASSES = (IsGreaterThan, IsGreaterThanOrEqualTo, IsLessThan, IsLessThanOrEqualTo)
