"""QdrantHybridContentRetriever on qdrant-client's local mode: sparse BM25 vectors with
Modifier.IDF and Query API RRF fusion, against the real MiniLM embedding model.

The shared hybrid contract is the testkit's HybridContentRetrieverSuite; the tests below
are Qdrant's own (IDF weighting, the dimension of an existing collection)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from qdrant_client import QdrantClient

from ragloom.core.document import TextSegment
from ragloom.core.embedding import EmbeddingModel
from ragloom.core.errors import EmbeddingStoreError
from ragloom.core.filters import Filter
from ragloom.core.query import Query
from ragloom.embeddings.onnx import AllMiniLmL6V2QuantizedEmbeddingModel
from ragloom.stores.qdrant.hybrid import QdrantHybridContentRetriever
from ragloom.testkit import HybridContentRetrieverSuite
from ragloom.testkit.fake_embedding_model import FakeEmbeddingModel


@pytest.fixture(scope="module")
def minilm() -> AllMiniLmL6V2QuantizedEmbeddingModel:
    return AllMiniLmL6V2QuantizedEmbeddingModel()


@pytest.fixture
def client() -> Iterator[QdrantClient]:
    client = QdrantClient(location=":memory:")
    yield client
    client.close()


@dataclass
class QdrantHybridHarness:
    """Fresh collections on one local-mode client; the legs asked with query_points."""

    client: QdrantClient
    semantic_model: EmbeddingModel

    def retriever(
        self, embedding_model: EmbeddingModel, *, max_results: int, filter: Filter | None = None
    ) -> QdrantHybridContentRetriever:
        return QdrantHybridContentRetriever(
            self.client,
            f"h_{uuid.uuid4().hex[:8]}",
            embedding_model,
            max_results=max_results,
            filter=filter,
        )

    def legs(
        self, retriever: QdrantHybridContentRetriever, text: str
    ) -> tuple[list[str], list[str]]:
        def ranked(query: object, using: str) -> list[str]:
            points = self.client.query_points(
                retriever.collection, query=query, using=using, limit=10, with_payload=["rid"]
            ).points
            return [p.payload["rid"] for p in points]  # type: ignore[index]

        dense = retriever.embedding_model.embed(text).embedding.vector.tolist()
        return ranked(dense, "dense"), ranked(retriever.query_vector(text), "bm25")


class TestQdrantHybridSuite(HybridContentRetrieverSuite):
    @pytest.fixture
    def harness(
        self, client: QdrantClient, minilm: AllMiniLmL6V2QuantizedEmbeddingModel
    ) -> QdrantHybridHarness:
        return QdrantHybridHarness(client, minilm)


def test_idf_modifier_weighs_rare_terms(client: QdrantClient) -> None:
    retriever = QdrantHybridContentRetriever(client, "idf", FakeEmbeddingModel(8))
    retriever.add_all(
        [TextSegment("common rare"), TextSegment("common word"), TextSegment("common thing")],
        ids=["a", "b", "c"],
    )
    hits = client.query_points(
        retriever.collection, query=retriever.query_vector("common rare"), using="bm25", limit=3
    ).points
    assert hits[0].payload["rid"] == "a"  # type: ignore[index]
    assert hits[0].score > 3 * hits[1].score  # IDF: "rare" outweighs "common"


def test_a_model_of_another_dimension_is_refused(client: QdrantClient) -> None:
    r = QdrantHybridContentRetriever(client, "c", FakeEmbeddingModel(8))
    r.add_all([TextSegment("new words now")], ids=["x"])
    other = QdrantHybridContentRetriever(client, "c", FakeEmbeddingModel(16))
    with pytest.raises(EmbeddingStoreError, match="dimension 8"):
        other.retrieve(Query("words"))
