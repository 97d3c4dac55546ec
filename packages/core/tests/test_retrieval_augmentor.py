"""DefaultRetrievalAugmentor end to end: real embedding retrieval, parallelism, asyncio path.

Concurrency is proven with barriers: a retriever waits until all its peers are inside
``retrieve`` at the same time, which can only happen if they run concurrently (a
sequential run breaks the barrier after its timeout and the test fails).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any

import pytest

from ragloom.core import (
    AugmentationResult,
    Content,
    DefaultQueryRouter,
    DefaultRetrievalAugmentor,
    Document,
    EmbeddingStoreContentRetriever,
    EmbeddingStoreIngestor,
    ExpandingQueryTransformer,
    FallbackStrategy,
    InMemoryEmbeddingStore,
    LanguageModelQueryRouter,
    Query,
    QueryMetadata,
    RetrievalAugmentor,
    RetrievalError,
    UserMessage,
    document_splitters,
    metadata_key,
    reciprocal_rank_fusion,
)
from ragloom.testkit import FakeEmbeddingModel, ScriptedChatModel
from ragloom.testkit.content_retriever import CORPUS, QUESTIONS

BARRIER_TIMEOUT = 10.0  # only reached when the code under test is wrongly sequential


def index(topics: list[str], **extra_metadata: Any) -> EmbeddingStoreContentRetriever:
    """A real embedding retriever over the named topics of the testkit corpus."""
    model = FakeEmbeddingModel(256)
    store = InMemoryEmbeddingStore()
    documents = [Document(CORPUS[t], {"topic": t, **extra_metadata}) for t in topics]
    EmbeddingStoreIngestor(
        store, model, document_splitter=document_splitters.recursive(300, 0)
    ).ingest(documents)
    return EmbeddingStoreContentRetriever(store, model, max_results=2)


@pytest.fixture(scope="module")
def retriever() -> EmbeddingStoreContentRetriever:
    return index(sorted(CORPUS))


class BarrierRetriever:
    """Waits at ``barrier`` inside ``retrieve``, and records which thread it ran on."""

    def __init__(self, name: str, barrier: threading.Barrier) -> None:
        self.name = name
        self.barrier = barrier
        self.threads: list[int] = []

    def retrieve(self, query: Query) -> list[Content]:
        self.threads.append(threading.get_ident())
        self.barrier.wait()
        return [Content.from_text(f"{self.name}: {query.text}")]


class ThreadRecordingRetriever:
    """Records the thread and queries it was called with."""

    def __init__(self, prefix: str = "about") -> None:
        self.prefix = prefix
        self.calls: list[tuple[int, str]] = []

    def retrieve(self, query: Query) -> list[Content]:
        self.calls.append((threading.get_ident(), query.text))
        return [Content.from_text(f"{self.prefix} {query.text}")]


class CountingExecutor(Executor):
    """A thread pool that counts submissions."""

    def __init__(self, max_workers: int) -> None:
        self.pool = ThreadPoolExecutor(max_workers)
        self.submitted = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.submitted += 1
        return self.pool.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.pool.shutdown(wait, cancel_futures=cancel_futures)


@pytest.fixture
def executor() -> Iterator[CountingExecutor]:
    counting = CountingExecutor(8)
    yield counting
    counting.shutdown()


def expanding(*lines: str) -> ExpandingQueryTransformer:
    return ExpandingQueryTransformer(ScriptedChatModel(lambda messages: "\n".join(lines)))


# --- naive RAG --------------------------------------------------------------------------


@pytest.mark.parametrize("topic", sorted(QUESTIONS))
def test_naive_rag_injects_the_right_source(
    retriever: EmbeddingStoreContentRetriever, topic: str
) -> None:
    augmentor = DefaultRetrievalAugmentor(content_retriever=retriever)
    assert isinstance(augmentor, RetrievalAugmentor)
    result = augmentor.augment(QUESTIONS[topic])
    assert isinstance(result, AugmentationResult)
    assert result.contents[0].text_segment.metadata["topic"] == topic
    assert len(result.contents) == 2
    assert result.chat_message.text.startswith(
        f"{QUESTIONS[topic]}\n\nAnswer using the following information:\n{CORPUS[topic]}"
    )


def test_single_query_and_retriever_run_in_the_calling_thread(executor: CountingExecutor) -> None:
    recorder = ThreadRecordingRetriever()
    augmentor = DefaultRetrievalAugmentor(content_retriever=recorder, executor=executor)
    augmentor.augment(UserMessage("hello"))
    assert recorder.calls == [(threading.get_ident(), "hello")]
    assert executor.submitted == 0


def test_memory_id_reaches_a_dynamic_filter() -> None:
    store = InMemoryEmbeddingStore()
    model = FakeEmbeddingModel(256)
    EmbeddingStoreIngestor(
        store, model, document_splitter=document_splitters.recursive(300, 0)
    ).ingest(
        [
            Document(CORPUS["baking"], {"owner": "alice"}),
            Document(CORPUS["baking"] + " Sourdough needs a starter.", {"owner": "bob"}),
        ]
    )
    per_user = EmbeddingStoreContentRetriever(
        store,
        model,
        max_results=5,
        filter=lambda query: metadata_key("owner").is_equal_to(str(query.metadata.chat_memory_id)),
    )
    augmentor = DefaultRetrievalAugmentor(content_retriever=per_user)
    message = UserMessage("how does bread dough rise")
    for user in ("alice", "bob"):
        found = augmentor.augment(message, QueryMetadata(message, user)).contents
        assert [c.text_segment.metadata["owner"] for c in found] == [user]


# --- parallelism ------------------------------------------------------------------------


def test_retrievers_of_one_query_run_concurrently(executor: CountingExecutor) -> None:
    barrier = threading.Barrier(3, timeout=BARRIER_TIMEOUT)
    retrievers = [BarrierRetriever(name, barrier) for name in ("a", "b", "c")]
    augmentor = DefaultRetrievalAugmentor(
        query_router=DefaultQueryRouter(*retrievers), executor=executor
    )
    result = augmentor.augment("q")
    assert sorted(c.text for c in result.contents) == ["a: q", "b: q", "c: q"]
    assert executor.submitted == 3
    assert len({thread for r in retrievers for thread in r.threads}) == 3


def test_every_query_retriever_pair_runs_concurrently(executor: CountingExecutor) -> None:
    barrier = threading.Barrier(4, timeout=BARRIER_TIMEOUT)
    retrievers = [BarrierRetriever(name, barrier) for name in ("a", "b")]
    augmentor = DefaultRetrievalAugmentor(
        query_transformer=expanding("first", "second"),
        query_router=DefaultQueryRouter(*retrievers),
        executor=executor,
    )
    result = augmentor.augment("q")
    assert sorted(c.text for c in result.contents) == [
        "a: first",
        "a: second",
        "b: first",
        "b: second",
    ]
    assert executor.submitted == 2 + 4  # two routings, then four retrievals


def test_queries_are_routed_concurrently(executor: CountingExecutor) -> None:
    barrier = threading.Barrier(3, timeout=BARRIER_TIMEOUT)
    recorder = ThreadRecordingRetriever()

    def answer(messages: list[Any]) -> str:
        barrier.wait()  # every routing prompt is in flight at once
        return "1"

    router = LanguageModelQueryRouter(ScriptedChatModel(answer), {recorder: "everything"})
    augmentor = DefaultRetrievalAugmentor(
        query_transformer=expanding("x", "y", "z"), query_router=router, executor=executor
    )
    assert [c.text for c in augmentor.augment("q").contents] == ["about x", "about y", "about z"]


def test_a_single_worker_executor_does_not_deadlock() -> None:
    recorder = ThreadRecordingRetriever()
    other = ThreadRecordingRetriever("other")
    router = LanguageModelQueryRouter(
        ScriptedChatModel(lambda messages: "1, 2"), {recorder: "one", other: "two"}
    )
    with ThreadPoolExecutor(max_workers=1) as single:
        augmentor = DefaultRetrievalAugmentor(
            query_transformer=expanding("x", "y"), query_router=router, executor=single
        )
        assert len(augmentor.augment("q").contents) == 4
    assert len(recorder.calls) == len(other.calls) == 2


def test_the_first_retrieval_error_propagates_unchanged(executor: CountingExecutor) -> None:
    class Failing:
        def retrieve(self, query: Query) -> list[Content]:
            raise ConnectionError(f"index offline for {query.text}")

    augmentor = DefaultRetrievalAugmentor(
        query_router=DefaultQueryRouter(Failing(), ThreadRecordingRetriever()), executor=executor
    )
    with pytest.raises(ConnectionError, match="index offline for q"):
        augmentor.augment("q")


def test_identical_queries_are_retrieved_once() -> None:
    class Twice:
        def transform(self, query: Query) -> list[Query]:
            return [query, Query(query.text, query.metadata), Query("other", query.metadata)]

    recorder = ThreadRecordingRetriever()
    DefaultRetrievalAugmentor(content_retriever=recorder, query_transformer=Twice()).augment("q")
    assert sorted(text for _, text in recorder.calls) == ["other", "q"]


def test_owned_pool_is_created_on_demand_and_closed() -> None:
    augmentor = DefaultRetrievalAugmentor(content_retriever=ThreadRecordingRetriever())
    pool = augmentor.executor
    assert isinstance(pool, ThreadPoolExecutor)
    assert augmentor.executor is pool
    with augmentor:
        pass
    with pytest.raises(RuntimeError, match="shutdown"):
        pool.submit(print)
    assert augmentor.executor is not pool  # a later use gets a fresh pool
    augmentor.close()


def test_a_given_executor_is_never_shut_down(executor: CountingExecutor) -> None:
    with DefaultRetrievalAugmentor(content_retriever=ThreadRecordingRetriever(), executor=executor):
        pass
    assert executor.submit(lambda: 42).result() == 42


# --- expansion + fusion -----------------------------------------------------------------


def test_expansion_and_two_stage_fusion_over_two_stores() -> None:
    nature = index(["volcanoes", "astronomy", "sailing"])
    kitchen = index(["baking", "chess"])
    lines = ["magma erupts from a volcano", "lava and volcanic ash", "telescopes and galaxies"]
    augmentor = DefaultRetrievalAugmentor(
        query_transformer=expanding(*lines), query_router=DefaultQueryRouter(nature, kitchen)
    )
    result = augmentor.augment("tell me about volcanoes")
    per_query = [
        reciprocal_rank_fusion([nature.retrieve(Query(line)), kitchen.retrieve(Query(line))])
        for line in lines
    ]
    assert [c.text for c in result.contents] == [c.text for c in reciprocal_rank_fusion(per_query)]
    assert result.contents[0].text == CORPUS["volcanoes"]  # first for two of the three queries
    assert len({c.text for c in result.contents}) == len(result.contents)


def test_router_choosing_nothing_leaves_the_message_unchanged() -> None:
    recorder = ThreadRecordingRetriever()
    router = LanguageModelQueryRouter(
        ScriptedChatModel(["none of them"]),
        {recorder: "docs"},
        fallback_strategy=FallbackStrategy.DO_NOT_ROUTE,
    )
    result = DefaultRetrievalAugmentor(query_router=router).augment("hi there")
    assert result == AugmentationResult(UserMessage("hi there"), [])
    assert recorder.calls == []


# --- asyncio path -----------------------------------------------------------------------


class AsyncBarrierRetriever:
    """A native-async retriever that waits for its peers at an asyncio barrier."""

    def __init__(self, name: str, barrier: asyncio.Barrier) -> None:
        self.name = name
        self.barrier = barrier

    def retrieve(self, query: Query) -> list[Content]:
        raise AssertionError("the async path must use aretrieve")

    async def aretrieve(self, query: Query) -> list[Content]:
        await asyncio.wait_for(self.barrier.wait(), BARRIER_TIMEOUT)
        return [Content.from_text(f"{self.name}: {query.text}")]


def test_async_retrievers_are_awaited_concurrently() -> None:
    async def run() -> AugmentationResult:
        barrier = asyncio.Barrier(4)
        retrievers = [AsyncBarrierRetriever(name, barrier) for name in ("a", "b")]
        augmentor = DefaultRetrievalAugmentor(
            query_transformer=expanding("x", "y"), query_router=DefaultQueryRouter(*retrievers)
        )
        return await augmentor.aaugment("q")

    result = asyncio.run(run())
    assert sorted(c.text for c in result.contents) == ["a: x", "a: y", "b: x", "b: y"]


def test_async_path_runs_sync_retrievers_on_the_executor_concurrently(
    executor: CountingExecutor,
) -> None:
    barrier = threading.Barrier(2, timeout=BARRIER_TIMEOUT)
    retrievers = [BarrierRetriever(name, barrier) for name in ("a", "b")]
    augmentor = DefaultRetrievalAugmentor(
        query_router=DefaultQueryRouter(*retrievers), executor=executor
    )

    async def run() -> tuple[AugmentationResult, int]:
        return await augmentor.aaugment("q"), threading.get_ident()

    result, loop_thread = asyncio.run(run())
    assert sorted(c.text for c in result.contents) == ["a: q", "b: q"]
    assert loop_thread not in {t for r in retrievers for t in r.threads}
    assert executor.submitted == 3  # two retrievals, one aggregation (routing is native)


def test_async_naive_rag_matches_sync(retriever: EmbeddingStoreContentRetriever) -> None:
    augmentor = DefaultRetrievalAugmentor(content_retriever=retriever)
    question = QUESTIONS["chess"]
    assert asyncio.run(augmentor.aaugment(question)) == augmentor.augment(question)
    augmentor.close()


def test_async_error_propagates_and_cancels_the_others() -> None:
    cancelled = []

    class Slow:
        def retrieve(self, query: Query) -> list[Content]:
            raise AssertionError("unused")

        async def aretrieve(self, query: Query) -> list[Content]:
            try:
                await asyncio.sleep(BARRIER_TIMEOUT)
            except asyncio.CancelledError:
                cancelled.append(query.text)
                raise
            return []

    class Broken:
        def retrieve(self, query: Query) -> list[Content]:
            raise AssertionError("unused")

        async def aretrieve(self, query: Query) -> list[Content]:
            await asyncio.sleep(0)
            raise ConnectionError("offline")

    augmentor = DefaultRetrievalAugmentor(query_router=DefaultQueryRouter(Slow(), Broken()))

    async def run() -> None:
        with pytest.raises(ConnectionError, match="offline"):
            await augmentor.aaugment("q")
        await asyncio.sleep(0)  # let the cancellation be delivered
        assert cancelled == ["q"]  # by the augmentor, not by asyncio.run's cleanup

    asyncio.run(run())


# --- configuration ----------------------------------------------------------------------


def test_exactly_one_of_retriever_and_router() -> None:
    recorder = ThreadRecordingRetriever()
    with pytest.raises(ValueError, match="exactly one of content_retriever and query_router"):
        DefaultRetrievalAugmentor()
    with pytest.raises(ValueError, match="exactly one"):
        DefaultRetrievalAugmentor(
            content_retriever=recorder, query_router=DefaultQueryRouter(recorder)
        )


def test_bad_messages_and_transformer_output_are_rejected() -> None:
    class Broken:
        def transform(self, query: Query) -> list[Query]:
            return ["not a query"]  # type: ignore[list-item]

    augmentor = DefaultRetrievalAugmentor(
        content_retriever=ThreadRecordingRetriever(), query_transformer=Broken()
    )
    with pytest.raises(RetrievalError, match="query transformer returned str, not a Query"):
        augmentor.augment("q")
    with pytest.raises(TypeError, match="user_message must be a UserMessage or str, got int"):
        augmentor.augment(3)  # type: ignore[arg-type]
