"""Dynamic settings: a retriever setting given as a value or as a function of the query.

The spec's ``dynamicMaxResults``/``dynamicMinScore``/``dynamicFilter``: e.g. a filter built
from ``query.metadata.chat_memory_id`` restricts each user to their own documents.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias, TypeVar

from ragloom.core.query import Query

__all__ = ["Dynamic", "resolve_dynamic"]

T = TypeVar("T")
Dynamic: TypeAlias = T | Callable[[Query], T]
"""A setting given as a value, or as a function of the query."""


def resolve_dynamic(setting: Dynamic[T], query: Query) -> T:
    """The value of ``setting`` for ``query``."""
    if callable(setting):
        return setting(query)
    return setting
