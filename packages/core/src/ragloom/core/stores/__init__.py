"""Embedding stores: the :class:`EmbeddingStore` contract and the in-memory implementation.

For store authors: :mod:`~ragloom.core.stores.validation` (batch, id and search-setting
checks, id generation), :mod:`~ragloom.core.stores.scores` (relevance scores, exact
cosines) and :class:`~ragloom.core.filter_compiler.FilterCompiler` (filter translation).
"""

from ragloom.core.stores.base import (
    EmbeddingMatch,
    EmbeddingSearchRequest,
    EmbeddingSearchResult,
    EmbeddingStore,
)
from ragloom.core.stores.in_memory import InMemoryEmbeddingStore

__all__ = [
    "EmbeddingMatch",
    "EmbeddingSearchRequest",
    "EmbeddingSearchResult",
    "EmbeddingStore",
    "InMemoryEmbeddingStore",
]
