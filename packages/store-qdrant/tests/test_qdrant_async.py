"""The async methods against the sync ones, on qdrant-client's local mode.

Two async paths: a store in local mode runs each operation in a worker thread (the local
engine is in-process Python); a store given an ``AsyncQdrantClient`` drives the same
operations natively on it. No Qdrant server runs here, so the native path is exercised
with the async *local* client, pointed at the sync local client's collections (one
database, two clients): the calls, their arguments and the step driver are those a
server would get.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from qdrant_client import AsyncQdrantClient, QdrantClient

from ragloom.core import (
    Embedding,
    EmbeddingSearchRequest,
    EmbeddingSearchResult,
    InvalidFilterError,
    TextSegment,
    aio,
    metadata_key,
)
from ragloom.stores.qdrant import QdrantEmbeddingStore

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
    group, name = metadata_key("group"), metadata_key("name")
    return [
        EmbeddingSearchRequest(
            rng.normal(size=DIMENSION).astype(np.float32),
            max_results=5 + i % 7,
            filter=(
                group.is_equal_to(i % 5)
                if i % 3 == 0
                else name.is_greater_than("n5")  # str order: checked in Python
                if i % 3 == 1
                else None
            ),
        )
        for i in range(count)
    ]


def shared_async_client(sync: QdrantClient) -> AsyncQdrantClient:
    """An async local client over the sync local client's collections."""
    client = AsyncQdrantClient(location=":memory:")
    client._client.collections = sync._client.collections  # type: ignore[union-attr]
    return client


@pytest.fixture(params=["threaded", "native"])
def store(request: pytest.FixtureRequest, store_path: Path) -> Iterator[QdrantEmbeddingStore]:
    """A local-mode store (async calls in threads), or one with a native async client."""
    name = f"test_{uuid.uuid4().hex[:12]}"
    if request.param == "threaded":
        local = QdrantEmbeddingStore(name, path=store_path, dimension=DIMENSION)
        yield local
        local.close()
        return
    sync = QdrantClient(location=":memory:")
    native = QdrantEmbeddingStore(
        name, client=sync, async_client=shared_async_client(sync), dimension=DIMENSION
    )
    yield native
    sync.close()


def test_async_add_search_remove_equal_the_sync_methods(store: QdrantEmbeddingStore) -> None:
    vectors, segments = rows(200)
    ids = [f"id-{i:03d}" for i in range(200)]
    sync_side = QdrantEmbeddingStore("sync_side", location=":memory:", dimension=DIMENSION)

    async def fill() -> list[str]:
        await store.aadd_all(vectors[:150], segments[:150], ids=ids[:150])
        # replacing keeps the insertion position
        await store.aadd_all(vectors[100:120][::-1], segments[100:120], ids=ids[100:120])
        await store.aadd(Embedding(vectors[150]), segments[150], id=ids[150])
        return await store.aadd_all(vectors[151:], segments[151:])

    generated = asyncio.run(fill())
    sync_side.add_all(vectors[:150], segments[:150], ids=ids[:150])
    sync_side.add_all(vectors[100:120][::-1], segments[100:120], ids=ids[100:120])
    sync_side.add(Embedding(vectors[150]), segments[150], id=ids[150])
    sync_side.add_all(vectors[151:], segments[151:], ids=generated)
    assert len(store) == len(sync_side) == 200

    async def searches() -> list[EmbeddingSearchResult]:
        return [await store.asearch(r) for r in requests(12)]

    expected = [hits(sync_side.search(r)) for r in requests(12)]
    assert [hits(r) for r in asyncio.run(searches())] == expected
    assert [hits(store.search(r)) for r in requests(12)] == expected
    group, name = metadata_key("group"), metadata_key("name")

    async def removals() -> None:
        await store.aremove_all(ids[:20])
        await store.aremove_all(filter=group.is_equal_to(1))
        await store.aremove_all(filter=name.is_greater_than("n9"))

    asyncio.run(removals())
    sync_side.remove_all(ids[:20])
    sync_side.remove_all(filter=group.is_equal_to(1))
    sync_side.remove_all(filter=name.is_greater_than("n9"))
    probe = EmbeddingSearchRequest(vectors[0], max_results=200)
    assert hits(asyncio.run(store.asearch(probe))) == hits(sync_side.search(probe))
    with pytest.raises(InvalidFilterError):  # group holds ints, not strs
        asyncio.run(
            store.asearch(EmbeddingSearchRequest(vectors[0], filter=group.is_equal_to("1")))
        )
    asyncio.run(store.aremove_all())
    assert len(store) == 0
    sync_side.close()


