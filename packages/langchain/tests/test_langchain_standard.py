"""LangChain's own standard suites (langchain-tests), passing unchanged against the adapters.

Each class subclasses one suite and provides its one fixture (or constructor params);
LangChain's ``test_no_overrides_DO_NOT_OVERRIDE`` checks that no standard test is
overridden. The suites' coroutine tests run on pytest-asyncio, marked here for the whole
class because the repository runs pytest-asyncio in strict mode.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from langchain_tests.integration_tests import (
    EmbeddingsIntegrationTests,
    RetrieversIntegrationTests,
    VectorStoreIntegrationTests,
)

from ragloom.core.bm25 import BM25Index
from ragloom.core.document import TextSegment
from ragloom.core.retrievers.bm25 import BM25ContentRetriever
from ragloom.core.retrievers.embedding_store import EmbeddingStoreContentRetriever
from ragloom.core.retrievers.hybrid import HybridContentRetriever
from ragloom.core.stores.in_memory import InMemoryEmbeddingStore
from ragloom.langchain import RagloomEmbeddings, RagloomRetriever, RagloomVectorStore
from ragloom.testkit import FakeEmbeddingModel

# pytest-asyncio strict mode: the suites' async tests need the mark; the sync tests it
# also reaches only warn that they are not coroutines.
ASYNC_SUITE = [
    pytest.mark.asyncio,
    pytest.mark.filterwarnings(
        "ignore:.*is marked with '@pytest.mark.asyncio':pytest.PytestWarning"
    ),
]

CORPUS = [
    "Paris is the capital of France.",
    "Berlin is the capital of Germany.",
    "The Eiffel Tower stands in Paris.",
    "Rome is the capital of Italy.",
    "Madrid is the capital of Spain.",
]


def _store_of_corpus(model: FakeEmbeddingModel) -> InMemoryEmbeddingStore:
    store = InMemoryEmbeddingStore()
    segments = [TextSegment(text, {"n": i}) for i, text in enumerate(CORPUS)]
    store.add_all(model.embed_all(segments).embeddings, segments)
    return store


class TestInMemoryStoreAsLangChainVectorStore(VectorStoreIntegrationTests):
    pytestmark = ASYNC_SUITE

    @pytest.fixture
    def vectorstore(self) -> VectorStore:
        return RagloomVectorStore(InMemoryEmbeddingStore(), self.get_embeddings())


class TestEmbeddingStoreRetrieverAsLangChainRetriever(RetrieversIntegrationTests):
    pytestmark = ASYNC_SUITE

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return RagloomRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        model = FakeEmbeddingModel()
        store = _store_of_corpus(model)
        return {"retriever": EmbeddingStoreContentRetriever(store, model, max_results=5)}

    @property
    def retriever_query_example(self) -> str:
        return "capital of France"


class TestHybridRetrieverAsLangChainRetriever(RetrieversIntegrationTests):
    pytestmark = ASYNC_SUITE

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return RagloomRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        model = FakeEmbeddingModel()
        dense = EmbeddingStoreContentRetriever(_store_of_corpus(model), model, max_results=5)
        index = BM25Index()
        index.add_all([TextSegment(text) for text in CORPUS])
        keyword = BM25ContentRetriever(index, max_results=5)
        return {"retriever": HybridContentRetriever(dense, keyword, max_results=5)}

    @property
    def retriever_query_example(self) -> str:
        return "capital of France"


class TestRagloomModelAsLangChainEmbeddings(EmbeddingsIntegrationTests):
    pytestmark = ASYNC_SUITE

    @property
    def embeddings_class(self) -> type[Embeddings]:
        return RagloomEmbeddings

    @property
    def embedding_model_params(self) -> dict[str, Any]:
        return {"model": FakeEmbeddingModel()}
