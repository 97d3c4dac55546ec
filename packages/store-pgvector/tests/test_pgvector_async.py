"""The async methods (psycopg AsyncConnectionPool) beyond the testkit suite, on the real server:
connections given back on cancellation, one pool per event loop, hybrid retrieval awaited.

The shared async contract (awaited == sync, concurrent searches and writers, cancellation)
is the testkit's AsyncEmbeddingStoreSuite, in test_pgvector_async_conformance.py. Each
test drives its own event loop with ``asyncio.run`` (the store opens one async pool per
loop and closes it with ``aclose``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np
import pytest
from psycopg_pool import AsyncConnectionPool

from ragloom.core import (
    Content,
    EmbeddingSearchRequest,
    EmbeddingStoreContentRetriever,
    HybridContentRetriever,
    MetadataTypeError,
    Query,
    TextSegment,
    aio,
    metadata_key,
)
from ragloom.stores.pgvector import PgFullTextContentRetriever, PgVectorEmbeddingStore
from ragloom.testkit import FakeEmbeddingModel
from ragloom.testkit.async_embedding_store import check_aadd, hits, requests, rows

pytestmark = pytest.mark.integration

DIMENSION = 16


def run(store: PgVectorEmbeddingStore, body: Callable[[], Awaitable[Any]]) -> Any:
    """``body()`` in a fresh event loop, closing the store's async pool afterwards."""

    async def main() -> Any:
        try:
            return await body()
        finally:
            await store._async_db.close()

    return asyncio.run(main())


def test_aadd_stores_one_entry_as_add(pg_dsn: str, table_name: str) -> None:
    with PgVectorEmbeddingStore(pg_dsn, table_name, dimension=DIMENSION) as store:
        check_aadd(store, DIMENSION)


def test_cancelled_queries_give_their_connections_back(pg_dsn: str, table_name: str) -> None:
    vectors, segments = rows(2000, DIMENSION)
    queries = requests(100, DIMENSION)
    with PgVectorEmbeddingStore(
        pg_dsn, table_name, dimension=DIMENSION, pool_size=4, index="none"
    ) as store:
        store.add_all(vectors, segments)
        expected = hits(store.search(queries[0]))

        async def cancel_mid_flight() -> tuple[dict[str, int], dict[str, int], list[Any]]:
            await store.asearch(queries[0])  # the pool is open
            pool = store.async_pool
            assert isinstance(pool, AsyncConnectionPool)
            tasks = [asyncio.ensure_future(store.asearch(r)) for r in queries]
            busy: dict[str, int] = {}
            for _ in range(10_000):  # until every connection runs a query, others queue
                await asyncio.sleep(0.001)
                busy = pool.get_stats()
                in_use = busy["pool_size"] - busy.get("pool_available", 0)
                if in_use == 4 and busy.get("requests_waiting", 0) > 0:
                    break
            for task in tasks:
                task.cancel()
            outcomes = await asyncio.gather(*tasks, return_exceptions=True)
            idle: dict[str, int] = {}
            for _ in range(1000):  # the pool settles: nothing in use, nobody waiting
                idle = pool.get_stats()
                if idle.get("requests_waiting", 0) == 0 and idle["pool_size"] == idle.get(
                    "pool_available", 0
                ):
                    break
                await asyncio.sleep(0.01)
            after = await store.asearch(queries[0])
            return busy, idle, [outcomes, hits(after)]

        busy, idle, (outcomes, after) = run(store, cancel_mid_flight)
        assert busy["pool_size"] - busy.get("pool_available", 0) == 4
        assert busy.get("requests_waiting", 0) > 0
        assert any(isinstance(o, asyncio.CancelledError) for o in outcomes)
        assert idle.get("requests_waiting", 0) == 0
        assert idle["pool_size"] == idle.get("pool_available", 0) >= 1
        assert after == expected
        # The server runs none of the cancelled statements any more.
        active = store._db.run(
            lambda conn: conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
                "AND query LIKE %s AND pid <> pg_backend_pid()",
                [f"%{table_name}%"],
            ).fetchone(),
            what="checking",
            write=False,
            idempotent=True,
        )
        assert active == (0,)


