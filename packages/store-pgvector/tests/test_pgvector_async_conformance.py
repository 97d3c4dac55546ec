"""The testkit's AsyncEmbeddingStoreSuite, unchanged, on a real PostgreSQL + pgvector."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ragloom.stores.pgvector import PgVectorEmbeddingStore
from ragloom.testkit import AsyncEmbeddingStoreSuite

pytestmark = pytest.mark.integration


class TestPgVectorAsyncConformance(AsyncEmbeddingStoreSuite):
    """The async methods on psycopg's AsyncConnectionPool (4 connections, as the sync pool)."""

    @pytest.fixture
    def store(
        self, pg_dsn: str, table_name: str, dimension: int
    ) -> Iterator[PgVectorEmbeddingStore]:
        with PgVectorEmbeddingStore(pg_dsn, table_name, dimension=dimension, pool_size=4) as store:
            yield store
