"""QdrantHybridContentRetriever on qdrant-client's local mode: sparse BM25 vectors with
Modifier.IDF and Query API RRF fusion, against the real MiniLM embedding model."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from qdrant_client import QdrantClient

from ragloom.core.document import Document, TextSegment
from ragloom.core.errors import EmbeddingStoreError
from ragloom.core.query import Query
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
