"""QdrantEmbeddingStore passes the testkit suites unchanged, on qdrant-client's local mode.

Local mode is qdrant-client's own engine (same client API and filter semantics as a
server, in-process): no service to start, nothing mocked. Both the in-memory and the
on-disk (``path``) variants run the suites.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloom.stores.qdrant import QdrantEmbeddingStore
from ragloom.testkit import EmbeddingStoreFilterSuite, EmbeddingStoreSuite


class TestQdrantConformance(EmbeddingStoreSuite, EmbeddingStoreFilterSuite):
    @pytest.fixture
    def store(self, dimension: int) -> Iterator[QdrantEmbeddingStore]:
        """A fresh collection in memory per test."""
        collection = f"test_{uuid.uuid4().hex[:12]}"
        store = QdrantEmbeddingStore(collection, location=":memory:", dimension=dimension)
        yield store
        store.remove_all()
        store.close()


class TestQdrantOnDiskConformance(EmbeddingStoreSuite):
    @pytest.fixture
    def store(self, dimension: int, tmp_path: Path) -> Iterator[QdrantEmbeddingStore]:
        """A fresh collection persisted under a temporary directory per test."""
        store = QdrantEmbeddingStore("ragloom", path=tmp_path / "qdrant", dimension=dimension)
        yield store
        store.close()
