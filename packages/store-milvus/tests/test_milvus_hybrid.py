"""MilvusHybridContentRetriever on Milvus Lite 2.5: Milvus's BM25 function, sparse vectors
and RRFRanker in one hybrid_search, against the real MiniLM embedding model."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pymilvus import MilvusClient  # type: ignore[import-untyped]

from ragloom.core.document import Document, TextSegment
from ragloom.core.embedding import Embedding
from ragloom.core.errors import EmbeddingStoreError, InvalidArgumentError, InvalidFilterError
from ragloom.core.filters import metadata_key
from ragloom.core.query import Query, QueryMetadata
from ragloom.core.stores.base import EmbeddingSearchRequest
from ragloom.embeddings.onnx import AllMiniLmL6V2QuantizedEmbeddingModel
from ragloom.stores.milvus import MilvusEmbeddingStore, MilvusHybridContentRetriever
from ragloom.testkit import ContentRetrieverSuite
from ragloom.testkit.fake_embedding_model import FakeEmbeddingModel

pytestmark = pytest.mark.integration

DOCS = {
    "auth": "Sessions end after an hour; code E4711 then asks the user to sign in again.",
    "disk": "Error E4117 is raised when the disk is full.",
    "net": "Error E4771 is raised when the network is down.",
    "perm": "Error E7411 is raised when permission is denied.",
    "cats": "Felines sleep most of the day and hunt small animals at night.",
    "cars": "An automobile engine turns fuel into motion through combustion.",
    "rain": "Precipitation forms when water vapour condenses in clouds.",
}


@pytest.fixture(scope="module")
def minilm() -> AllMiniLmL6V2QuantizedEmbeddingModel:
    return AllMiniLmL6V2QuantizedEmbeddingModel()


@pytest.fixture
def store(milvus_client: MilvusClient, collection_name: str) -> Iterator[MilvusEmbeddingStore]:
    with MilvusEmbeddingStore(
        client=milvus_client, collection_name=collection_name, full_text=True
    ) as store:
        yield store


def build(
    store: MilvusEmbeddingStore, model: object, docs: dict[str, str]
) -> MilvusHybridContentRetriever:
    retriever = MilvusHybridContentRetriever(store, model, max_results=len(docs))  # type: ignore[arg-type]
    retriever.add_all([TextSegment(t, {"topic": k}) for k, t in docs.items()], ids=list(docs))
    return retriever


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


class TestMilvusHybridSuite(ContentRetrieverSuite):
    @pytest.fixture
    def retriever(
        self, corpus: list[Document], store: MilvusEmbeddingStore
    ) -> MilvusHybridContentRetriever:
        r = MilvusHybridContentRetriever(store, FakeEmbeddingModel(64), max_results=5)
        r.add_all([d.to_text_segment() for d in corpus])
        return r


def test_exact_identifier_found_that_dense_alone_misses(
    store: MilvusEmbeddingStore, minilm: AllMiniLmL6V2QuantizedEmbeddingModel
) -> None:
    retriever = build(store, minilm, DOCS)
    query = "E4711"
    dense = store.search(EmbeddingSearchRequest(minilm.embed(query).embedding, max_results=1))
    assert dense.matches[0].embedding_id != "auth"  # dense alone misses the code
    assert keyword_ids(store, query) == ["auth"]
    top = retriever.retrieve(Query(query))[0]
    assert top.text_segment.metadata["topic"] == "auth"
    assert top.metadata["embedding_id"] == "auth"


def test_paraphrase_found_that_keyword_alone_misses(
    store: MilvusEmbeddingStore, minilm: AllMiniLmL6V2QuantizedEmbeddingModel
) -> None:
    retriever = build(store, minilm, DOCS)
    query = "kitties nap through daytime"
    assert "cats" not in keyword_ids(store, query)  # no shared term
    assert retriever.retrieve(Query(query))[0].text_segment.metadata["topic"] == "cats"


def tagged(store: MilvusEmbeddingStore, filter: object = None) -> MilvusHybridContentRetriever:
    """Four entries over two tenants; two mention the code E4711."""
    r = MilvusHybridContentRetriever(
        store,
        FakeEmbeddingModel(16),
        max_results=10,
        filter=filter,  # type: ignore[arg-type]
    )
    r.add_all(
        [
            TextSegment("code E4711 for tenant a", {"tenant": "a", "n": 1}),
            TextSegment("code E4711 for tenant b", {"tenant": "b", "n": 2}),
            TextSegment("plain memo for tenant a", {"tenant": "a", "n": 3}),
            TextSegment("plain memo for tenant\nb", {"tenant": "b\n", "n": 4}),
        ],
        ids=["a1", "b1", "a2", "b2"],
    )
    return r


def ids_of(retriever: MilvusHybridContentRetriever, text: str) -> set[str]:
    return {c.metadata["embedding_id"] for c in retriever.retrieve(Query(text))}


def test_filter_applies_to_both_rankings(store: MilvusEmbeddingStore) -> None:
    r = tagged(store, metadata_key("tenant").is_equal_to("a"))
    assert ids_of(r, "E4711") == {"a1", "a2"}  # tenant b's E4711 is kept out of both legs
    r.filter = lambda query: metadata_key("tenant").is_equal_to(query.metadata.chat_memory_id)
    found = r.retrieve(Query("E4711", QueryMetadata(chat_memory_id="b")))
    assert {c.metadata["embedding_id"] for c in found} == {"b1"}
    r.filter = metadata_key("n").is_greater_than(1) & metadata_key("tenant").is_not_equal_to("b")
    assert ids_of(r, "E4711") == {"a2", "b2"}
    r.filter = metadata_key("tenant").is_equal_to("nobody")
    assert r.retrieve(Query("E4711")) == []
    r.filter = metadata_key("tenant").is_equal_to('a" or id != "')  # a value, not syntax
    assert r.retrieve(Query("E4711")) == []


def test_filter_milvus_cannot_state_is_resolved_exactly(store: MilvusEmbeddingStore) -> None:
    # A control character cannot be written in a Milvus expression: checked in Python.
    r = tagged(store, metadata_key("tenant").is_equal_to("b\n"))
    assert ids_of(r, "E4711 memo") == {"b2"}
    r.filter = ~metadata_key("tenant").contains_string("a")  # no "not like" in Milvus Lite
    assert ids_of(r, "E4711 memo") == {"b1", "b2"}
    r.filter = metadata_key("tenant").is_equal_to("c\n")
    assert r.retrieve(Query("E4711")) == []


def test_filter_type_mismatch_raises_like_the_store(store: MilvusEmbeddingStore) -> None:
    r = tagged(store, metadata_key("tenant").is_equal_to(1))
    with pytest.raises(InvalidFilterError, match="tenant"):
        r.retrieve(Query("E4711"))


def test_remove_by_ids_filter_and_all(store: MilvusEmbeddingStore) -> None:
    r = tagged(store)

    def legs(text: str) -> tuple[set[str], set[str]]:
        dense = store.search(
            EmbeddingSearchRequest(r.embedding_model.embed(text).embedding, max_results=10)
        )
        return {m.embedding_id for m in dense.matches}, set(keyword_ids(store, text))

    r.remove_all(["a1", "missing"])
    assert legs("E4711 code") == ({"b1", "a2", "b2"}, {"b1"})
    r.remove_all(filter=metadata_key("tenant").is_in(["b", "b\n"]))
    assert legs("E4711 code memo") == ({"a2"}, {"a2"})
    assert ids_of(r, "memo") == {"a2"}
    with pytest.raises(EmbeddingStoreError, match="ids or a filter"):
        r.remove_all(["a2"], filter=metadata_key("n").is_equal_to(3))
    r.remove_all()
    assert r.retrieve(Query("memo")) == []
    assert len(store) == 0


def test_entries_without_segment_and_queries_without_terms(store: MilvusEmbeddingStore) -> None:
    r = tagged(store)
    store.add(Embedding(r.embedding_model.embed("E4711").embedding.vector), id="bare")
    found = ids_of(r, "E4711")
    assert "bare" not in found
    assert {"a1", "b1"} <= found
    assert ids_of(r, "the of and") <= {"a1", "b1", "a2", "b2"}  # stop words: dense only
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
