"""Embedding stores: the :class:`EmbeddingStore` contract and the in-memory implementation.

For store authors: :mod:`~ragloom.core.stores.validation` (batch, id and search-setting
checks, id generation), :mod:`~ragloom.core.stores.scores` (relevance scores, exact
cosines) and :class:`~ragloom.core.filter_compiler.FilterCompiler` (filter translation).
"""

from typing import TYPE_CHECKING

from ragloom.core._lazy import lazy_exports

if TYPE_CHECKING:
    from ragloom.core.stores.base import (
        EmbeddingMatch,
        EmbeddingSearchRequest,
        EmbeddingSearchResult,
        EmbeddingStore,
        StoredEmbedding,
    )
    from ragloom.core.stores.in_memory import InMemoryEmbeddingStore

__all__ = [
    "EmbeddingMatch",
    "EmbeddingSearchRequest",
    "EmbeddingSearchResult",
    "EmbeddingStore",
    "InMemoryEmbeddingStore",
    "StoredEmbedding",
]

_EXPORTS = {
    "EmbeddingMatch": "base",
    "EmbeddingSearchRequest": "base",
    "EmbeddingSearchResult": "base",
    "EmbeddingStore": "base",
    "InMemoryEmbeddingStore": "in_memory",
    "StoredEmbedding": "base",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
