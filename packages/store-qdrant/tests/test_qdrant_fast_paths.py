"""What the store's fast paths must keep: the kinds registry, no read-back, the raw client.

* Type checks read the registry instead of scrolling the collection, and still refuse a
  clashing filter or batch -- also on a collection written before the registry existed
  (no side collection: the store builds it on open) or whose registry was left unfinished.
* A batch with generated ids (nothing stored to read back first) stays all-or-nothing
  in local mode on disk.
* Searches return what qdrant-client returns for the same points (ids, order), with the
  exact scores of the in-memory store.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from qdrant_client import QdrantClient, models

from ragloom.core import (
    Embedding,
    EmbeddingSearchRequest,
    InMemoryEmbeddingStore,
    InvalidFilterError,
    TextSegment,
    metadata_key,
)
from ragloom.core.errors import EmbeddingStoreError, MetadataTypeError
from ragloom.stores.qdrant import QdrantEmbeddingStore
from ragloom.stores.qdrant._registry import registry_name


def _fill(store: QdrantEmbeddingStore, count: int = 20) -> np.ndarray[Any, Any]:
    vectors = np.random.default_rng(7).normal(size=(count, 4)).astype(np.float32)
    segments = [TextSegment(f"t{i}", {"tenant": f"t{i % 3}", "n": i}) for i in range(count)]
    store.add_all(vectors, segments, ids=[f"d{i}" for i in range(count)])
    return vectors


def _clashes_are_refused(store: QdrantEmbeddingStore) -> None:
    query = Embedding([1.0, 0.0, 0.0, 0.0])
    with pytest.raises(InvalidFilterError):
        store.search(EmbeddingSearchRequest(query, filter=metadata_key("n").is_equal_to("x")))
    with pytest.raises(MetadataTypeError):
        store.add_all([query], [TextSegment("x", {"tenant": 3})], ids=["clash"])


class _Spy:
    """Counts the client's scroll calls."""

    def __init__(self, client: QdrantClient) -> None:
        self.scrolls = 0
        scroll = client.scroll

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.scrolls += 1
            return scroll(*args, **kwargs)

        client.scroll = counted  # type: ignore[method-assign]


def test_type_checks_read_the_registry_not_the_collection() -> None:
    client = QdrantClient(location=":memory:")
    store = QdrantEmbeddingStore("docs", client=client, dimension=4)
    _fill(store)
    spy = _Spy(client)
    query = Embedding([1.0, 0.0, 0.0, 0.0])
    matches = store.search(
        EmbeddingSearchRequest(query, filter=metadata_key("tenant").is_equal_to("t1"))
    ).matches
    assert matches
    assert all(m.embedded and m.embedded.metadata["tenant"] == "t1" for m in matches)
    _fill(store)  # re-adding the same keys and kinds
    assert spy.scrolls == 0
    _clashes_are_refused(store)


@pytest.mark.parametrize("damage", ["no registry", "unfinished registry"])
def test_a_collection_without_a_complete_registry_still_refuses_clashes(
    store_path: Path, damage: str
) -> None:
    with QdrantEmbeddingStore("docs", path=store_path, dimension=4) as store:
        _fill(store)
        client = store.client
        if damage == "no registry":  # as the store wrote collections before the registry
            client.delete_collection(registry_name("docs"))
        else:  # a store killed while filling it: every field but the marker
            marker = str(uuid.uuid5(uuid.UUID("6b1d3c0e-7a55-5f0e-8c4e-2d9a4f7b1e33"), ""))
            client.delete(registry_name("docs"), models.PointIdsList(points=[marker]))
    with QdrantEmbeddingStore("docs", path=store_path) as store:
        registry = store.client.scroll(registry_name("docs"), limit=100)[0]
        assert len(registry) == 3  # the fields of "tenant" (str) and "n" (number), the marker
        _clashes_are_refused(store)


def test_a_failed_batch_of_generated_ids_is_rolled_back(store_path: Path) -> None:
    with QdrantEmbeddingStore("docs", path=store_path, dimension=4, batch_size=2) as store:
        _fill(store, 3)
        upsert, calls = store.client.upsert, []

        def failing(*args: Any, **kwargs: Any) -> Any:
            calls.append(args)
            if len(calls) == 2:  # the batch's second request
                raise RuntimeError("connection lost")
            return upsert(*args, **kwargs)

        store.client.upsert = failing  # type: ignore[method-assign]
        retrieve, read = store.client.retrieve, []

        def reading(name: str, *args: Any, **kwargs: Any) -> Any:
            read.append(name)
            return retrieve(name, *args, **kwargs)

        store.client.retrieve = reading  # type: ignore[method-assign]
        vectors = np.ones((5, 4), dtype=np.float32)
        with pytest.raises(EmbeddingStoreError, match="connection lost"):
            store.add_all(vectors, [TextSegment(f"new {i}", {"n": i}) for i in range(5)])
        store.client.upsert, store.client.retrieve = upsert, retrieve  # type: ignore[method-assign]
        assert "docs" not in read  # the batch's points were not read back first
        assert len(store) == 3
        assert store.add_all(vectors[:1])


def test_searches_return_what_the_raw_client_returns_with_exact_scores() -> None:
    rng = np.random.default_rng(3)
    count, dim = 300, 16
    vectors = rng.normal(size=(count, dim)).astype(np.float32)
    queries = rng.normal(size=(10, dim)).astype(np.float32)
    ids = [f"doc-{i}" for i in range(count)]
    segments = [TextSegment(f"text {i}", {"tenant": f"t{i % 4}"}) for i in range(count)]

    client = QdrantClient(location=":memory:")
    store = QdrantEmbeddingStore("ours", client=client, dimension=dim)
    store.add_all(vectors, segments, ids=ids)
    client.create_collection(
        "raw", vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE)
    )
    client.upsert(
        "raw",
        points=[
            models.PointStruct(id=i, vector=vectors[i].tolist(), payload={"tenant": f"t{i % 4}"})
            for i in range(count)
        ],
    )
    reference = InMemoryEmbeddingStore()
    reference.add_all(vectors, segments, ids=ids)

    for condition, raw_filter in (
        (None, None),
        (
            metadata_key("tenant").is_equal_to("t2"),
            models.Filter(
                must=[models.FieldCondition(key="tenant", match=models.MatchValue(value="t2"))]
            ),
        ),
    ):
        for query in queries:
            request = EmbeddingSearchRequest(Embedding(query), max_results=10, filter=condition)
            ours = store.search(request).matches
            raw = client.query_points(
                "raw", query=query.tolist(), limit=10, query_filter=raw_filter
            ).points
            assert [m.embedding_id for m in ours] == [ids[int(p.id)] for p in raw]
            exact = reference.search(request).matches
            assert [(m.embedding_id, m.score) for m in ours] == [
                (m.embedding_id, m.score) for m in exact
            ]
            for match, point in zip(ours, raw, strict=True):
                assert match.score == pytest.approx((point.score + 1) / 2, abs=1e-6)