def test_a_store_used_from_two_event_loops_opens_a_pool_in_each(
    pg_dsn: str, table_name: str
) -> None:
    vectors, segments = rows(20, DIMENSION)
    with PgVectorEmbeddingStore(pg_dsn, table_name, dimension=DIMENSION) as store:
        store.add_all(vectors, segments)
        request = EmbeddingSearchRequest(vectors[0], max_results=3)
        first = asyncio.run(store.asearch(request))
        second = run(store, lambda: store.asearch(request))  # a new loop: a new pool
        assert hits(first) == hits(second) == hits(store.search(request))

        async def closed_by_aclose() -> None:
            async with store:
                await store.asearch(request)

        asyncio.run(closed_by_aclose())
        assert store.pool.closed


def test_hybrid_dense_and_full_text_retrieval_awaited_natively(
    pg_dsn: str, table_name: str
) -> None:
    """Core's hybrid over this store: both legs on the async pool, the sync results."""
    model = FakeEmbeddingModel(DIMENSION)
    texts = [
        "volcanoes erupt when magma rises",
        "glaciers carve valleys slowly",
        "magma cools into basalt rock",
        "rivers carry sediment to the sea",
    ]
    segments = [TextSegment(t, {"group": i % 2}) for i, t in enumerate(texts)]
    with PgVectorEmbeddingStore(pg_dsn, table_name, dimension=DIMENSION) as store:
        store.add_all(model.embed_all(segments).embeddings, segments)
        full_text = PgFullTextContentRetriever(
            store, max_results=3, filter=metadata_key("group").is_equal_to(0)
        )
        hybrid = HybridContentRetriever(
            EmbeddingStoreContentRetriever(store, model, max_results=3), full_text
        )
        query = Query("magma and glaciers")
        assert isinstance(full_text, aio.AsyncContentRetriever)

        async def both() -> tuple[list[Content], list[Content], int]:
            found = await hybrid.aretrieve(query), await full_text.aretrieve(query)
            pool = store.async_pool
            assert pool is not None
            return found[0], found[1], pool.get_stats()["requests_num"]

        fused, keyword, requests_num = run(store, both)
        assert fused == hybrid.retrieve(query)
        assert keyword == full_text.retrieve(query)
        assert [c.text_segment.text for c in keyword] == [texts[0], texts[2]]
        assert requests_num == 3  # dense search, full-text search, full-text again: all async


def test_async_writers_racing_to_give_a_new_key_two_types_one_wins(
    pg_dsn: str, table_name: str
) -> None:
    """aadd_all takes the same key lock as add_all (see the sync race test)."""
    vectors = np.ones((2000, DIMENSION), dtype=np.float32)
    with (
        PgVectorEmbeddingStore(pg_dsn, table_name, dimension=DIMENSION) as first,
        PgVectorEmbeddingStore(pg_dsn, table_name, dimension=DIMENSION) as second,
    ):

        async def rounds() -> None:
            try:
                for round_ in range(4):
                    key = f"k{round_}"
                    outcomes = await asyncio.gather(
                        first.aadd_all(vectors, [TextSegment("t", {key: "text"})] * 2000),
                        second.aadd_all(vectors, [TextSegment("t", {key: 7})] * 2000),
                        return_exceptions=True,
                    )
                    errors = [o for o in outcomes if isinstance(o, BaseException)]
                    assert len(errors) == 1, f"round {round_}: {[type(o) for o in outcomes]}"
                    assert isinstance(errors[0], MetadataTypeError), errors[0]
            finally:
                await second._async_db.close()

        run(first, rounds)
        assert len(first) == 2000 * 4  # the losers wrote nothing
