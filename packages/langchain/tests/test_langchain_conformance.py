"""The LangChain-backed ragloom components pass the testkit suites unchanged."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from ragloom.core.document import Document
from ragloom.core.stores.in_memory import InMemoryEmbeddingStore
from ragloom.langchain import (
    LangChainChatModel,
    LangChainContentRetriever,
    LangChainEmbeddingModel,
    RagloomEmbeddings,
    RagloomVectorStore,
)
from ragloom.testkit import (
    ChatModelSuite,
    ContentRetrieverSuite,
    EmbeddingModelSuite,
    FakeEmbeddingModel,
)


class TestLangChainEmbeddingModelConformance(EmbeddingModelSuite):
    @pytest.fixture
    def model(self) -> LangChainEmbeddingModel:
        # LangChain's own fake embeddings are random per text, so "related texts are
        # closer" needs a real model: the testkit's, through both adapters.
        return LangChainEmbeddingModel(RagloomEmbeddings(FakeEmbeddingModel()))


class TestLangChainChatModelConformance(ChatModelSuite):
    @pytest.fixture
    def model(self) -> LangChainChatModel:
        return LangChainChatModel(FakeListChatModel(responses=["Hello Ada, nice to meet you."]))


class TestLangChainContentRetrieverConformance(ContentRetrieverSuite):
    @pytest.fixture
    def retriever(self, corpus: list[Document]) -> LangChainContentRetriever:
        # A plain LangChain VectorStoreRetriever (as_retriever), here over the adapter.
        vectorstore = RagloomVectorStore(
            InMemoryEmbeddingStore(), RagloomEmbeddings(FakeEmbeddingModel())
        )
        vectorstore.add_texts([d.text for d in corpus], [d.metadata.to_dict() for d in corpus])
        return LangChainContentRetriever(vectorstore.as_retriever(search_kwargs={"k": 5}))
