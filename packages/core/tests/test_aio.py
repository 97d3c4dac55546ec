"""ragloom.core.aio: every component awaitable; native coroutines used, threads otherwise.

Overlap is proven with barriers (threading or asyncio): each leg waits until its peer is
inside its own call, which only happens when they run concurrently; a sequential run
breaks the barrier after its timeout and the test fails.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

from ragloom.core import (
    Content,
    DefaultQueryRouter,
    DefaultRetrievalAugmentor,
    Document,
    EmbeddingSearchRequest,
    EmbeddingSearchResult,
    EmbeddingStoreContentRetriever,
    EmbeddingStoreIngestor,
    FileSystemDocumentLoader,
    HybridContentRetriever,
    InMemoryEmbeddingStore,
    Query,
    RagAssistant,
    TextSegment,
    aio,
    document_splitters,
    metadata_key,
)
from ragloom.core.embedding import Embedding, EmbeddingResult
from ragloom.core.filters import Filter
from ragloom.core.retrievers.bm25 import BM25ContentRetriever
from ragloom.testkit import FakeEmbeddingModel, ScriptedChatModel
from ragloom.testkit.content_retriever import CORPUS, QUESTIONS

TIMEOUT = 10.0  # only reached when the code under test is wrongly sequential


class StructuralModel:
    """An embedding model that does not subclass the protocol (sync only)."""

    def __init__(self) -> None:
        self.inner = FakeEmbeddingModel(64)
        self.threads: list[int] = []

    def embed_all(self, texts: Sequence[str | TextSegment]) -> EmbeddingResult:
        self.threads.append(threading.get_ident())
        return self.inner.embed_all(texts)


class NativeStore(InMemoryEmbeddingStore):
    """The in-memory store with native coroutines that record their use."""

    def __init__(self) -> None:
        super().__init__()
        self.native: list[str] = []

    async def aadd_all(
        self,
        embeddings: Sequence[Embedding],
        segments: Sequence[TextSegment] | None = None,
        *,
        ids: Sequence[str] | None = None,
    ) -> list[str]:
        self.native.append("aadd_all")
        return self.add_all(embeddings, segments, ids=ids)

    async def asearch(self, request: EmbeddingSearchRequest) -> EmbeddingSearchResult:
        self.native.append("asearch")
        return self.search(request)

    async def aremove_all(
        self, ids: Iterable[str] | None = None, *, filter: Filter | None = None
    ) -> None:
        self.native.append("aremove_all")
        self.remove_all(ids, filter=filter)


def test_protocols_recognize_native_implementations() -> None:
    assert isinstance(NativeStore(), aio.AsyncEmbeddingStore)
    assert not isinstance(InMemoryEmbeddingStore(), aio.AsyncEmbeddingStore)
    assert not isinstance(StructuralModel(), aio.AsyncEmbeddingModel)


def test_sync_components_run_in_worker_threads_with_the_sync_results() -> None:
    model = StructuralModel()
    store = InMemoryEmbeddingStore()
    texts = ["alpha beta", "gamma delta", "alpha gamma"]
    segments = [TextSegment(t, {"n": i}) for i, t in enumerate(texts)]

    async def run() -> tuple[list[str], EmbeddingSearchResult, EmbeddingSearchResult, int]:
        embedded = await aio.aembed_all(model, segments)
        ids = await aio.aadd_all(store, embedded.embeddings, segments)
        query = (await aio.aembed(model, "alpha")).embedding
        request = EmbeddingSearchRequest(query, max_results=3)
        before = await aio.asearch(store, request)
        await aio.aremove_all(store, filter=metadata_key("n").is_equal_to(0))
        after = await aio.asearch(store, request)
        return ids, before, after, threading.get_ident()

    ids, before, after, loop_thread = asyncio.run(run())
    assert model.threads
    assert loop_thread not in model.threads
    assert {m.embedding_id for m in before.matches} == set(ids)
    request = EmbeddingSearchRequest(model.embed_all(["alpha"]).embeddings[0], max_results=3)
    assert after == store.search(request)
    assert {m.embedding_id for m in after.matches} == set(ids[1:])


def test_native_coroutines_are_preferred() -> None:
    store = NativeStore()
    model = FakeEmbeddingModel(32)

    async def run() -> None:
        embedded = await aio.aembed_all(model, ["a b", "c d"])
        ids = await aio.aadd_all(store, embedded.embeddings, ids=["x", "y"])
        assert ids == ["x", "y"]
        await aio.asearch(store, EmbeddingSearchRequest(embedded.embeddings[0]))
        await aio.aremove_all(store, ["x"])

    asyncio.run(run())
    assert store.native == ["aadd_all", "asearch", "aremove_all"]
    assert len(store) == 1


def test_embedding_store_retriever_aretrieve_matches_retrieve_and_uses_native_search() -> None:
    store = NativeStore()
    model = FakeEmbeddingModel(256)
    EmbeddingStoreIngestor(
        store, model, document_splitter=document_splitters.recursive(300, 0)
    ).ingest([Document(text, {"topic": topic}) for topic, text in CORPUS.items()])
    retriever = EmbeddingStoreContentRetriever(store, model, max_results=3)
    for question in QUESTIONS.values():
        store.native.clear()
        assert asyncio.run(retriever.aretrieve(Query(question))) == retriever.retrieve(
            Query(question)
        )
        assert store.native == ["asearch"]


def test_aload_documents_runs_a_sync_loader_off_the_loop(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("first file", encoding="utf-8")
    (tmp_path / "b.txt").write_text("second file", encoding="utf-8")
    loaded = asyncio.run(aio.aload_documents(FileSystemDocumentLoader, tmp_path))
    assert sorted(d.text for d in loaded) == ["first file", "second file"]


# --- overlap ----------------------------------------------------------------------------


class ThreadBarrierRetriever:
    def __init__(self, name: str, barrier: threading.Barrier) -> None:
        self.name = name
        self.barrier = barrier

    def retrieve(self, query: Query) -> list[Content]:
        self.barrier.wait(TIMEOUT)
        return [Content.from_text(f"{self.name} {query.text}")]


class AsyncBarrierRetriever:
    def __init__(self, name: str, barrier: asyncio.Barrier, cancelled: list[str]) -> None:
        self.name = name
        self.barrier = barrier
        self.cancelled = cancelled

    def retrieve(self, query: Query) -> list[Content]:
        raise AssertionError("the async path must use aretrieve")

    async def aretrieve(self, query: Query) -> list[Content]:
        try:
            await asyncio.wait_for(self.barrier.wait(), TIMEOUT)
        except asyncio.CancelledError:
            self.cancelled.append(self.name)
            raise
        if self.name == "boom":
            raise RuntimeError("boom")
        return [Content.from_text(f"{self.name} {query.text}")]


def test_hybrid_runs_its_two_legs_concurrently_on_the_sync_path() -> None:
    barrier = threading.Barrier(2)
    hybrid = HybridContentRetriever(
        ThreadBarrierRetriever("dense", barrier), ThreadBarrierRetriever("keyword", barrier)
    )
    assert sorted(c.text for c in hybrid.retrieve(Query("q"))) == ["dense q", "keyword q"]


def test_nested_hybrids_do_not_exhaust_the_shared_pool() -> None:
    """A hybrid whose keyword leg is a hybrid: that one runs on a pool thread and runs its
    own legs there, one after the other, instead of queueing on the pool it occupies."""
    outer_barrier = threading.Barrier(2)
    inner = HybridContentRetriever(
        ThreadBarrierRetriever("inner-dense", threading.Barrier(1)),
        ThreadBarrierRetriever("inner-keyword", threading.Barrier(1)),
    )
    hybrid = HybridContentRetriever(
        ThreadBarrierRetriever("outer-dense", outer_barrier),
        HybridContentRetriever(ThreadBarrierRetriever("peer", outer_barrier), inner),
    )
    texts = sorted(c.text for c in hybrid.retrieve(Query("q")))
    assert texts == ["inner-dense q", "inner-keyword q", "outer-dense q", "peer q"]


def test_hybrid_awaits_its_two_legs_concurrently() -> None:
    async def run() -> list[Content]:
        barrier = asyncio.Barrier(2)
        hybrid = HybridContentRetriever(
            AsyncBarrierRetriever("dense", barrier, []),
            AsyncBarrierRetriever("keyword", barrier, []),
        )
        return await hybrid.aretrieve(Query("q"))

    assert sorted(c.text for c in asyncio.run(run())) == ["dense q", "keyword q"]


def test_hybrid_async_failure_cancels_the_other_leg() -> None:
    cancelled: list[str] = []

    async def run() -> None:
        barrier = asyncio.Barrier(3)  # never complete: "boom" fails on its own below
        slow = AsyncBarrierRetriever("slow", barrier, cancelled)

        class Failing:
            def retrieve(self, query: Query) -> list[Content]:
                raise AssertionError("the async path must use aretrieve")

            async def aretrieve(self, query: Query) -> list[Content]:
                await asyncio.sleep(0)
                raise RuntimeError("boom")

        with pytest.raises(RuntimeError, match="boom"):
            await HybridContentRetriever(slow, Failing()).aretrieve(Query("q"))

    asyncio.run(run())
    assert cancelled == ["slow"]


def test_hybrid_results_are_the_same_on_both_paths() -> None:
    model = FakeEmbeddingModel(256)
    store = InMemoryEmbeddingStore()
    documents = [Document(text, {"topic": topic}) for topic, text in CORPUS.items()]
    EmbeddingStoreIngestor(
        store, model, document_splitter=document_splitters.recursive(300, 0)
    ).ingest(documents)
    hybrid = HybridContentRetriever(
        EmbeddingStoreContentRetriever(store, model, max_results=4),
        BM25ContentRetriever.from_documents(documents, max_results=4),
        fusion="weighted",
    )
    for question in QUESTIONS.values():
        assert asyncio.run(hybrid.aretrieve(Query(question))) == hybrid.retrieve(Query(question))


def test_rag_assistant_achat_retrieves_concurrently() -> None:
    async def run() -> list[str]:
        barrier = asyncio.Barrier(2)
        retrievers = [AsyncBarrierRetriever(n, barrier, []) for n in ("one", "two")]
        augmentor = DefaultRetrievalAugmentor(query_router=DefaultQueryRouter(*retrievers))
        assistant = RagAssistant(ScriptedChatModel(["ok"]), retrieval_augmentor=augmentor)
        result = await assistant.achat("q")
        return sorted(c.text for c in result.sources)

    assert asyncio.run(run()) == ["one q", "two q"]
