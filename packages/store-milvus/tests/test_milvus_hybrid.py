"""MilvusHybridContentRetriever on Milvus Lite 2.5: Milvus's BM25 function, sparse vectors
and RRFRanker in one hybrid_search, against the real MiniLM embedding model.

The shared hybrid contract is the testkit's HybridContentRetrieverSuite; the tests below
are Milvus's own (filters no Milvus expression can state, entries without a segment, the
full_text collection setting, argument checks)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from pymilvus import MilvusClient  # type: ignore[import-untyped]

from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding, EmbeddingModel
from ragloom.core.errors import EmbeddingStoreError, InvalidArgumentError
from ragloom.core.filters import Filter, metadata_key
from ragloom.core.query import Query
from ragloom.core.stores.base import EmbeddingSearchRequest
from ragloom.embeddings.onnx import AllMiniLmL6V2QuantizedEmbeddingModel
from ragloom.stores.milvus import MilvusEmbeddingStore, MilvusHybridContentRetriever
from ragloom.stores.milvus._registry import registry_name
from ragloom.testkit import HybridContentRetrieverSuite
from ragloom.testkit.fake_embedding_model import FakeEmbeddingModel

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def minilm() -> AllMiniLmL6V2QuantizedEmbeddingModel:
    return AllMiniLmL6V2QuantizedEmbeddingModel()


@pytest.fixture
def store(milvus_client: MilvusClient, collection_name: str) -> Iterator[MilvusEmbeddingStore]:
    with MilvusEmbeddingStore(
        client=milvus_client, collection_name=collection_name, full_text=True
    ) as store:
        yield store


def keyword_ids(store: MilvusEmbeddingStore, text: str) -> list[str]:
    """Milvus's BM25 ranking alone."""
    hits = store.client.search(
        store.collection_name,
        data=[text],
        anns_field="sparse",
        limit=10,
        search_params={"metric_type": "BM25"},
        output_fields=["id"],
        consistency_level="Strong",
    )
    return [hit["entity"]["id"] for hit in hits[0]]


class MilvusHybridHarness:
    """Fresh full-text collections on the session's Milvus Lite client, dropped by
    :meth:`close`; the legs asked of the store (dense) and of the BM25 field (keyword)."""

    def __init__(self, client: MilvusClient, semantic_model: EmbeddingModel) -> None:
        self.client = client
        self.semantic_model = semantic_model
        self._collections: list[str] = []

    def retriever(
        self, embedding_model: EmbeddingModel, *, max_results: int, filter: Filter | None = None
    ) -> MilvusHybridContentRetriever:
        name = f"h_{uuid.uuid4().hex[:16]}"
        self._collections += [name, registry_name(name)]
        store = MilvusEmbeddingStore(client=self.client, collection_name=name, full_text=True)
        return MilvusHybridContentRetriever(
            store, embedding_model, max_results=max_results, filter=filter
        )

    def legs(
        self, retriever: MilvusHybridContentRetriever, text: str
    ) -> tuple[list[str], list[str]]:
        query = retriever.embedding_model.embed(text).embedding
        dense = retriever.store.search(EmbeddingSearchRequest(query, max_results=10))
        return [m.embedding_id for m in dense.matches], keyword_ids(retriever.store, text)

    def close(self) -> None:
        for name in self._collections:
            if self.client.has_collection(name):
                self.client.drop_collection(name)


class TestMilvusHybridSuite(HybridContentRetrieverSuite):
    @pytest.fixture
    def harness(
        self, milvus_client: MilvusClient, minilm: AllMiniLmL6V2QuantizedEmbeddingModel
    ) -> Iterator[MilvusHybridHarness]:
        harness = MilvusHybridHarness(milvus_client, minilm)
        yield harness
        harness.close()


def tagged(
    store: MilvusEmbeddingStore, filter: Filter | None = None
) -> MilvusHybridContentRetriever:
    """Entries whose tenants a Milvus expression cannot state (a control character)."""
    r = MilvusHybridContentRetriever(store, FakeEmbeddingModel(16), max_results=10, filter=filter)
    r.add_all(
        [
            TextSegment("code E4711 for tenant a", {"tenant": "a", "n": 1}),
            TextSegment("code E4711 for tenant b", {"tenant": "b", "n": 2}),
            TextSegment("plain memo for tenant\nb", {"tenant": "b\n", "n": 4}),
        ],
        ids=["a1", "b1", "b2"],
    )
    return r


