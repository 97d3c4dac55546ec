"""OpenAiEmbeddingModel is discovered in ``ragloom.embedding_models`` as ``openai``:
used when named, while the bundled ONNX model stays the default beside it."""

from __future__ import annotations

import pytest
from openai_helpers import API_KEY, closed_after_test

from ragloom.chat_models.openai import OpenAiEmbeddingModel
from ragloom.chat_models.openai.testing import EMBEDDING_MODEL, WireServer
from ragloom.core import TextSegment, plugins
from ragloom.core.errors import PluginError

GROUP = plugins.EMBEDDING_MODELS


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(plugins.env_var(GROUP), raising=False)
    plugins.refresh()


def test_discovered_under_its_name() -> None:
    (entry,) = [ep for ep in plugins.providers(GROUP) if ep.name == "openai"]
    assert entry.dist is not None
    assert entry.dist.name == "ragloom-chat-openai"
    assert entry.value == "ragloom.chat_models.openai:OpenAiEmbeddingModel.from_env"


def test_named_it_embeds_through_the_configured_server(
    server: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(plugins.env_var(GROUP), "openai")
    monkeypatch.setenv("RAGLOOM_EMBEDDING_BASE_URL", server.url)
    monkeypatch.setenv("RAGLOOM_EMBEDDING_MODEL_NAME", EMBEDDING_MODEL)
    monkeypatch.setenv("RAGLOOM_EMBEDDING_API_KEY", API_KEY)
    model = plugins.load_default(GROUP)
    assert isinstance(model, OpenAiEmbeddingModel)
    closed_after_test(model)
    (vector,) = model.embed_all([TextSegment("bread and yeast")]).embeddings
    assert len(vector.vector) > 0
    assert server.bodies("/v1/embeddings")[0]["input"] == ["bread and yeast"]


def test_named_without_configuration_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(plugins.env_var(GROUP), "openai")
    monkeypatch.delenv("RAGLOOM_EMBEDDING_MODEL_NAME", raising=False)
    with pytest.raises(PluginError, match="RAGLOOM_EMBEDDING_MODEL_NAME"):
        plugins.load_default(GROUP)


def test_it_never_becomes_the_default_by_being_installed() -> None:
    default = plugins.default_provider(GROUP)
    assert default is not None, [ep.name for ep in plugins.providers(GROUP)]
    assert default.name != "openai"  # the ONNX model, installed beside it in this workspace
