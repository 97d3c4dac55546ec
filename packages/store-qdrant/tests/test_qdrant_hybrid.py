"""QdrantHybridContentRetriever on qdrant-client's local mode: sparse BM25 vectors with
Modifier.IDF and Query API RRF fusion, against the real MiniLM embedding model."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from qdrant_client import QdrantClient

from ragloom.core.document import Document, TextSegment
from ragloom.core.errors import EmbeddingStoreError, InvalidFilterError
from ragloom.core.filters import metadata_key
from ragloom.core.query import Query, QueryMetadata
from ragloom.embeddings.onnx import AllMiniLmL6V2QuantizedEmbeddingModel
from ragloom.stores.qdrant.hybrid import QdrantHybridContentRetriever
from ragloom.testkit import ContentRetrieverSuite
from ragloom.testkit.fake_embedding_model import FakeEmbeddingModel

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
def client() -> Iterator[QdrantClient]:
    client = QdrantClient(location=":memory:")
    yield client
    client.close()


def build(
    client: QdrantClient, model: object, docs: dict[str, str]
) -> QdrantHybridContentRetriever:
    retriever = QdrantHybridContentRetriever(
        client,
        f"h_{uuid.uuid4().hex[:8]}",
        model,
        max_results=len(docs),  # type: ignore[arg-type]
    )
    retriever.add_all([TextSegment(t, {"topic": k}) for k, t in docs.items()], ids=list(docs))
    return retriever


class TestQdrantHybridSuite(ContentRetrieverSuite):
    @pytest.fixture
    def retriever(
        self, corpus: list[Document], client: QdrantClient
    ) -> QdrantHybridContentRetriever:
        r = QdrantHybridContentRetriever(client, "suite", FakeEmbeddingModel(64), max_results=5)
        r.add_all([d.to_text_segment() for d in corpus])
        return r


def test_exact_identifier_found_that_dense_alone_misses(
    client: QdrantClient, minilm: object
) -> None:
    retriever = build(client, minilm, DOCS)
    query = "E4711"
    dense = client.query_points(
        retriever.collection,
        query=minilm.embed(query).embedding.vector.tolist(),  # type: ignore[attr-defined]
        using="dense",
        limit=1,
        with_payload=True,
    ).points
    assert dense[0].payload["rid"] != "auth"  # dense alone misses the code
    top = retriever.retrieve(Query(query))[0]
    assert top.text_segment.metadata["topic"] == "auth"
    assert top.metadata["embedding_id"] == "auth"


def test_paraphrase_found_that_keyword_alone_misses(client: QdrantClient, minilm: object) -> None:
    retriever = build(client, minilm, DOCS)
    query = "kitties nap through daytime"
    sparse = client.query_points(
        retriever.collection, query=retriever.query_vector(query), using="bm25", limit=4
    ).points
    assert not any(p.payload["rid"] == "cats" for p in sparse)  # no shared term
    assert retriever.retrieve(Query(query))[0].text_segment.metadata["topic"] == "cats"


def test_idf_modifier_weighs_rare_terms(client: QdrantClient) -> None:
    retriever = build(
        client,
        FakeEmbeddingModel(8),
        {
            "a": "common rare",
            "b": "common word",
            "c": "common thing",
        },
    )
    hits = client.query_points(
        retriever.collection, query=retriever.query_vector("common rare"), using="bm25", limit=3
    ).points
    assert hits[0].payload["rid"] == "a"
    assert hits[0].score > 3 * hits[1].score  # IDF: "rare" outweighs "common"


def test_replace_by_id_and_dimension_mismatch(client: QdrantClient) -> None:
    r = QdrantHybridContentRetriever(client, "c", FakeEmbeddingModel(8))
    r.add_all([TextSegment("old text here")], ids=["x"])
    r.add_all([TextSegment("new words now")], ids=["x"])
    assert [c.text for c in r.retrieve(Query("words"))] == ["new words now"]
    other = QdrantHybridContentRetriever(client, "c", FakeEmbeddingModel(16))
    with pytest.raises(EmbeddingStoreError, match="dimension 8"):
        other.retrieve(Query("words"))


def tagged(client: QdrantClient, filter: object = None) -> QdrantHybridContentRetriever:
    """Four entries over two tenants; two mention the code E4711."""
    r = QdrantHybridContentRetriever(
        client,
        f"t_{uuid.uuid4().hex[:8]}",
        FakeEmbeddingModel(16),
        max_results=10,
        filter=filter,  # type: ignore[arg-type]
    )
    r.add_all(
        [
            TextSegment("code E4711 for tenant a", {"tenant": "a", "n": 1}),
            TextSegment("code E4711 for tenant b", {"tenant": "b", "n": 2}),
            TextSegment("plain memo for tenant a", {"tenant": "a", "n": 3}),
            TextSegment("plain memo for tenant b", {"tenant": "b", "n": 4}),
        ],
        ids=["a1", "b1", "a2", "b2"],
    )
    return r


def ids_of(retriever: QdrantHybridContentRetriever, text: str) -> set[str]:
    return {c.metadata["embedding_id"] for c in retriever.retrieve(Query(text))}


def test_filter_applies_to_both_rankings(client: QdrantClient) -> None:
    r = tagged(client, metadata_key("tenant").is_equal_to("a"))
    assert ids_of(r, "E4711") == {"a1", "a2"}  # tenant b's E4711 is kept out of both legs
    r.filter = lambda query: metadata_key("tenant").is_equal_to(query.metadata.chat_memory_id)
    found = r.retrieve(Query("E4711", QueryMetadata(chat_memory_id="b")))
    assert {c.metadata["embedding_id"] for c in found} == {"b1", "b2"}
    r.filter = metadata_key("n").is_greater_than(2) & metadata_key("tenant").is_equal_to("b")
    assert ids_of(r, "E4711") == {"b2"}
    r.filter = metadata_key("tenant").is_equal_to("nobody")
    assert r.retrieve(Query("E4711")) == []


def test_filter_qdrant_cannot_state_is_resolved_exactly(client: QdrantClient) -> None:
    r = tagged(client, metadata_key("tenant").is_greater_than("a"))  # a str ordering
    assert ids_of(r, "E4711 memo") == {"b1", "b2"}
    r.filter = metadata_key("tenant").is_greater_than("b")
    assert r.retrieve(Query("E4711")) == []


def test_filter_type_mismatch_raises_like_the_store(client: QdrantClient) -> None:
    r = tagged(client, metadata_key("tenant").is_equal_to(1))
    with pytest.raises(InvalidFilterError, match="tenant"):
        r.retrieve(Query("E4711"))


def test_remove_by_ids_filter_and_all(client: QdrantClient) -> None:
    r = tagged(client)

    def legs(text: str) -> tuple[set[str], set[str]]:
        dense = client.query_points(
            r.collection,
            query=r.embedding_model.embed(text).embedding.vector.tolist(),
            using="dense",
            limit=10,
            with_payload=["rid"],
        ).points
        sparse = client.query_points(
            r.collection, query=r.query_vector(text), using="bm25", limit=10, with_payload=["rid"]
        ).points
        return {p.payload["rid"] for p in dense}, {p.payload["rid"] for p in sparse}  # type: ignore[index]

    r.remove_all(["a1", "missing"])
    assert legs("E4711 code") == ({"b1", "a2", "b2"}, {"b1"})
    r.remove_all(filter=metadata_key("tenant").is_equal_to("b"))
    assert legs("E4711 code memo") == ({"a2"}, {"a2"})
    assert ids_of(r, "memo") == {"a2"}
    with pytest.raises(EmbeddingStoreError, match="ids or a filter"):
        r.remove_all(["a2"], filter=metadata_key("n").is_equal_to(3))
    r.remove_all(filter=metadata_key("tenant").is_greater_than("a"))  # str order: nothing
    assert ids_of(r, "memo") == {"a2"}
    r.remove_all()
    assert r.retrieve(Query("memo")) == []
    assert client.count(r.collection).count == 0
