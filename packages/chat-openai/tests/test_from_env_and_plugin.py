"""OpenAiChatModel.from_env() and the entry point in ``ragloom.chat_models``."""

from __future__ import annotations

import pytest
from openai_helpers import API_KEY, chat_error, closed_after_test

from ragloom.chat_models.openai import (
    DEFAULT_BASE_URL,
    DEFAULT_CHAT_MODEL_NAME,
    OpenAiChatModel,
    OpenAiChatModelError,
)
from ragloom.chat_models.openai.testing import CHAT_MODEL, WireServer
from ragloom.core import plugins
from ragloom.core.chat import UserMessage
from ragloom.core.errors import ChatModelError, PluginError

NAME = "openai"


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(plugins.env_var(plugins.CHAT_MODELS), raising=False)
    plugins.refresh()


def configure(monkeypatch: pytest.MonkeyPatch, server: WireServer) -> None:
    monkeypatch.setenv("RAGLOOM_CHAT_BASE_URL", server.url)
    monkeypatch.setenv("RAGLOOM_CHAT_MODEL_NAME", CHAT_MODEL)
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)


def test_from_env_builds_a_working_model(
    server: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, server)
    model = closed_after_test(OpenAiChatModel.from_env())
    assert (model.model_name, model.base_url) == (CHAT_MODEL, server.url)
    assert model.chat([UserMessage("hi")]).text == "Echo: hi"


def test_from_env_options_win(server: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    configure(monkeypatch, server)
    model = OpenAiChatModel.from_env(model_name="other", temperature=0.5, max_retries=0)
    assert model.model_name == "other"
    assert model.retry_policy.max_retries == 0


def test_from_env_without_a_model_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGLOOM_CHAT_BASE_URL", "http://127.0.0.1:11434/v1")
    with chat_error(None, match="set RAGLOOM_CHAT_MODEL_NAME") as caught:
        OpenAiChatModel.from_env()
    assert isinstance(caught.value, ChatModelError)
    assert caught.value.url == "http://127.0.0.1:11434/v1"  # the server it would have used


def test_from_env_for_openai_needs_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGLOOM_CHAT_MODEL_NAME", "gpt-4o-mini")
    with chat_error(None, match="without an API key"):
        OpenAiChatModel.from_env()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    assert OpenAiChatModel.from_env().base_url == DEFAULT_BASE_URL


def test_from_env_openai_key_alone_gets_the_default_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    model = OpenAiChatModel.from_env()
    assert (model.model_name, model.base_url) == (DEFAULT_CHAT_MODEL_NAME, DEFAULT_BASE_URL)
    assert DEFAULT_CHAT_MODEL_NAME == "gpt-4o-mini"  # documented in the READMEs


def test_from_env_local_server_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGLOOM_CHAT_MODEL_NAME", "llama3.2")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1/")
    assert OpenAiChatModel.from_env().base_url == "http://127.0.0.1:11434/v1"


def test_entry_point_is_registered() -> None:
    found = [ep for ep in plugins.providers(plugins.CHAT_MODELS) if ep.name == NAME]
    assert len(found) == 1
    assert found[0].dist is not None
    assert found[0].dist.name == "ragloom-chat-openai"
    assert found[0].value == "ragloom.chat_models.openai:OpenAiChatModel.from_env"


def test_load_by_name_reads_the_environment(
    server: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, server)
    model = plugins.load(plugins.CHAT_MODELS, NAME)
    assert isinstance(model, OpenAiChatModel)
    closed_after_test(model)
    assert model.chat([UserMessage("plugin")]).text == "Echo: plugin"


def test_load_default(server: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    configure(monkeypatch, server)
    if len(plugins.providers(plugins.CHAT_MODELS)) > 1:
        monkeypatch.setenv(plugins.env_var(plugins.CHAT_MODELS), NAME)
    assert isinstance(plugins.load_default(plugins.CHAT_MODELS), OpenAiChatModel)


def test_unconfigured_plugin_error_carries_the_cause() -> None:
    with pytest.raises(PluginError, match="RAGLOOM_CHAT_MODEL_NAME") as caught:
        plugins.load(plugins.CHAT_MODELS, NAME)
    cause = caught.value.__cause__
    assert isinstance(cause, OpenAiChatModelError)
    assert cause.kind is None
