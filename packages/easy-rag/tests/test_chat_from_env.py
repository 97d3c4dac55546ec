"""The chat model from the environment: one rule for `ragloom ask` and Python.

`ragloom ask` runs end to end in a subprocess against the local OpenAI-wire server.
"""

import logging
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from ragloom.chat_models.openai import DEFAULT_BASE_URL, DEFAULT_CHAT_MODEL_NAME, OpenAiChatModel
from ragloom.chat_models.openai.testing import CHAT_MODEL, WireServer
from ragloom.core import BM25ContentRetriever, BM25Index, RagAssistant
from ragloom.easy_rag import ExtractiveAssistant, chat_model_from_env, create_assistant
from ragloom.easy_rag.cli import main

QUESTION = "What does bread need to rise?"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("chat")
    (root / "baking.txt").write_text("Bread dough needs yeast, time and a hot oven.")
    (root / "sailing.md").write_text("A sailboat tacks upwind; the crew trims the jib.")
    index = str(root / "index")
    assert main(["ingest", str(root), "--index", index]) == 0
    return index


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer() as server:
        yield server


def ask(index: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`ragloom ask QUESTION` in a fresh process with only ``env`` as chat settings."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RAGLOOM_", "OPENAI_"))}
    return subprocess.run(
        [sys.executable, "-m", "ragloom.easy_rag.cli", "ask", QUESTION, "--index", index],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_ask_answers_with_the_configured_server(index: str, server: WireServer) -> None:
    done = ask(index, {"RAGLOOM_CHAT_BASE_URL": server.url, "RAGLOOM_CHAT_MODEL_NAME": CHAT_MODEL})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Echo: ")
    assert "baking.txt" in done.stdout.split("Sources:")[1]
    assert done.stderr == ""
    (body,) = server.bodies("/v1/chat/completions")
    assert body["model"] == CHAT_MODEL
    assert QUESTION in body["messages"][-1]["content"]
    assert "yeast" in body["messages"][-1]["content"]  # the retrieved passage


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"RAGLOOM_CHAT_BASE_URL": "http://127.0.0.1:9/v1"}, "RAGLOOM_CHAT_MODEL_NAME"),
        ({"RAGLOOM_CHAT_MODEL_NAME": "llama3.2"}, "OPENAI_API_KEY"),
    ],
)
def test_a_missing_piece_gives_the_extractive_answer_and_a_hint(
    index: str, env: dict[str, str], named: str
) -> None:
    done = ask(index, env)
    assert done.returncode == 0
    assert "No chat model is configured" in done.stdout
    assert "baking.txt" in done.stdout
    (hint,) = done.stderr.splitlines()
    assert hint.startswith("ragloom: no chat model, answering extractively: ")
    assert named in hint


def test_openai_api_key_alone_uses_the_default_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model = chat_model_from_env()
    assert isinstance(model, OpenAiChatModel)
    assert (model.model_name, model.base_url) == (DEFAULT_CHAT_MODEL_NAME, DEFAULT_BASE_URL)


def test_python_reads_the_same_rule(
    server: WireServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    retriever = BM25ContentRetriever(BM25Index())
    assert isinstance(create_assistant(retriever), ExtractiveAssistant)
    assert caplog.records == []  # nothing configured: no hint, the answer says it
    monkeypatch.setenv("RAGLOOM_CHAT_BASE_URL", server.url)
    with caplog.at_level(logging.WARNING, logger="ragloom.easy_rag"):
        assert isinstance(create_assistant(retriever), ExtractiveAssistant)
    assert "RAGLOOM_CHAT_MODEL_NAME" in caplog.text
    monkeypatch.setenv("RAGLOOM_CHAT_MODEL_NAME", CHAT_MODEL)
    assistant = create_assistant(retriever)
    assert isinstance(assistant, RagAssistant)
