"""The async methods (pymilvus ``AsyncMilvusClient``) beyond the testkit suite, on Milvus
Lite: ``aadd``, the first async write, event loops and given async clients.

The shared async contract (awaited == sync, concurrent searches and writers, cancellation)
is the testkit's AsyncEmbeddingStoreSuite, in test_milvus_async_conformance.py. Each test
drives its own event loop with ``asyncio.run``; a store opened with ``uri`` opens one async
client per loop and closes it with ``aclose``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pymilvus import AsyncMilvusClient, MilvusClient  # type: ignore[import-untyped]

from ragloom.core import EmbeddingSearchRequest
from ragloom.stores.milvus import MilvusEmbeddingStore
from ragloom.testkit.async_embedding_store import check_aadd, hits, rows

DIMENSION = 16


def run(store: MilvusEmbeddingStore, body: Callable[[], Awaitable[Any]]) -> Any:
    """``body()`` in a fresh event loop, closing the store's async client afterwards (the
    sync client stays open: ``aclose`` would close both)."""

    async def main() -> Any:
        try:
            return await body()
        finally:
            await store._close_async()

    return asyncio.run(main())


def uri_store(milvus_db: Path, collection: str) -> MilvusEmbeddingStore:
    return MilvusEmbeddingStore(str(milvus_db), collection, dimension=DIMENSION)


def test_the_first_async_write_creates_the_collection(
    milvus_db: Path, collection_name: str
) -> None:
    vectors, segments = rows(5, DIMENSION)
    store = MilvusEmbeddingStore(str(milvus_db), collection_name)
    added = run(store, lambda: store.aadd_all(vectors, segments))
    assert store.dimension == DIMENSION
    assert len(store) == 5
    assert hits(store.search(EmbeddingSearchRequest(vectors[2], max_results=1)))[0][0] == added[2]
    store.close()


def test_aadd_stores_one_entry_as_add(milvus_db: Path, collection_name: str) -> None:
    check_aadd(uri_store(milvus_db, collection_name), DIMENSION)


def test_two_event_loops_and_a_given_async_client(
    milvus_db: Path, milvus_client: MilvusClient, collection_name: str
) -> None:
    vectors, segments = rows(20, DIMENSION)
    store = uri_store(milvus_db, collection_name)
    store.add_all(vectors, segments)
    request = EmbeddingSearchRequest(vectors[0], max_results=3)
    expected = hits(store.search(request))
    first = asyncio.run(store.asearch(request))  # this loop's client is left open ...
    assert hits(first) == expected
    assert hits(run(store, lambda: store.asearch(request))) == expected  # ... a new one here

    async def with_clients() -> tuple[list[Any], list[Any]]:
        given = AsyncMilvusClient(str(milvus_db))
        try:
            native = MilvusEmbeddingStore(
                client=milvus_client, collection_name=collection_name, async_client=given
            )
            threaded = MilvusEmbeddingStore(client=milvus_client, collection_name=collection_name)
            return hits(await native.asearch(request)), hits(await threaded.asearch(request))
        finally:
            await given.close()

    assert asyncio.run(with_clients()) == (expected, expected)
    store.close()
