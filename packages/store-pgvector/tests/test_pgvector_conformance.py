"""The testkit suites, unchanged, on a real PostgreSQL + pgvector (HNSW and exact scans)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from psycopg_pool import ConnectionPool

from ragloom.core import EmbeddingStoreContentRetriever, HybridContentRetriever
from ragloom.core.document import Document
from ragloom.stores.pgvector import PgFullTextContentRetriever, PgVectorEmbeddingStore
from ragloom.testkit import (
    ContentRetrieverSuite,
    EmbeddingStoreFilterSuite,
    EmbeddingStoreSuite,
    FakeEmbeddingModel,
)

pytestmark = pytest.mark.integration


class TestPgVectorConformance(EmbeddingStoreSuite, EmbeddingStoreFilterSuite):
    """The default store: HNSW cosine index, typed JSONB metadata."""

    @pytest.fixture
    def store(
        self, pg_pool: ConnectionPool[Any], table_name: str, dimension: int
    ) -> Iterator[PgVectorEmbeddingStore]:
        with PgVectorEmbeddingStore(pg_pool, table_name, dimension=dimension) as store:
            yield store


class TestPgVectorExactScanConformance(EmbeddingStoreSuite, EmbeddingStoreFilterSuite):
    """No vector index: exact sequential scans, owning its connection pool."""

    @pytest.fixture
    def store(
        self, pg_dsn: str, table_name: str, dimension: int
    ) -> Iterator[PgVectorEmbeddingStore]:
        with PgVectorEmbeddingStore(
            pg_dsn, table_name, dimension=dimension, index="none", pool_size=2
        ) as store:
            yield store


class TestPgFullTextConformance(ContentRetrieverSuite):
    @pytest.fixture
    def retriever(
        self, pg_pool: ConnectionPool[Any], table_name: str, corpus: list[Document]
    ) -> Iterator[PgFullTextContentRetriever]:
        model = FakeEmbeddingModel()
        segments = [document.to_text_segment() for document in corpus]
        embeddings = model.embed_all(segments).embeddings
        with PgVectorEmbeddingStore(
            pg_pool, table_name, dimension=embeddings[0].dimension
        ) as store:
            store.add_all(embeddings, segments)
            yield PgFullTextContentRetriever(store, language="english", max_results=5)


class TestPgHybridConformance(ContentRetrieverSuite):
    """Core's HybridContentRetriever over one table: pgvector search and full-text search."""

    @pytest.fixture
    def retriever(
        self, pg_pool: ConnectionPool[Any], table_name: str, corpus: list[Document]
    ) -> Iterator[HybridContentRetriever]:
        model = FakeEmbeddingModel()
        segments = [document.to_text_segment() for document in corpus]
        with PgVectorEmbeddingStore(pg_pool, table_name, dimension=model.dimension) as store:
            store.add_all(model.embed_all(segments).embeddings, segments)
            yield HybridContentRetriever(
                EmbeddingStoreContentRetriever(store, model, max_results=5),
                PgFullTextContentRetriever(store, max_results=5),
                max_results=3,
            )
