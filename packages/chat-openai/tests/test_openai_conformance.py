"""The testkit's ChatModelSuite and EmbeddingModelSuite, unchanged, over real HTTP.

The models talk to the local wire-format server (``ragloom.chat_models.openai.testing``)
through real sockets: JSON for chat and embeddings, server-sent events for streams.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from openai_helpers import API_KEY

from ragloom.chat_models.openai import OpenAiChatModel, OpenAiEmbeddingModel
from ragloom.chat_models.openai.testing import CHAT_MODEL, EMBEDDING_MODEL, WireServer
from ragloom.testkit.chat_model import ChatModelSuite
from ragloom.testkit.embedding_model import EmbeddingModelSuite


class TestOpenAiChatModel(ChatModelSuite):
    @pytest.fixture
    def model(self, shared_server: WireServer) -> Iterator[OpenAiChatModel]:
        with OpenAiChatModel(
            base_url=shared_server.url, model_name=CHAT_MODEL, api_key=API_KEY
        ) as model:
            yield model


class TestOpenAiEmbeddingModel(EmbeddingModelSuite):
    @pytest.fixture
    def model(self, shared_server: WireServer) -> Iterator[OpenAiEmbeddingModel]:
        with OpenAiEmbeddingModel(
            base_url=shared_server.url, model_name=EMBEDDING_MODEL, api_key=API_KEY, batch_size=16
        ) as model:
            yield model