def test_200_concurrent_async_queries_return_the_sequential_results(
    store: QdrantEmbeddingStore, request: pytest.FixtureRequest
) -> None:
    vectors, segments = rows(100)
    queries = requests(200)
    store.add_all(vectors, segments)
    sequential = [hits(store.search(r)) for r in queries]

    async def concurrent() -> tuple[list[EmbeddingSearchResult], int]:
        tasks = [asyncio.ensure_future(store.asearch(r)) for r in queries]
        await asyncio.sleep(0)
        in_flight = sum(not t.done() for t in tasks)
        return list(await asyncio.gather(*tasks)), in_flight

    results, in_flight = asyncio.run(concurrent())
    if request.node.callspec.params["store"] == "threaded":
        assert in_flight == 200  # all started before any finished
    # (the async local client never suspends: each query runs to its end at once)
    assert [hits(r) for r in results] == sequential
    assert isinstance(store, aio.AsyncEmbeddingStore)
    again = asyncio.run(_gather(*(aio.asearch(store, r) for r in queries)))
    assert [hits(r) for r in again] == sequential


async def _gather(*calls: Awaitable[Any]) -> list[Any]:
    return list(await asyncio.gather(*calls))


def test_concurrent_async_writers(store: QdrantEmbeddingStore) -> None:
    """Eight writers at once, half of their ids shared: every id stored once, holding the
    vector of one of its writers; the insertion order of the others is kept."""
    vectors, segments = rows(400)

    async def writer(w: int) -> None:
        own = [f"w{w}-{i}" for i in range(25)]
        shared = [f"shared-{i}" for i in range(25)]
        span = slice(w * 50, w * 50 + 50)
        await store.aadd_all(vectors[span], segments[span], ids=own + shared)

    asyncio.run(_gather(*(writer(w) for w in range(8))))
    assert len(store) == 8 * 25 + 25
    everything = store.search(EmbeddingSearchRequest(np.zeros(DIMENSION), max_results=1000))
    found = {m.embedding_id: m for m in everything.matches}
    assert sorted(found) == sorted(
        [f"w{w}-{i}" for w in range(8) for i in range(25)] + [f"shared-{i}" for i in range(25)]
    )
    for i in range(25):
        vector = found[f"shared-{i}"].embedding.vector
        assert any(np.allclose(vector, vectors[w * 50 + 25 + i]) for w in range(8))
    for w in range(8):  # a zero query lists in insertion order: each writer's own in order
        own = [m.embedding_id for m in everything.matches if m.embedding_id.startswith(f"w{w}-")]
        assert own == [f"w{w}-{i}" for i in range(25)]


def test_cancelled_calls_leave_the_store_usable(
    store: QdrantEmbeddingStore, request: pytest.FixtureRequest
) -> None:
    """Threaded: cancelled while their threads run. Native on the async local client
    (which never suspends): cancelled before they run, between the others."""
    vectors, segments = rows(600)
    queries = requests(40)
    store.add_all(vectors, segments)
    expected = hits(store.search(queries[0]))
    batch_ids = [f"c{i}" for i in range(500)]

    async def cancel_mid_flight() -> tuple[list[Any], list[Any]]:
        tasks = [asyncio.ensure_future(store.asearch(r)) for r in queries]
        tasks.append(
            asyncio.ensure_future(store.aadd_all(vectors[:500], segments[:500], ids=batch_ids))
        )
        if request.node.callspec.params["store"] == "native":
            for task in tasks[::2]:
                task.cancel()
        while not any(t.done() for t in tasks):  # some answered, others in flight
            await asyncio.sleep(0.001)
        for task in tasks:
            task.cancel()
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        after = hits(await store.asearch(queries[0]))
        await store.aadd_all(vectors[:500], segments[:500], ids=batch_ids)
        return outcomes, [after]

    outcomes, after = asyncio.run(cancel_mid_flight())
    assert any(isinstance(o, asyncio.CancelledError) for o in outcomes)
    assert all(
        isinstance(o, asyncio.CancelledError | EmbeddingSearchResult | list) for o in outcomes
    )
    assert after == [expected]
    assert len(store) == 1100  # the re-added batch is stored once


def test_async_client_goes_with_a_client(store_path: Path) -> None:
    with pytest.raises(Exception, match="async_client goes with client"):
        QdrantEmbeddingStore(
            "x", path=store_path, async_client=AsyncQdrantClient(location=":memory:")
        )


def test_the_first_async_write_creates_the_collection(store_path: Path) -> None:
    vectors, segments = rows(5)
    with QdrantEmbeddingStore("fresh", path=store_path) as store:
        added = asyncio.run(store.aadd_all(vectors, segments))
        assert store.dimension == DIMENSION
        assert len(store) == 5
        top = store.search(EmbeddingSearchRequest(vectors[2], max_results=1))
        assert top.matches[0].embedding_id == added[2]
