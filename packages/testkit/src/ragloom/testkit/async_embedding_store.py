"""AsyncEmbeddingStoreSuite: a store awaited through ``ragloom.core.aio`` behaves as its sync self.

Every caller awaits a store with the core helpers (``aio.aadd_all``, ``aio.asearch``,
``aio.aremove_all``, ``aio.aget``): they take the store's own coroutines when it has them,
else run the sync methods in threads. This suite checks, on one fresh store, that awaited
calls give the sync results, that 200 concurrent searches give the sequential ones, that
concurrent writers sharing ids leave each id stored once and whole, and that cancelling
calls in flight leaves the store usable. Subclass it with the ``store`` fixture, as for
:class:`~ragloom.testkit.EmbeddingStoreSuite`::

    class TestMyStoreAsync(AsyncEmbeddingStoreSuite):
        @pytest.fixture
        def store(self, dimension):
            return MyStore(dimension=dimension)

Each test runs in its own event loop (``asyncio.run``) and ends it with ``await
store.aclose()`` when the store has one (async pools and clients belong to a loop); the
fixture may close the store again. Capabilities a store may declare off: see below.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import numpy as np
import pytest

from ragloom.core import aio
from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding
from ragloom.core.errors import EmbeddingStoreError, InvalidFilterError, MetadataTypeError
from ragloom.core.filters import metadata_key
from ragloom.core.stores.base import (
    EmbeddingSearchRequest,
    EmbeddingSearchResult,
    EmbeddingStore,
    StoredEmbedding,
)
from ragloom.testkit.embedding_store import EmbeddingStoreSuiteBase, entries
from ragloom.testkit.suite import Capability, if_fails

__all__ = [
    "AsyncEmbeddingStoreSuite",
    "check_aadd",
    "hits",
    "requests",
    "rows",
    "run_in_loop",
]

_T = TypeVar("_T")
_Hit = tuple[str, float, str | None]
_Outcome = tuple[str, object]  # ("raised", error type) or ("found", hits)
_GROUP = metadata_key("group")
_NAME = metadata_key("name")


def rows(count: int, dimension: int, seed: int = 7) -> tuple[list[Embedding], list[TextSegment]]:
    """Seeded random embeddings with segments holding an int ``group`` and a str ``name``."""
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(count, dimension)).astype(np.float32)
    segments = [TextSegment(f"text {i}", {"group": i % 5, "name": f"n{i}"}) for i in range(count)]
    return [Embedding(v) for v in vectors], segments


def requests(count: int, dimension: int) -> list[EmbeddingSearchRequest]:
    """Seeded searches of varied sizes, a third filtered by int equality, a third by str order."""
    rng = np.random.default_rng(11)
    return [
        EmbeddingSearchRequest(
            rng.normal(size=dimension).astype(np.float32),
            max_results=5 + i % 7,
            filter=(
                _GROUP.is_equal_to(i % 5)
                if i % 3 == 0
                else _NAME.is_greater_than("n5")
                if i % 3 == 1
                else None
            ),
        )
        for i in range(count)
    ]


def hits(result: EmbeddingSearchResult) -> list[_Hit]:
    """A result as comparable data: (id, score, text) per match, in order."""
    assert isinstance(result, EmbeddingSearchResult)
    return [
        (m.embedding_id, m.score, None if m.embedded is None else m.embedded.text)
        for m in result.matches
    ]


def run_in_loop(store: EmbeddingStore, body: Callable[[], Awaitable[_T]]) -> _T:
    """``body()`` in a fresh event loop, ended by ``store.aclose()`` when the store has one."""

    async def main() -> _T:
        try:
            return await body()
        finally:
            close = getattr(store, "aclose", None)
            if callable(close):
                await close()

    return asyncio.run(main())


def sync_outcome(store: EmbeddingStore, request: EmbeddingSearchRequest) -> _Outcome:
    """What ``store.search(request)`` gives: its hits, or the type of its error."""
    try:
        return ("found", hits(store.search(request)))
    except Exception as exc:
        return ("raised", type(exc))


async def async_outcome(store: EmbeddingStore, request: EmbeddingSearchRequest) -> _Outcome:
    """What ``aio.asearch(store, request)`` gives, as :func:`sync_outcome`."""
    try:
        return ("found", hits(await aio.asearch(store, request)))
    except Exception as exc:
        return ("raised", type(exc))


def check_aadd(store: Any, dimension: int) -> None:
    """A store's ``aadd`` (its single-entry coroutine, beside ``aadd_all``; not part of
    :class:`~ragloom.core.aio.AsyncEmbeddingStore`) stores, replaces and generates ids as
    ``add`` does; ``store`` is fresh and empty."""
    embeddings, segments = rows(3, dimension)

    async def add() -> tuple[str, str]:
        given = await store.aadd(embeddings[0], segments[0], id="one")
        await store.aadd(embeddings[1], segments[1], id="one")  # replaces, as add does
        return given, await store.aadd(embeddings[2])

    async def body() -> tuple[str, str, dict[str, Any]]:
        given, generated = await add()
        return given, generated, entries(store, dimension)

    given, generated, stored = run_in_loop(store, body)
    assert given == "one"
    assert sorted(stored) == sorted(["one", generated])
    np.testing.assert_allclose(stored["one"].embedding.vector, embeddings[1].vector, atol=1e-6)
    assert stored["one"].embedded == segments[1]
    np.testing.assert_allclose(stored[generated].embedding.vector, embeddings[2].vector, atol=1e-6)
    assert stored[generated].embedded is None


def direction(angle: float, first: int, dimension: int) -> Embedding:
    """The unit vector at ``angle`` in the plane of components ``first`` and ``first + 1``."""
    vector = np.zeros(dimension, dtype=np.float32)
    vector[first], vector[first + 1] = math.cos(angle), math.sin(angle)
    return Embedding(vector)


class AsyncEmbeddingStoreSuite(EmbeddingStoreSuiteBase, standard=True):
    """Awaited adds, searches and removals equal the sync ones, also concurrent or cancelled."""

    has_async_methods = Capability(
        "the store has no coroutines of its own (it must not be an aio.AsyncEmbeddingStore): "
        "the aio helpers run its sync methods in threads, and the same checks hold"
    )
    suspends_during_io = Capability(
        "the awaited calls may finish without suspending (e.g. an in-process engine behind "
        "an async client): concurrency is not observed, and half of the calls are cancelled "
        "before they start"
    )

    @if_fails(
        "the a-methods must share the sync methods' request building and result handling "
        "(core's aio.Steps) so that ids, replacement, filters, scores and errors agree"
    )
    def test_awaited_calls_equal_the_sync_calls(
        self, store: EmbeddingStore, dimension: int
    ) -> None:
        embeddings, segments = rows(200, dimension)
        ids = [f"id-{i:03d}" for i in range(150)]
        # a store declares has_async_methods off only when it has none
        assert isinstance(store, aio.AsyncEmbeddingStore) == bool(self.has_async_methods)

        async def body() -> None:
            await aio.aadd_all(store, embeddings[:10], segments[:10], ids=ids[:10])  # small
            await aio.aadd_all(store, embeddings[10:150], segments[10:150], ids=ids[10:150])
            replaced = embeddings[100:120][::-1]  # replacing: the new vectors, same segments
            await aio.aadd_all(store, replaced, segments[100:120], ids=ids[100:120])
            generated = await aio.aadd_all(store, embeddings[150:], segments[150:])
            assert len(set(generated)) == 50
            assert not set(generated) & set(ids)
            expected = dict(zip(ids + generated, embeddings, strict=True))
            expected.update(zip(ids[100:120], replaced, strict=True))
            texts = {i: s for i, s in zip(ids + generated, segments, strict=True)}
            stored = entries(store, dimension)
            assert sorted(stored) == sorted(expected)
            for embedding_id, match in stored.items():
                np.testing.assert_allclose(
                    match.embedding.vector, expected[embedding_id].vector, rtol=1e-6, atol=1e-6
                )
                assert match.embedded == texts[embedding_id]

            probes = [
                *requests(12, dimension),
                EmbeddingSearchRequest(embeddings[3], max_results=60),
                EmbeddingSearchRequest(embeddings[0], filter=_GROUP.is_equal_to("1")),  # mistyped
                EmbeddingSearchRequest(Embedding(np.ones(dimension + 1))),  # wrong dimension
            ]
            for probe in probes:
                assert await async_outcome(store, probe) == sync_outcome(store, probe)

            await aio.aremove_all(store, [*ids[:20], "unknown"])
            kept = {i for i in expected if i not in ids[:20]}
            for condition in (_GROUP.is_equal_to(1), _NAME.is_greater_than("n9")):
                if self.removes_by_filter:
                    await aio.aremove_all(store, filter=condition)
                    kept = {i for i in kept if not condition.test(texts[i].metadata)}
                else:
                    with pytest.raises((EmbeddingStoreError, InvalidFilterError)):
                        await aio.aremove_all(store, filter=condition)
            assert sorted(entries(store, dimension)) == sorted(kept)
            everything = EmbeddingSearchRequest(embeddings[0], max_results=200)
            assert await async_outcome(store, everything) == sync_outcome(store, everything)
            await aio.aremove_all(store)
            assert entries(store, dimension) == {}

        run_in_loop(store, body)

    @if_fails(
        "aio.aget must give what get gives (native aget through the same steps as get): "
        "order asked, unknown ids omitted, repeats once, vectors as added on request"
    )
    def test_awaited_get_equals_get(self, store: EmbeddingStore, dimension: int) -> None:
        embeddings, segments = rows(30, dimension)
        ids = [f"id-{i:02d}" for i in range(30)]
        store.add_all(embeddings[:20], segments[:20], ids=ids[:20])
        store.add_all(embeddings[20:], ids=ids[20:])  # without segments
        asked = ["unknown", ids[25], ids[3], ids[3], ids[17], "other", ids[0]]

        def view(found: list[StoredEmbedding]) -> list[tuple[object, ...]]:
            return [
                (
                    entry.embedding_id,
                    entry.embedded,
                    None if entry.embedding is None else entry.embedding.vector.tolist(),
                )
                for entry in found
            ]

        async def body() -> None:
            for with_vectors in (False, True):
                awaited = await aio.aget(store, asked, embeddings=with_vectors)
                assert view(awaited) == view(store.get(asked, embeddings=with_vectors))
                assert [entry.embedding_id for entry in awaited] == [
                    ids[25],
                    ids[3],
                    ids[17],
                    ids[0],
                ]
            (entry,) = await aio.aget(store, [ids[25]], embeddings=True)
            assert entry.embedded is None
            assert entry.embedding is not None
            np.testing.assert_array_equal(entry.embedding.vector, embeddings[25].vector)
            with pytest.raises(EmbeddingStoreError, match="''"):
                await aio.aget(store, [ids[0], ""])
            await aio.aremove_all(store, [ids[3]])
            assert [entry.embedding_id for entry in await aio.aget(store, asked)] == [
                ids[25],
                ids[17],
                ids[0],
            ]

        run_in_loop(store, body)

    @if_fails(
        "concurrent awaited searches must not share mutable request state or a connection "
        "mid-call; each must run without blocking the event loop"
    )
    def test_200_concurrent_searches_return_the_sequential_results(
        self, store: EmbeddingStore, dimension: int
    ) -> None:
        embeddings, segments = rows(500, dimension)
        queries = requests(200, dimension)
        store.add_all(embeddings, segments)
        sequential = [sync_outcome(store, r) for r in queries]

        async def body() -> tuple[list[_Outcome], int]:
            tasks = [asyncio.ensure_future(async_outcome(store, r)) for r in queries]
            await asyncio.sleep(0)
            in_flight = sum(not t.done() for t in tasks)
            return list(await asyncio.gather(*tasks)), in_flight

        concurrent, in_flight = run_in_loop(store, body)
        if self.suspends_during_io:
            assert in_flight == 200  # all started before any finished
        assert concurrent == sequential
        assert all(kind == "found" for kind, _ in sequential)

    @if_fails(
        "concurrent awaited writers sharing ids must leave each id stored once with the "
        "vector and segment of one writer, and the metadata types known to the store"
    )
    def test_concurrent_writers(self, store: EmbeddingStore, dimension: int) -> None:
        """Eight writers at once, 25 ids of their own (one vector each) and 25 shared ids."""
        angles = [w * math.pi / 8 for w in range(8)]

        def shared(w: int, i: int) -> Embedding:
            return direction(2 * math.pi * (w * 25 + i) / 200, 2, dimension)

        async def writer(w: int) -> None:
            own = [f"w{w}-{i}" for i in range(25)]
            batch = [direction(angles[w], 0, dimension)] * 25 + [shared(w, i) for i in range(25)]
            texts = [TextSegment(f"{name} by w{w}", {"group": w}) for name in own]
            texts += [TextSegment(f"shared-{i} by w{w}", {"group": w}) for i in range(25)]
            await aio.aadd_all(store, batch, texts, ids=own + [f"shared-{i}" for i in range(25)])

        async def body() -> None:
            await asyncio.gather(*(writer(w) for w in range(8)))
            stored = entries(store, dimension)
            assert sorted(stored) == sorted(
                [f"w{w}-{i}" for w in range(8) for i in range(25)]
                + [f"shared-{i}" for i in range(25)]
            )
            for i in range(25):  # a shared id holds one writer's vector and that writer's text
                match = stored[f"shared-{i}"]
                assert match.embedded is not None
                w = int(match.embedded.text.rsplit("w", 1)[1])
                assert match.embedded == TextSegment(f"shared-{i} by w{w}", {"group": w})
                np.testing.assert_allclose(match.embedding.vector, shared(w, i).vector, atol=1e-6)
            for w in range(8):  # each writer's own entries: best matches of its direction
                found = await aio.asearch(
                    store, EmbeddingSearchRequest(direction(angles[w], 0, dimension), 25)
                )
                own = [m.embedding_id for m in found.matches]
                expected = [f"w{w}-{i}" for i in range(25)]
                if not self.preserves_insertion_order_on_ties:
                    own, expected = sorted(own), sorted(expected)
                assert own == expected
            with pytest.raises(MetadataTypeError, match="'group'"):  # the kinds stay known
                await aio.aadd_all(
                    store, [direction(0, 0, dimension)], [TextSegment("x", {"group": "x"})]
                )
            mistyped = EmbeddingSearchRequest(
                direction(0, 0, dimension), filter=_GROUP.is_in(["x"])
            )
            assert await async_outcome(store, mistyped) == sync_outcome(store, mistyped)
            assert len(entries(store, dimension)) == 8 * 25 + 25

        run_in_loop(store, body)

    @if_fails(
        "a cancelled awaited call must give its connection back and leave no half-done "
        "state: later calls see the store as before, a re-sent write is stored once"
    )
    def test_cancelled_calls_leave_the_store_usable(
        self, store: EmbeddingStore, dimension: int
    ) -> None:
        embeddings, segments = rows(900, dimension)
        queries = requests(100, dimension)
        store.add_all(embeddings[:400], segments[:400])
        expected = sync_outcome(store, queries[0])
        batch_ids = [f"c{i}" for i in range(500)]

        def write() -> Awaitable[list[str]]:
            return aio.aadd_all(store, embeddings[400:], segments[400:], ids=batch_ids)

        async def body() -> list[Any]:
            await aio.asearch(store, queries[0])  # connections or clients are open
            tasks: list[asyncio.Future[Any]] = [
                asyncio.ensure_future(aio.asearch(store, r)) for r in queries
            ]
            tasks.append(asyncio.ensure_future(write()))
            if not self.suspends_during_io:
                for task in tasks[::2]:
                    task.cancel()
            while not any(t.done() for t in tasks):  # some answered, others in flight
                await asyncio.sleep(0.001)
            for task in tasks:
                task.cancel()
            outcomes = await asyncio.gather(*tasks, return_exceptions=True)
            if self.has_async_methods:
                assert await async_outcome(store, queries[0]) == expected
            # else a cancelled call's worker thread runs on (see ragloom.core.aio): the
            # write may still land; the re-sent batch below must then change nothing
            assert sorted(await write()) == sorted(batch_ids)
            assert len(entries(store, dimension)) == 900  # the re-sent batch is stored once
            assert await async_outcome(store, queries[0]) == sync_outcome(store, queries[0])
            return outcomes

        outcomes = run_in_loop(store, body)
        assert any(isinstance(o, asyncio.CancelledError) for o in outcomes)
        searches = outcomes[:-1]
        assert all(isinstance(o, asyncio.CancelledError | EmbeddingSearchResult) for o in searches)
        assert isinstance(outcomes[-1], asyncio.CancelledError | list)
