"""LangChain's VectorStoreIntegrationTests against ragloom's pgvector, Qdrant and Milvus
stores, through the same adapter, unchanged.

Qdrant runs in qdrant-client's local mode and Milvus as Milvus Lite (no server); pgvector
needs `bash scripts/services/pgvector.sh start` (its port from scripts/services/env.sh,
or RAGLOOM_PG_DSN) and
fails, never skips, without it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from langchain_core.vectorstores import VectorStore
from langchain_tests.integration_tests import VectorStoreIntegrationTests
from langchain_tests.integration_tests.vectorstores import EMBEDDING_SIZE
from psycopg import sql
from psycopg_pool import ConnectionPool
from pymilvus import MilvusClient  # type: ignore[import-untyped]

from ragloom.langchain import RagloomVectorStore
from ragloom.stores.milvus import MilvusEmbeddingStore
from ragloom.stores.pgvector import PgVectorEmbeddingStore
from ragloom.stores.qdrant import QdrantEmbeddingStore
from ragloom.testkit.servers import service_setting

ASYNC_SUITE = [
    pytest.mark.asyncio,
    pytest.mark.filterwarnings(
        "ignore:.*is marked with '@pytest.mark.asyncio':pytest.PytestWarning"
    ),
]
PG_DSN = service_setting("RAGLOOM_PG_DSN")  # pgvector.sh's server, or RAGLOOM_PG_DSN


@pytest.fixture(scope="module")
def pg_pool() -> Iterator[ConnectionPool[Any]]:
    try:
        with psycopg.connect(PG_DSN, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError as exc:
        pytest.fail(
            f"PostgreSQL with pgvector is not reachable at {PG_DSN}: {exc}\n"
            "Start it with `bash scripts/services/pgvector.sh start`, or set RAGLOOM_PG_DSN.",
            pytrace=False,
        )
    pool: ConnectionPool[Any] = ConnectionPool(
        PG_DSN, min_size=1, max_size=4, kwargs={"autocommit": True}, open=True, timeout=10
    )
    yield pool
    pool.close()


@pytest.fixture(scope="module")
def milvus_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MilvusClient]:
    client = MilvusClient(str(tmp_path_factory.mktemp("milvus") / "langchain.db"))
    yield client
    client.close()


@pytest.mark.integration
class TestPgVectorStoreAsLangChainVectorStore(VectorStoreIntegrationTests):
    pytestmark = ASYNC_SUITE

    @pytest.fixture
    def vectorstore(self, pg_pool: ConnectionPool[Any]) -> Iterator[VectorStore]:
        table = f"lc_{uuid.uuid4().hex[:12]}"
        with PgVectorEmbeddingStore(pg_pool, table, dimension=EMBEDDING_SIZE) as store:
            yield RagloomVectorStore(store, self.get_embeddings())
        with pg_pool.connection() as conn:
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))


class TestQdrantStoreAsLangChainVectorStore(VectorStoreIntegrationTests):
    pytestmark = ASYNC_SUITE

    @pytest.fixture
    def vectorstore(self) -> Iterator[VectorStore]:
        store = QdrantEmbeddingStore("langchain", location=":memory:", dimension=EMBEDDING_SIZE)
        yield RagloomVectorStore(store, self.get_embeddings())
        store.close()


class TestMilvusStoreAsLangChainVectorStore(VectorStoreIntegrationTests):
    pytestmark = ASYNC_SUITE

    @pytest.fixture
    def vectorstore(self, milvus_client: MilvusClient) -> Iterator[VectorStore]:
        collection = f"lc_{uuid.uuid4().hex[:16]}"
        with MilvusEmbeddingStore(
            client=milvus_client, collection_name=collection, dimension=EMBEDDING_SIZE
        ) as store:
            yield RagloomVectorStore(store, self.get_embeddings())
        for name in milvus_client.list_collections():
            if name.startswith(collection):
                milvus_client.drop_collection(name)
