"""The testkit's AsyncEmbeddingStoreSuite, unchanged, on qdrant-client's local mode.

Two async paths: a local-mode store runs each awaited operation in a worker thread; a
store given an ``AsyncQdrantClient`` drives it natively. No Qdrant server runs here, so
the native path runs on the async *local* client over the sync local client's collections
(one database, two clients: the calls, their arguments and the step driver are those
a server would get).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from qdrant_client import AsyncQdrantClient, QdrantClient

from ragloom.stores.qdrant import QdrantEmbeddingStore
from ragloom.testkit import AsyncEmbeddingStoreSuite, Deviation


def shared_async_client(sync: QdrantClient) -> AsyncQdrantClient:
    """An async local client over the sync local client's collections (one database)."""
    client = AsyncQdrantClient(location=":memory:")
    client._client.collections = sync._client.collections  # type: ignore[union-attr]
    return client


class TestQdrantThreadedAsyncConformance(AsyncEmbeddingStoreSuite):
    """Local mode on disk: the awaited operations run in worker threads."""

    @pytest.fixture
    def store(self, store_path: Path, dimension: int) -> Iterator[QdrantEmbeddingStore]:
        with QdrantEmbeddingStore("ragloom", path=store_path, dimension=dimension) as store:
            yield store


class TestQdrantNativeAsyncConformance(AsyncEmbeddingStoreSuite):
    """An ``AsyncQdrantClient``: the operations are awaited natively on it."""

    suspends_during_io = Deviation(
        "the native path runs here on qdrant-client's async local client, in-process Python "
        "that never awaits: each call finishes before the next starts (a server's client "
        "suspends on I/O)"
    )

    @pytest.fixture
    def store(self, dimension: int) -> Iterator[QdrantEmbeddingStore]:
        sync = QdrantClient(location=":memory:")
        yield QdrantEmbeddingStore(
            f"test_{uuid.uuid4().hex[:12]}",
            client=sync,
            async_client=shared_async_client(sync),
            dimension=dimension,
        )
        sync.close()
