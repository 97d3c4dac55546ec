"""The testkit suites, unchanged, on Milvus Lite (the native 2.5 engine) through pymilvus."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pymilvus import MilvusClient  # type: ignore[import-untyped]

from ragloom.stores.milvus import MilvusEmbeddingStore
from ragloom.testkit import Deviation, EmbeddingStoreFilterSuite, EmbeddingStoreSuite

pytestmark = pytest.mark.integration


class TestMilvusConformance(EmbeddingStoreSuite, EmbeddingStoreFilterSuite):
    """FLAT (exact) cosine index, typed JSON metadata, a fresh collection per test."""

    @pytest.fixture
    def store(
        self, milvus_client: MilvusClient, collection_name: str, dimension: int
    ) -> Iterator[MilvusEmbeddingStore]:
        with MilvusEmbeddingStore(
            client=milvus_client, collection_name=collection_name, dimension=dimension
        ) as store:
            yield store


class TestMilvusWithoutTypeChecks(EmbeddingStoreFilterSuite):
    """``type_checks=False``: no probe query before filtered calls (faster on large
    collections without a JSON index); a mismatched entry is simply not matched."""

    raises_on_filter_type_mismatch = Deviation(
        "type_checks=False skips the query that looks for stored values of an incompatible "
        "type; such entries then match neither a comparison nor its negation"
    )

    @pytest.fixture
    def store(
        self, milvus_client: MilvusClient, collection_name: str, dimension: int
    ) -> Iterator[MilvusEmbeddingStore]:
        with MilvusEmbeddingStore(
            client=milvus_client,
            collection_name=collection_name,
            dimension=dimension,
            type_checks=False,
        ) as store:
            yield store
