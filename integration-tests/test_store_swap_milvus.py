"""Cross-package: the same pipeline on the in-memory store and on Milvus (Milvus Lite).

Ingest the shipped docs with the real default model into both stores; the same queries
must return the same segments in the same order with scores equal to 1e-6 (Milvus's FLAT
index is exact and the store rescores with core's exact cosines), and per-user (tenant)
filters driven by the assistant's memory id must isolate users on both. Milvus Lite runs
in a process pymilvus starts for the local .db file: no service to start.
"""

from __future__ import annotations

from collections.abc import Iterator
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
    metadata_key,
    plugins,
)
from ragloom.easy_rag import load_documents
from ragloom.stores.milvus import MilvusEmbeddingStore
from ragloom.testkit.scripted_chat_model import ScriptedChatModel

DOCS = Path(__file__).resolve().parent.parent / "docs"
QUERIES = [
    "How do I filter by metadata?",
    "What happens when I ingest the same documents again?",
    "Which parsers handle PDF and Office files?",
]

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def model() -> EmbeddingModel:
    return cast(EmbeddingModel, plugins.load_default(plugins.EMBEDDING_MODELS))


@pytest.fixture(scope="module")
def milvus_store(
    model: EmbeddingModel, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MilvusEmbeddingStore]:
    path = tmp_path_factory.mktemp("milvus") / "swap.db"
    with MilvusEmbeddingStore(str(path), "swap", dimension=model.dimension) as store:
        yield store


def tenant_documents() -> list[Document]:
    documents = load_documents(DOCS)
    assert documents.failures == []
    for number, document in enumerate(documents):
        document.metadata["tenant"] = "alice" if number % 2 == 0 else "bob"
    return list(documents)


@pytest.fixture(scope="module")
def stores(model: EmbeddingModel, milvus_store: MilvusEmbeddingStore) -> dict[str, EmbeddingStore]:
    documents = tenant_documents()
    memory = InMemoryEmbeddingStore()
    for store in (memory, milvus_store):
        result = EmbeddingStoreIngestor(store, model).ingest(documents)
        assert result.failures == []
    return {"memory": memory, "milvus": milvus_store}


def test_same_results_on_both_stores(
    stores: dict[str, EmbeddingStore], model: EmbeddingModel
) -> None:
    for text in QUERIES:
        for condition in (None, metadata_key("tenant").is_equal_to("bob")):
            request = EmbeddingSearchRequest(
                model.embed(text).embedding, max_results=5, filter=condition
            )
            memory = stores["memory"].search(request).matches
            milvus = stores["milvus"].search(request).matches
            assert [m.embedding_id for m in memory] == [m.embedding_id for m in milvus]
            for a, b in zip(memory, milvus, strict=True):
                assert a.score == pytest.approx(b.score, abs=1e-6)
                assert a.embedded is not None
                assert b.embedded is not None
                assert a.embedded.text == b.embedded.text
                assert a.embedded.metadata == b.embedded.metadata


def test_reingesting_into_milvus_adds_nothing(
    stores: dict[str, EmbeddingStore], model: EmbeddingModel
) -> None:
    store = cast(MilvusEmbeddingStore, stores["milvus"])
    before = len(store)
    EmbeddingStoreIngestor(store, model).ingest(tenant_documents())
    assert len(store) == before


@pytest.mark.parametrize("backend", ["memory", "milvus"])
def test_tenants_only_see_their_documents(
    stores: dict[str, EmbeddingStore], model: EmbeddingModel, backend: str
) -> None:
    retriever = EmbeddingStoreContentRetriever(
        stores[backend],
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
