"""Cross-package: one question routed to a SQL database and to an embedding store.

A LanguageModelQueryRouter (scripted model) sends the question to the text-to-SQL
retriever (real SQLite file, read-only) and to the in-memory EmbeddingStoreContentRetriever;
DefaultContentAggregator fuses both lists by reciprocal rank fusion, and RagAssistant
answers from both kinds of sources. A second question is routed to the documents only.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloom.core import (
    ContentRetriever,
    DefaultContentAggregator,
    DefaultRetrievalAugmentor,
    EmbeddingStoreContentRetriever,
    InMemoryEmbeddingStore,
    LanguageModelQueryRouter,
    RagAssistant,
    TextSegment,
)
from ragloom.core.chat.messages import ChatMessage
from ragloom.retrievers.sql import SqlDatabaseContentRetriever
from ragloom.testkit import FakeEmbeddingModel, ScriptedChatModel

POLICIES = [
    "Refunds are paid within 30 days of a returned order.",
    "Shipping to Europe takes five working days.",
    "Gift cards never expire and cannot be refunded.",
]
SQL = "SELECT customer, SUM(total) AS spent FROM orders GROUP BY customer ORDER BY spent DESC"


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, total REAL)")
        db.executemany(
            "INSERT INTO orders (customer, total) VALUES (?, ?)",
            [("Ada", 120.0), ("Grace", 40.0), ("Ada", 25.5), ("Linus", 60.0)],
        )
    return path


def _route(messages: list[ChatMessage]) -> str:
    """The router's model: numbers of the options that fit the question."""
    prompt = messages[-1].text
    assert "1: Sales database" in prompt
    assert "2: Shop policy documents" in prompt
    question = prompt.rsplit("User query:", 1)[1]
    return "1, 2" if "spent" in question else "2"


def _answer(messages: list[ChatMessage]) -> str:
    """The assistant's model: answers from what was injected into the user message."""
    context = messages[-1].text
    parts = []
    if "Ada | 145.5" in context:
        parts.append("Ada spent the most (145.50).")
    if "Refunds are paid within 30 days" in context:
        parts.append("Refunds are paid within 30 days.")
    return " ".join(parts) or "I do not know."


@pytest.fixture
def assistant(shop: Path) -> Iterator[tuple[RagAssistant, ScriptedChatModel]]:
    model = FakeEmbeddingModel(dimension=64)
    store = InMemoryEmbeddingStore()
    segments = [TextSegment(text, {"source": "policies.md"}) for text in POLICIES]
    store.add_all(model.embed_all(segments).embeddings, segments)
    sql_model = ScriptedChatModel([f"```sql\n{SQL}\n```"])
    sql = SqlDatabaseContentRetriever(f"sqlite:///{shop}", sql_model)
    documents = EmbeddingStoreContentRetriever(store, model, max_results=2)
    descriptions: dict[ContentRetriever, str] = {
        sql: "Sales database: orders, customers and amounts",
        documents: "Shop policy documents",
    }
    router = LanguageModelQueryRouter(ScriptedChatModel(_route), descriptions)
    augmentor = DefaultRetrievalAugmentor(
        query_router=router, content_aggregator=DefaultContentAggregator()
    )
    with augmentor:
        yield RagAssistant(ScriptedChatModel(_answer), retrieval_augmentor=augmentor), sql_model


def test_one_question_is_answered_from_the_database_and_the_documents(
    assistant: tuple[RagAssistant, ScriptedChatModel], shop: Path
) -> None:
    rag, sql_model = assistant
    result = rag.chat("Who spent the most, and how are refunds paid?")
    assert result.content == "Ada spent the most (145.50). Refunds are paid within 30 days."
    from_sql = [c for c in result.sources if "sql" in c.metadata]
    from_store = [c for c in result.sources if c.embedding_id is not None]
    assert len(from_sql) == 1
    assert len(from_store) == 2
    assert len(result.sources) == 3
    assert from_sql[0].metadata["sql"] == SQL
    assert from_sql[0].text.splitlines()[1] == "Ada | 145.5"
    assert from_store[0].text == POLICIES[0]  # the embedding search's best match
    # RRF: each list's first item (1/61) ahead of the store's second (1/62).
    assert {c.text for c in result.sources[:2]} == {from_sql[0].text, POLICIES[0]}
    assert result.sources[2] is from_store[1]
    [schema_prompt] = sql_model.requests
    assert "orders" in schema_prompt.messages[0].text  # the schema went to the SQL model
    with sqlite3.connect(shop) as db:  # read-only: the data is intact
        assert db.execute("SELECT COUNT(*) FROM orders").fetchone() == (4,)


def test_a_policy_question_is_routed_to_the_documents_only(
    assistant: tuple[RagAssistant, ScriptedChatModel],
) -> None:
    rag, sql_model = assistant
    result = rag.chat("How are refunds paid?")
    assert result.content == "Refunds are paid within 30 days."
    assert result.sources
    assert all(c.embedding_id is not None for c in result.sources)
    assert sql_model.requests == []  # the database was not asked
