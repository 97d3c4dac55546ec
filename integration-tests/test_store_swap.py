"""Cross-package: the same pipeline on the in-memory store, pgvector, Milvus and Qdrant.

Ingest the shipped docs with the real default model into each store; the same queries
must return the same segments in the same order with the same scores (to 1e-6 where the
store rescores exactly: Milvus's FLAT index and Qdrant's candidates are rescored with
core's exact cosines; pgvector computes in float4, to 1e-5), with and without a tenant
filter; re-ingesting adds nothing; and per-user (tenant) filters driven by the
assistant's memory id isolate users on every store.

The documents are embedded once per session (the model is wrapped in a cache keyed by
text), so each store costs its writes, not another pass of the ONNX model. pgvector
needs its service (`bash scripts/services/pgvector.sh start`); Milvus Lite and Qdrant's
local mode run in-process on temporary files.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import cast

import pytest

from ragloom.core import (
    Document,
    EmbeddingModel,
    EmbeddingSearchRequest,
    EmbeddingStore,
    EmbeddingStoreContentRetriever,
    EmbeddingStoreIngestor,
    InMemoryEmbeddingStore,
    MessageWindowChatMemory,
    Query,
    QueryMetadata,
    RagAssistant,
    TextSegment,
    metadata_key,
    plugins,
)
from ragloom.core.embedding import Embedding, EmbeddingResult, text_of
from ragloom.easy_rag import load_documents
from ragloom.testkit.scripted_chat_model import ScriptedChatModel
from ragloom.testkit.stores import STORES, open_store

DOCS = Path(__file__).resolve().parent.parent / "docs"
QUERIES = [
    "How do I filter by metadata?",
    "What happens when I ingest the same documents again?",
    "Which parsers handle PDF and Office files?",
]
TOLERANCE = {"pgvector": 1e-5, "milvus": 1e-6, "qdrant": 1e-6}

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # real embeddings, three stores


class CachedModel(EmbeddingModel):
    """The real model, each distinct text embedded once (the docs are ingested 4+ times)."""

    def __init__(self, model: EmbeddingModel) -> None:
        self.model = model
        self.cache: dict[str, Embedding] = {}

    @property
    def dimension(self) -> int:
        return self.model.dimension

    def embed_all(self, texts: Sequence[str | TextSegment]) -> EmbeddingResult:
        strings = [text_of(text) for text in texts]
        missing = list(dict.fromkeys(s for s in strings if s not in self.cache))
        if missing:
            self.cache.update(zip(missing, self.model.embed_all(missing).embeddings, strict=True))
        return EmbeddingResult([self.cache[s] for s in strings])


@pytest.fixture(scope="session")
def model() -> EmbeddingModel:
    return CachedModel(cast(EmbeddingModel, plugins.load_default(plugins.EMBEDDING_MODELS)))


def tenant_documents() -> list[Document]:
    documents = load_documents(DOCS, glob="*.md")
    assert documents.failures == []
    for number, document in enumerate(documents):
        document.metadata["tenant"] = "alice" if number % 2 == 0 else "bob"
    return list(documents)


@pytest.fixture(scope="session")
def memory(model: EmbeddingModel) -> EmbeddingStore:
    store = InMemoryEmbeddingStore()
    assert EmbeddingStoreIngestor(store, model).ingest(tenant_documents()).failures == []
    return store


@pytest.fixture(scope="module", params=sorted(set(STORES) - {"memory"}))
def backend(
    request: pytest.FixtureRequest, model: EmbeddingModel, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, EmbeddingStore]]:
    """Each store, filled by the same ingestion as the in-memory one."""
    name: str = request.param
    with open_store(
        name, model.dimension, tmp_path_factory.mktemp(name), collection="swap"
    ) as store:
        assert EmbeddingStoreIngestor(store, model).ingest(tenant_documents()).failures == []
        yield name, store


@pytest.mark.parametrize("tenant", [None, "alice", "bob"])
def test_same_results_as_in_memory(
    backend: tuple[str, EmbeddingStore],
    memory: EmbeddingStore,
    model: EmbeddingModel,
    tenant: str | None,
) -> None:
    name, store = backend
    condition = None if tenant is None else metadata_key("tenant").is_equal_to(tenant)
    for text in QUERIES:
        request = EmbeddingSearchRequest(
            model.embed(text).embedding, max_results=5, filter=condition
        )
        expected = memory.search(request).matches
        found = store.search(request).matches
        assert len(expected) == 5
        assert [m.embedding_id for m in expected] == [m.embedding_id for m in found]
        for a, b in zip(expected, found, strict=True):
            assert a.score == pytest.approx(b.score, abs=TOLERANCE[name])
            assert a.embedded is not None
            assert b.embedded is not None
            assert a.embedded.text == b.embedded.text
            assert a.embedded.metadata == b.embedded.metadata


def test_reingesting_adds_nothing(
    backend: tuple[str, EmbeddingStore], model: EmbeddingModel
) -> None:
    _, store = backend
    everything = EmbeddingSearchRequest(model.embed("anything").embedding, max_results=1000)
    before = len(store.search(everything).matches)
    EmbeddingStoreIngestor(store, model).ingest(tenant_documents())
    assert len(store.search(everything).matches) == before


def check_tenants(store: EmbeddingStore, model: EmbeddingModel) -> None:
    retriever = EmbeddingStoreContentRetriever(
        store,
        model,
        max_results=10,
        filter=lambda query: metadata_key("tenant").is_equal_to(str(query.metadata.chat_memory_id)),
    )
    assistant = RagAssistant(
        ScriptedChatModel(lambda request: "ok"),
        content_retriever=retriever,
        chat_memory_provider=lambda memory_id: MessageWindowChatMemory(id=memory_id),
    )
    for user in ("alice", "bob"):
        result = assistant.chat(QUERIES[0], memory_id=user)
        assert result.sources
        assert {c.text_segment.metadata["tenant"] for c in result.sources} == {user}
    direct = retriever.retrieve(Query(QUERIES[0], QueryMetadata(chat_memory_id="mallory")))
    assert direct == []


def test_tenants_only_see_their_documents(
    backend: tuple[str, EmbeddingStore], model: EmbeddingModel
) -> None:
    check_tenants(backend[1], model)


def test_tenants_only_see_their_documents_in_memory(
    memory: EmbeddingStore, model: EmbeddingModel
) -> None:
    check_tenants(memory, model)
