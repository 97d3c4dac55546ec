"""The LangChain-backed ragloom components pass the testkit suites unchanged."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from ragloom.langchain import LangChainChatModel, LangChainEmbeddingModel, RagloomEmbeddings
from ragloom.testkit import ChatModelSuite, EmbeddingModelSuite, FakeEmbeddingModel


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
