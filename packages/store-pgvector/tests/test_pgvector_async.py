"""The async methods (psycopg AsyncConnectionPool) against the sync ones, on the real server.

Each test drives its own event loop with ``asyncio.run`` (the store opens one async pool
per loop and closes it with ``aclose``).
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
    EmbeddingSearchResult,
    EmbeddingStoreContentRetriever,
    HybridContentRetriever,
    InvalidFilterError,
    Query,
    TextSegment,
    aio,
    metadata_key,
)
from ragloom.stores.pgvector import PgFullTextContentRetriever, PgVectorEmbeddingStore
from ragloom.testkit import FakeEmbeddingModel

pytestmark = pytest.mark.integration

DIMENSION = 16


def rows(count: int, seed: int = 7) -> tuple[np.ndarray[Any, Any], list[TextSegment]]:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(count, DIMENSION)).astype(np.float32)
    segments = [TextSegment(f"text {i}", {"group": i % 5, "name": f"n{i}"}) for i in range(count)]
    return vectors, segments


def hits(result: EmbeddingSearchResult) -> list[tuple[str, float, str | None]]:
    return [
        (m.embedding_id, m.score, None if m.embedded is None else m.embedded.text)
        for m in result.matches
    ]


def requests(count: int) -> list[EmbeddingSearchRequest]:
    rng = np.random.default_rng(11)
    group = metadata_key("group")
    return [
        EmbeddingSearchRequest(
            rng.normal(size=DIMENSION).astype(np.float32),
            max_results=5 + i % 7,
            filter=group.is_equal_to(i % 5) if i % 3 == 0 else None,
        )
        for i in range(count)
    ]


def run(store: PgVectorEmbeddingStore, body: Callable[[], Awaitable[Any]]) -> Any:
    """``body()`` in a fresh event loop, closing the store's async pool afterwards."""

    async def main() -> Any:
        try:
            return await body()
        finally:
            await store._async_db.close()

    return asyncio.run(main())


def test_async_add_search_remove_equal_the_sync_methods(pg_dsn: str, table_name: str) -> None:
    vectors, segments = rows(200)
    ids = [f"id-{i:03d}" for i in range(200)]
    with (
        PgVectorEmbeddingStore(pg_dsn, table_name, dimension=DIMENSION) as async_side,
        PgVectorEmbeddingStore(pg_dsn, table_name + "_s", dimension=DIMENSION) as sync_side,
    ):
        try:

            async def fill() -> list[str]:
                # A small upsert, a large one (COPY into a staging table), and generated ids
                # (COPY straight into the table).
                await async_side.aadd_all(vectors[:10], segments[:10], ids=ids[:10])
                await async_side.aadd_all(vectors[10:150], segments[10:150], ids=ids[10:150])
                return await async_side.aadd_all(vectors[150:], segments[150:])

            generated = run(async_side, fill)
            sync_side.add_all(vectors[:150], segments[:150], ids=ids[:150])
            sync_side.add_all(vectors[150:], segments[150:], ids=generated)
            assert len(async_side) == len(sync_side) == 200

            group = metadata_key("group")

            async def searches() -> list[EmbeddingSearchResult]:
                return [await async_side.asearch(r) for r in requests(12)]

            assert [hits(r) for r in run(async_side, searches)] == [
                hits(sync_side.search(r)) for r in requests(12)
            ]
            big = EmbeddingSearchRequest(vectors[3], max_results=60)  # > ef_search: settings
            assert hits(run(async_side, lambda: async_side.asearch(big))) == hits(
                sync_side.search(big)
            )

            run(async_side, lambda: async_side.aremove_all(ids[:20]))
            run(async_side, lambda: async_side.aremove_all(filter=group.is_equal_to(1)))
            sync_side.remove_all(ids[:20])
            sync_side.remove_all(filter=group.is_equal_to(1))
            probe = EmbeddingSearchRequest(vectors[0], max_results=200)
            assert hits(run(async_side, lambda: async_side.asearch(probe))) == hits(
                sync_side.search(probe)
            )

            with pytest.raises(InvalidFilterError):  # group holds ints, not strs
                run(
                    async_side,
                    lambda: async_side.asearch(
                        EmbeddingSearchRequest(vectors[0], filter=group.is_equal_to("1"))
                    ),
                )
            run(async_side, lambda: async_side.aremove_all())
            assert len(async_side) == 0
        finally:
            sync_side.remove_all()
            sync_side._db.run(
                lambda conn: conn.execute(f'DROP TABLE "{table_name}_s"'),
                what="dropping",
                write=True,
                idempotent=True,
            )


def test_200_concurrent_async_queries_return_the_sequential_results(
    pg_dsn: str, table_name: str
) -> None:
    vectors, segments = rows(500)
    queries = requests(200)
    with PgVectorEmbeddingStore(pg_dsn, table_name, dimension=DIMENSION, pool_size=4) as store:
        store.add_all(vectors, segments)
        sequential = [hits(store.search(r)) for r in queries]

        async def concurrent() -> tuple[list[EmbeddingSearchResult], int]:
            tasks = [asyncio.ensure_future(store.asearch(r)) for r in queries]
            await asyncio.sleep(0)
            in_flight = sum(not t.done() for t in tasks)
            return list(await asyncio.gather(*tasks)), in_flight

        results, in_flight = run(store, concurrent)
        assert in_flight == 200  # all started before any finished
        assert [hits(r) for r in results] == sequential
        # Through the core helper too (it picks the native coroutine).
        again = run(store, lambda: asyncio.gather(*(aio.asearch(store, r) for r in queries)))
        assert [hits(r) for r in again] == sequential


def test_cancelled_queries_give_their_connections_back(pg_dsn: str, table_name: str) -> None:
    vectors, segments = rows(2000)
    queries = requests(100)
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
    vectors, segments = rows(20)
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
