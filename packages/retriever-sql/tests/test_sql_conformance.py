"""SqlDatabaseContentRetriever passes the ContentRetrieverSuite on real SQLite and PostgreSQL.

The suite's corpus is a ``documents(topic, body)`` table. The chat model is scripted: it
writes, for each question, a query ranking the rows by how many of the question's words
(4+ letters) they contain, so the whole loop (prompt, extraction, sqlglot check,
read-only execution, one Content per row with its columns as metadata) runs for real.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from psycopg import sql

from ragloom.core.chat.messages import ChatMessage
from ragloom.core.document import Document
from ragloom.retrievers.sql import SqlDatabaseContentRetriever
from ragloom.testkit import ContentRetrieverSuite, ScriptedChatModel


def ranking_sql(messages: list[ChatMessage]) -> str:
    """The scripted model: a keyword-ranking SELECT for the question in the prompt."""
    question = messages[-1].text.removeprefix("Question: ").lower()
    words = sorted(set(re.findall(r"[a-z]{4,}", question)))
    score = " + ".join(f"(CASE WHEN lower(body) LIKE '%{w}%' THEN 1 ELSE 0 END)" for w in words)
    score = score or "0"
    return (
        f"```sql\nSELECT topic, body FROM (SELECT topic, body, {score} AS hits FROM documents) r\n"
        "WHERE hits > 0 ORDER BY hits DESC, topic\n```"
    )


def rows(corpus: list[Document]) -> list[tuple[str, str]]:
    return [(str(d.metadata["topic"]), d.text) for d in corpus]


class TestSqliteConformance(ContentRetrieverSuite):
    @pytest.fixture
    def retriever(self, corpus: list[Document], tmp_path: Path) -> SqlDatabaseContentRetriever:
        path = tmp_path / "corpus.db"
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE documents (topic TEXT PRIMARY KEY, body TEXT NOT NULL)")
            conn.executemany("INSERT INTO documents VALUES (?, ?)", rows(corpus))
        conn.close()
        model = ScriptedChatModel(ranking_sql)
        return SqlDatabaseContentRetriever(f"sqlite:///{path}", model, content_per_row=True)


@pytest.mark.integration
class TestPostgresConformance(ContentRetrieverSuite):
    @pytest.fixture
    def retriever(
        self, corpus: list[Document], pg_admin: str, pg_shop: tuple[str, str]
    ) -> Iterator[SqlDatabaseContentRetriever]:
        reader, schema = pg_shop
        with psycopg.connect(pg_admin, autocommit=True) as conn:
            conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(schema)))
            conn.execute("TRUNCATE documents")
            conn.cursor().executemany("INSERT INTO documents VALUES (%s, %s)", rows(corpus))
        engine = sa.create_engine(reader.replace("postgresql://", "postgresql+psycopg://", 1))
        yield SqlDatabaseContentRetriever(
            engine, ScriptedChatModel(ranking_sql), schema=schema, content_per_row=True
        )
        engine.dispose()
