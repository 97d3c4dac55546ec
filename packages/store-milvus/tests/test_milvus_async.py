"""The async methods (pymilvus ``AsyncMilvusClient``) against the sync ones, on Milvus Lite.

Each test drives its own event loop with ``asyncio.run``; a store opened with ``uri``
opens one async client per loop and closes it with ``aclose``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pymilvus import AsyncMilvusClient, MilvusClient  # type: ignore[import-untyped]

from ragloom.core import (
    Embedding,
    EmbeddingSearchRequest,
    EmbeddingSearchResult,
    InvalidFilterError,
    TextSegment,
    aio,
    metadata_key,
)
from ragloom.stores.milvus import MilvusEmbeddingStore
from ragloom.stores.milvus._registry import registry_name

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


def run(store: MilvusEmbeddingStore, body: Callable[[], Awaitable[Any]]) -> Any:
    """``body()`` in a fresh event loop, closing the store's async client afterwards (the
    sync client stays open: ``aclose`` would close both)."""

    async def main() -> Any:
        try:
            return await body()
        finally:
            await store._close_async()

    return asyncio.run(main())


@pytest.fixture
def second_collection(milvus_client: MilvusClient, collection_name: str) -> Iterator[str]:
    name = collection_name + "_sync"
    yield name
    for collection in (name, registry_name(name)):
        if milvus_client.has_collection(collection):
            milvus_client.drop_collection(collection)


def uri_store(milvus_db: Path, collection: str) -> MilvusEmbeddingStore:
    return MilvusEmbeddingStore(str(milvus_db), collection, dimension=DIMENSION)


def test_async_add_search_remove_equal_the_sync_methods(
    milvus_db: Path, milvus_client: MilvusClient, collection_name: str, second_collection: str
) -> None:
    vectors, segments = rows(200)
    ids = [f"id-{i:03d}" for i in range(200)]
    async_side = uri_store(milvus_db, collection_name)
    sync_side = MilvusEmbeddingStore(
        client=milvus_client, collection_name=second_collection, dimension=DIMENSION
    )

    async def fill() -> list[str]:
        await async_side.aadd_all(vectors[:150], segments[:150], ids=ids[:150])
        # replacing keeps the insertion position; generated ids take the plain insert
        await async_side.aadd_all(vectors[100:120][::-1], segments[100:120], ids=ids[100:120])
        await async_side.aadd(Embedding(vectors[150]), segments[150], id=ids[150])
        return await async_side.aadd_all(vectors[151:], segments[151:])

    generated = run(async_side, fill)
    sync_side.add_all(vectors[:150], segments[:150], ids=ids[:150])
    sync_side.add_all(vectors[100:120][::-1], segments[100:120], ids=ids[100:120])
    sync_side.add(Embedding(vectors[150]), segments[150], id=ids[150])
    sync_side.add_all(vectors[151:], segments[151:], ids=generated)
    assert len(async_side) == len(sync_side) == 200

    async def searches() -> list[EmbeddingSearchResult]:
        return [await async_side.asearch(r) for r in requests(12)]

    assert [hits(r) for r in run(async_side, searches)] == [
        hits(sync_side.search(r)) for r in requests(12)
    ]
    group, name = metadata_key("group"), metadata_key("name")
    run(async_side, lambda: async_side.aremove_all(ids[:20]))
    run(async_side, lambda: async_side.aremove_all(filter=group.is_equal_to(1)))
    run(async_side, lambda: async_side.aremove_all(filter=name.is_greater_than("n9")))
    sync_side.remove_all(ids[:20])
    sync_side.remove_all(filter=group.is_equal_to(1))
    sync_side.remove_all(filter=name.is_greater_than("n9"))  # str order: finished in Python
    probe = EmbeddingSearchRequest(vectors[0], max_results=200)
    assert hits(run(async_side, lambda: async_side.asearch(probe))) == hits(sync_side.search(probe))
    with pytest.raises(InvalidFilterError):  # group holds ints, not strs
        run(
            async_side,
            lambda: async_side.asearch(
                EmbeddingSearchRequest(vectors[0], filter=group.is_equal_to("1"))
            ),
        )
    run(async_side, lambda: async_side.aremove_all())
    assert len(async_side) == 0
    async_side.close()


def test_the_first_async_write_creates_the_collection(
    milvus_db: Path, collection_name: str
) -> None:
    vectors, segments = rows(5)
    store = MilvusEmbeddingStore(str(milvus_db), collection_name)
    added = run(store, lambda: store.aadd_all(vectors, segments))
    assert store.dimension == DIMENSION
    assert len(store) == 5
    assert hits(store.search(EmbeddingSearchRequest(vectors[2], max_results=1)))[0][0] == added[2]
    store.close()


def test_200_concurrent_async_queries_return_the_sequential_results(
    milvus_db: Path, collection_name: str
) -> None:
    vectors, segments = rows(500)
    queries = requests(200)
    store = uri_store(milvus_db, collection_name)
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
    # Through the core helper too (it picks the native coroutine), in a new event loop.
    assert isinstance(store, aio.AsyncEmbeddingStore)
    again = run(store, lambda: asyncio.gather(*(aio.asearch(store, r) for r in queries)))
    assert [hits(r) for r in again] == sequential
    store.close()


def test_concurrent_async_writers(
    milvus_db: Path, milvus_client: MilvusClient, collection_name: str
) -> None:
    """Eight writers at once, half of their ids shared: every id stored once, with the
    vector of one of its writers, and the kinds registry consistent."""
    vectors, segments = rows(400)
    store = uri_store(milvus_db, collection_name)

    async def writers() -> None:
        async def writer(w: int) -> None:
            own = [f"w{w}-{i}" for i in range(25)]
            shared = [f"shared-{i}" for i in range(25)]
            span = slice(w * 50, w * 50 + 50)
            await store.aadd_all(vectors[span], segments[span], ids=own + shared)

        await asyncio.gather(*(writer(w) for w in range(8)))

    run(store, writers)
    assert len(store) == 8 * 25 + 25
    stored = milvus_client.query(
        collection_name, filter='id != ""', output_fields=["id"], consistency_level="Strong"
    )
    assert sorted(row["id"] for row in stored) == sorted(
        [f"w{w}-{i}" for w in range(8) for i in range(25)] + [f"shared-{i}" for i in range(25)]
    )
    for i in (0, 24):  # a shared id holds the vector of one of its writers
        match = store.search(EmbeddingSearchRequest(vectors[25 + i], max_results=1))
        entry = milvus_client.get(collection_name, ids=[f"shared-{i}"], output_fields=["vector"])
        written = np.asarray(entry[0]["vector"], dtype=np.float32)
        assert any(np.allclose(written, vectors[w * 50 + 25 + i]) for w in range(8))
        assert match.matches
    with pytest.raises(InvalidFilterError):
        store.search(EmbeddingSearchRequest(vectors[0], filter=metadata_key("group").is_in(["x"])))
    store.close()


def test_cancelled_calls_leave_the_store_usable(milvus_db: Path, collection_name: str) -> None:
    vectors, segments = rows(2000)
    queries = requests(100)
    store = uri_store(milvus_db, collection_name)
    store.add_all(vectors, segments)
    expected = hits(store.search(queries[0]))

    async def cancel_mid_flight() -> tuple[list[Any], list[Any], int]:
        await store.asearch(queries[0])  # the async client is open
        tasks = [asyncio.ensure_future(store.asearch(r)) for r in queries]
        writes = [
            asyncio.ensure_future(
                store.aadd_all(vectors[:500], segments[:500], ids=[f"c{i}" for i in range(500)])
            )
        ]
        while not any(t.done() for t in tasks):  # some answered, others in flight
            await asyncio.sleep(0.001)
        for task in tasks + writes:
            task.cancel()
        outcomes = await asyncio.gather(*tasks, *writes, return_exceptions=True)
        after = [hits(await store.asearch(queries[0]))]
        await store.aadd_all(vectors[:500], segments[:500], ids=[f"c{i}" for i in range(500)])
        return outcomes, after, len(store)

    outcomes, after, size = run(store, cancel_mid_flight)
    assert any(isinstance(o, asyncio.CancelledError) for o in outcomes)
    assert all(isinstance(o, asyncio.CancelledError | EmbeddingSearchResult) for o in outcomes[:-1])
    assert after == [expected]
    assert size == 2500  # the re-added batch is stored once, whatever the cancelled one wrote
    store.close()


def test_two_event_loops_and_a_given_async_client(
    milvus_db: Path, milvus_client: MilvusClient, collection_name: str
) -> None:
    vectors, segments = rows(20)
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
