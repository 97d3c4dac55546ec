"""LlamaIndex in ragloom (a reader feeding the ingestor, an embedding model through the
testkit suite) and ragloom in LlamaIndex (a retriever behind a query engine)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from llama_index.core import Document as LiDocument
from llama_index.core import SimpleDirectoryReader, VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.readers.base import BaseReader

from ragloom.core.document import Document, TextSegment
from ragloom.core.errors import DocumentLoadError, EmbeddingModelError, RetrievalError
from ragloom.core.ingestor import EmbeddingStoreIngestor
from ragloom.core.query import Query
from ragloom.core.retrievers.embedding_store import EmbeddingStoreContentRetriever
from ragloom.core.stores.in_memory import InMemoryEmbeddingStore
from ragloom.llamaindex import (
    LlamaIndexContentRetriever,
    LlamaIndexDocumentLoader,
    LlamaIndexEmbeddingModel,
    RagloomEmbedding,
    RagloomRetriever,
)
from ragloom.testkit import ContentRetrieverSuite, EmbeddingModelSuite, FakeEmbeddingModel


class TestLlamaIndexEmbeddingModelConformance(EmbeddingModelSuite):
    @pytest.fixture
    def model(self) -> LlamaIndexEmbeddingModel:
        # LlamaIndex's MockEmbedding gives one constant vector, so "related texts are
        # closer" needs a real model: the testkit's, through both adapters.
        return LlamaIndexEmbeddingModel(RagloomEmbedding(FakeEmbeddingModel()))


class TestLlamaIndexContentRetrieverConformance(ContentRetrieverSuite):
    @pytest.fixture
    def retriever(self, corpus: list[Document]) -> LlamaIndexContentRetriever:
        # LlamaIndex's own stack: a VectorStoreIndex on its SimpleVectorStore.
        index = VectorStoreIndex.from_documents(
            [LiDocument(text=d.text, metadata=d.metadata.to_dict()) for d in corpus],
            embed_model=RagloomEmbedding(FakeEmbeddingModel()),
        )
        return LlamaIndexContentRetriever(index.as_retriever(similarity_top_k=5))


def test_llamaindex_retriever_contents_and_errors() -> None:
    index = VectorStoreIndex.from_documents(
        [LiDocument(text="Paris is in France.", metadata={"country": "fr", "tags": ["eu"]})],
        embed_model=RagloomEmbedding(FakeEmbeddingModel()),
    )
    retriever = LlamaIndexContentRetriever(index.as_retriever(similarity_top_k=1))
    [content] = retriever.retrieve(Query("France"))
    assert content.text == "Paris is in France."
    assert content.text_segment.metadata.to_dict() == {"country": "fr", "tags": '["eu"]'}
    assert content.score is not None
    assert content.metadata["segment_id"]
    assert asyncio.run(retriever.aretrieve(Query("France")))[0].text == content.text
    broken = LlamaIndexContentRetriever(RagloomRetriever(_Failing()))
    with pytest.raises(RetrievalError, match="RagloomRetriever.retrieve failed: index offline"):
        broken.retrieve(Query("x"))


class _Failing:
    def retrieve(self, query: Query) -> list[object]:
        raise ConnectionError("index offline")


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text("LlamaIndex readers feed the ragloom ingestor.")
    (tmp_path / "b.txt").write_text("The weather in Paris is mild in spring.")
    return tmp_path


def test_simple_directory_reader_feeds_the_ingestor(directory: Path) -> None:
    loader = LlamaIndexDocumentLoader(SimpleDirectoryReader(str(directory)))
    documents = loader.load_documents()
    assert documents.failures == []
    assert sorted(d.metadata["file_name"] for d in documents) == ["a.txt", "b.txt"]
    assert all(value is not None for d in documents for value in d.metadata.values())
    model = FakeEmbeddingModel()
    store = InMemoryEmbeddingStore()
    EmbeddingStoreIngestor(store, model).ingest(documents)
    [content] = EmbeddingStoreContentRetriever(store, model, max_results=1).retrieve(
        Query("weather in Paris")
    )
    assert content.text == "The weather in Paris is mild in spring."
    assert len(asyncio.run(loader.aload_documents())) == 2


class _Reader(BaseReader):
    def load_data(self) -> list[LiDocument]:  # type: ignore[override]
        return [
            LiDocument(text="kept", metadata={"file_path": "good", "tags": ["x"], "n": None}),
            LiDocument(text="dropped", metadata={"file_path": "bad", "": "x"}),
        ]


class _BrokenReader(BaseReader):
    def load_data(self) -> list[LiDocument]:  # type: ignore[override]
        raise FileNotFoundError("no such bucket")


def test_reader_failures() -> None:
    documents = LlamaIndexDocumentLoader(_Reader()).load_documents()
    assert [(d.text, d.metadata.to_dict()) for d in documents] == [
        ("kept", {"file_path": "good", "tags": '["x"]'})
    ]
    assert [f.source for f in documents.failures] == ["bad"]
    with pytest.raises(DocumentLoadError, match="bad"):
        LlamaIndexDocumentLoader(_Reader()).load_documents(strict=True)
    with pytest.raises(DocumentLoadError, match="_BrokenReader failed: no such bucket"):
        LlamaIndexDocumentLoader(_BrokenReader()).load_documents()


class _BrokenEmbedding(BaseEmbedding):
    def _get_query_embedding(self, query: str) -> list[float]:
        raise ConnectionError("unreachable")

    async def _aget_query_embedding(self, query: str) -> list[float]:
        raise ConnectionError("unreachable")

    def _get_text_embedding(self, text: str) -> list[float]:
        raise ConnectionError("unreachable")


def test_embedding_failures_are_embedding_model_errors() -> None:
    with pytest.raises(EmbeddingModelError, match="_BrokenEmbedding failed: unreachable"):
        LlamaIndexEmbeddingModel(_BrokenEmbedding()).embed_all(["a"])


def test_a_ragloom_retriever_behind_a_llamaindex_query_engine() -> None:
    model = FakeEmbeddingModel()
    store = InMemoryEmbeddingStore()
    texts = ["Hybrid retrieval fuses rankings.", "The ingestor stores documents."]
    segments = [TextSegment(text, {"n": i}) for i, text in enumerate(texts)]
    store.add_all(model.embed_all(segments).embeddings, segments, ids=["s0", "s1"])
    retriever = RagloomRetriever(EmbeddingStoreContentRetriever(store, model, max_results=1))
    [node] = retriever.retrieve("how are rankings fused")
    assert (node.node.node_id, node.node.get_content(), node.node.metadata) == (
        "s0",
        texts[0],
        {"n": 0},
    )
    assert (
        node.score
        == EmbeddingStoreContentRetriever(store, model)
        .retrieve(Query("how are rankings fused"))[0]
        .score
    )
    assert [n.node.node_id for n in asyncio.run(retriever.aretrieve("ingestor stores"))] == ["s1"]
    # MockLLM answers with its prompt: the retrieved text is in the context it was given.
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    assert texts[0] in str(engine.query("how are rankings fused"))
