"""The ContentRetriever protocol."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ragloom.core.content import Content
from ragloom.core.query import Query

__all__ = [
    "ContentRetriever",
]


@runtime_checkable
class ContentRetriever(Protocol):
    """Retrieves the contents relevant to a query, most relevant first.

    The source can be anything: an embedding store, a full-text index, the web, SQL.
    """

    def retrieve(self, query: Query) -> list[Content]:
        """The relevant contents, ordered from most to least relevant."""
        ...
