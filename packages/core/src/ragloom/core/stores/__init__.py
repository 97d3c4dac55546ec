"""Embedding stores: the :class:`EmbeddingStore` contract and the in-memory implementation."""

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