def ids_of(retriever: MilvusHybridContentRetriever, text: str) -> set[str]:
    return {c.metadata["embedding_id"] for c in retriever.retrieve(Query(text))}


def test_filter_milvus_cannot_state_is_resolved_exactly(store: MilvusEmbeddingStore) -> None:
    # A control character cannot be written in a Milvus expression: checked in Python.
    r = tagged(store, metadata_key("tenant").is_equal_to("b\n"))
    assert ids_of(r, "E4711 memo") == {"b2"}
    r.filter = ~metadata_key("tenant").contains_string("a")  # no "not like" in Milvus Lite
    assert ids_of(r, "E4711 memo") == {"b1", "b2"}
    r.filter = metadata_key("tenant").is_equal_to("c\n")
    assert r.retrieve(Query("E4711")) == []
    r.filter = metadata_key("n").is_greater_than(1) & metadata_key("tenant").is_not_equal_to("b")
    assert ids_of(r, "E4711 memo") == {"b2"}
    r.filter = None
    r.remove_all(filter=metadata_key("tenant").is_in(["b\n"]))  # removal, resolved the same way
    assert ids_of(r, "E4711 memo") == {"a1", "b1"}


def test_entries_without_segment_and_queries_without_terms(store: MilvusEmbeddingStore) -> None:
    r = tagged(store)
    store.add(Embedding(r.embedding_model.embed("E4711").embedding.vector), id="bare")
    found = ids_of(r, "E4711")
    assert "bare" not in found
    assert {"a1", "b1"} <= found
    assert ids_of(r, "the of and") <= {"a1", "b1", "b2"}  # stop words: dense only
    assert isinstance(r.retrieve(Query("")), list)


def test_dense_only_collection_is_refused_with_what_to_do(
    milvus_client: MilvusClient, collection_name: str
) -> None:
    with (
        MilvusEmbeddingStore(
            client=milvus_client, collection_name=collection_name, dimension=8
        ) as dense_only,
        pytest.raises(EmbeddingStoreError, match="full_text=True"),
    ):
        MilvusHybridContentRetriever(dense_only, FakeEmbeddingModel(8))
    with pytest.raises(EmbeddingStoreError, match="without the BM25 function.*new collection"):
        MilvusEmbeddingStore(client=milvus_client, collection_name=collection_name, full_text=True)


def test_reopened_full_text_collection_is_recognized(
    store: MilvusEmbeddingStore, milvus_client: MilvusClient
) -> None:
    tagged(store)
    with MilvusEmbeddingStore(client=milvus_client, collection_name=store.collection_name) as again:
        assert again.full_text
        r = MilvusHybridContentRetriever(again, FakeEmbeddingModel(16))
        assert "a1" in ids_of(r, "E4711")


def test_settings_and_dimension_are_checked(store: MilvusEmbeddingStore) -> None:
    model = FakeEmbeddingModel(16)
    empty = MilvusHybridContentRetriever(
        store, model, filter=~metadata_key("k").contains_string("a")
    )
    assert empty.retrieve(Query("E4711")) == []  # before the first write
    empty.filter = "not a filter"  # type: ignore[assignment]
    with pytest.raises(EmbeddingStoreError, match="ragloom Filter"):
        empty.retrieve(Query("E4711"))
    with pytest.raises(InvalidArgumentError, match="candidates"):
        MilvusHybridContentRetriever(store, model, max_results=5, candidates=4)
    with pytest.raises(InvalidArgumentError, match="store must be"):
        MilvusHybridContentRetriever(object(), model)  # type: ignore[arg-type]
    tagged(store)
    with pytest.raises(EmbeddingStoreError, match="dimension 16"):
        MilvusHybridContentRetriever(store, FakeEmbeddingModel(8)).retrieve(Query("E4711"))
