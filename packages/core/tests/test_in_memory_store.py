"""InMemoryEmbeddingStore: the testkit suites plus in-memory specifics."""

from __future__ import annotations

import pytest

from ragloom.core.stores import InMemoryEmbeddingStore
from ragloom.testkit import EmbeddingStoreFilterSuite, EmbeddingStoreSuite


class TestInMemoryEmbeddingStoreConformance(EmbeddingStoreSuite, EmbeddingStoreFilterSuite):
    @pytest.fixture
    def store(self) -> InMemoryEmbeddingStore:
        return InMemoryEmbeddingStore()
