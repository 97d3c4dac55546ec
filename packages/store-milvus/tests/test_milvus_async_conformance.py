"""The testkit's AsyncEmbeddingStoreSuite, unchanged, on Milvus Lite through pymilvus."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloom.stores.milvus import MilvusEmbeddingStore
from ragloom.testkit import AsyncEmbeddingStoreSuite

pytestmark = pytest.mark.integration


class TestMilvusAsyncConformance(AsyncEmbeddingStoreSuite):
    """A store opened with ``uri``: its async methods run on its own ``AsyncMilvusClient``
    (a store given only a sync ``client`` would run them in threads)."""

    @pytest.fixture
    def store(
        self, milvus_db: Path, collection_name: str, dimension: int
    ) -> Iterator[MilvusEmbeddingStore]:
        with MilvusEmbeddingStore(str(milvus_db), collection_name, dimension=dimension) as store:
            yield store
