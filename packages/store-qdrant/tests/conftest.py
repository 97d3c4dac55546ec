"""Fixtures: stores on qdrant-client's local mode (the real client, no server needed)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloom.stores.qdrant import QdrantEmbeddingStore


@pytest.fixture
def memory_store() -> Iterator[QdrantEmbeddingStore]:
    """A fresh in-memory local-mode store of dimension 4."""
    store = QdrantEmbeddingStore(f"test_{uuid.uuid4().hex[:12]}", location=":memory:", dimension=4)
    yield store
    store.close()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """A directory for a persisted local-mode store."""
    return tmp_path / "qdrant"
