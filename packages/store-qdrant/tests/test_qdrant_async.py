"""The async methods beyond the testkit suite, on qdrant-client's local mode: ``aadd``,
the first async write, ``async_client`` without ``client``.

The shared async contract (awaited == sync, concurrent searches and writers, cancellation)
is the testkit's AsyncEmbeddingStoreSuite, in test_qdrant_async_conformance.py, on both
async paths (worker threads in local mode, and a native ``AsyncQdrantClient``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from qdrant_client import AsyncQdrantClient

from ragloom.core import EmbeddingSearchRequest
from ragloom.stores.qdrant import QdrantEmbeddingStore
from ragloom.testkit.async_embedding_store import check_aadd, rows

DIMENSION = 16


def test_async_client_goes_with_a_client(store_path: Path) -> None:
    with pytest.raises(Exception, match="async_client goes with client"):
        QdrantEmbeddingStore(
            "x", path=store_path, async_client=AsyncQdrantClient(location=":memory:")
        )


def test_the_first_async_write_creates_the_collection(store_path: Path) -> None:
    vectors, segments = rows(5, DIMENSION)
    with QdrantEmbeddingStore("fresh", path=store_path) as store:
        added = asyncio.run(store.aadd_all(vectors, segments))
        assert store.dimension == DIMENSION
        assert len(store) == 5
        top = store.search(EmbeddingSearchRequest(vectors[2], max_results=1))
        assert top.matches[0].embedding_id == added[2]


def test_aadd_stores_one_entry_as_add(store_path: Path) -> None:
    with QdrantEmbeddingStore("fresh", path=store_path, dimension=DIMENSION) as store:
        check_aadd(store, DIMENSION)
