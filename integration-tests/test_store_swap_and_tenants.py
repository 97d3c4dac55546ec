"""Cross-package: the same pipeline on the in-memory store and on PostgreSQL + pgvector.

Ingest the shipped docs with the real default model into both stores; the same queries
must return the same segments in the same order with the same scores, and per-user
(tenant) filters driven by the assistant's memory id must isolate users on both.
Needs the pgvector service: `bash scripts/services/pgvector.sh start`.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import psycopg
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
from ragloom.stores.pgvector import PgVectorEmbeddingStore
from ragloom.testkit.scripted_chat_model import ScriptedChatModel

DOCS = Path(__file__).resolve().parent.parent / "docs"
DSN = os.environ.get(
    "RAGLOOM_PG_DSN",
    f"postgresql://postgres@127.0.0.1:{os.environ.get('RAGLOOM_PG_PORT', '55433')}/postgres",
)
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
def pg_store(model: EmbeddingModel) -> Iterator[PgVectorEmbeddingStore]:
    try:
        psycopg.connect(DSN, connect_timeout=3).close()
    except psycopg.OperationalError as exc:
        pytest.fail(
            f"PostgreSQL + pgvector not reachable at {DSN} ({exc}); start it with "
            "`bash scripts/services/pgvector.sh start`",
            pytrace=False,
        )
    table = f"swap_{uuid.uuid4().hex[:10]}"
    store = PgVectorEmbeddingStore(DSN, table, dimension=model.dimension, index="none")
    yield store
    store.close()
    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute(f'DROP TABLE IF EXISTS "{table}"')


def tenant_documents() -> list[Document]:
    documents = load_documents(DOCS)
    assert documents.failures == []
    for number, document in enumerate(documents):
        document.metadata["tenant"] = "alice" if number % 2 == 0 else "bob"
    return list(documents)


@pytest.fixture(scope="module")
def stores(model: EmbeddingModel, pg_store: PgVectorEmbeddingStore) -> dict[str, EmbeddingStore]:
    documents = tenant_documents()
    memory = InMemoryEmbeddingStore()
    for store in (memory, pg_store):
        result = EmbeddingStoreIngestor(store, model).ingest(documents)
        assert result.failures == []
    return {"memory": memory, "pgvector": pg_store}


def test_same_results_on_both_stores(
    stores: dict[str, EmbeddingStore], model: EmbeddingModel
) -> None:
    for text in QUERIES:
        request = EmbeddingSearchRequest(model.embed(text).embedding, max_results=5)
        memory = stores["memory"].search(request).matches
        pg = stores["pgvector"].search(request).matches
        assert [m.embedding_id for m in memory] == [m.embedding_id for m in pg]
        for a, b in zip(memory, pg, strict=True):
            assert a.score == pytest.approx(b.score, abs=1e-5)
            assert a.embedded is not None
            assert b.embedded is not None
            assert a.embedded.text == b.embedded.text
            assert a.embedded.metadata == b.embedded.metadata


def test_reingesting_into_pgvector_adds_nothing(
    stores: dict[str, EmbeddingStore], model: EmbeddingModel
) -> None:
    probe = EmbeddingSearchRequest(model.embed("anything").embedding, max_results=1000)
    before = len(stores["pgvector"].search(probe).matches)
    EmbeddingStoreIngestor(stores["pgvector"], model).ingest(tenant_documents())
    assert len(stores["pgvector"].search(probe).matches) == before


@pytest.mark.parametrize("backend", ["memory", "pgvector"])
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
