"""Chat through a configured chat model (a real local OpenAI-wire server): streamed
tokens after the sources, and conversation memory per ``user``, bounded."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ragloom.chat_models.openai import OpenAiChatModel
from ragloom.chat_models.openai.testing import CHAT_MODEL, WireServer, delay
from ragloom.core import EmbeddingModel
from ragloom.easy_rag import chat_model_from_env
from ragloom.server import IndexService, ServerSettings, create_app


@pytest.fixture
def wire() -> Iterator[WireServer]:
    with WireServer() as server:
        yield server


@pytest.fixture
def chat_client(
    wire: WireServer,
    index_dir: Path,
    embedding_model: EmbeddingModel,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[TestClient]:
    monkeypatch.setenv("RAGLOOM_CHAT_BASE_URL", wire.url)
    monkeypatch.setenv("RAGLOOM_CHAT_MODEL_NAME", CHAT_MODEL)
    model = chat_model_from_env()
    assert model is not None
    settings = ServerSettings.load(index=index_dir, memory_users=2)
    service = IndexService(settings, embedding_model=embedding_model, chat_model=model)
    try:
        with TestClient(create_app(settings, service), base_url="http://127.0.0.1:8000") as client:
            yield client
    finally:
        service.close()


def ask(client: TestClient, text: str, user: str | None = None) -> dict[str, object]:
    body: dict[str, object] = {"model": "ragloom", "messages": [{"role": "user", "content": text}]}
    if user is not None:
        body["user"] = user
    response = client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    result: dict[str, object] = response.json()
    return result


def test_stream_from_the_chat_model_puts_sources_first(chat_client: TestClient) -> None:
    body = {
        "model": "ragloom",
        "stream": True,
        "messages": [{"role": "user", "content": "How do metadata filters work?"}],
    }
    with chat_client.stream("POST", "/v1/chat/completions", json=body) as response:
        lines = [line[6:] for line in response.iter_lines() if line.startswith("data: {")]
    chunks = [json.loads(line) for line in lines]
    assert "filters.md" in {s["source"] for s in chunks[0]["ragloom_sources"]}
    assert not chunks[0]["choices"][0]["delta"]["content"]
    assert all("ragloom_sources" not in c for c in chunks[1:])
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text.startswith("Echo:")
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_memory_is_per_user_and_bounded(chat_client: TestClient, wire: WireServer) -> None:
    def sent() -> int:
        """How many messages the last call sent to the chat model."""
        calls = [r for r in wire.requests if r.path.endswith("/chat/completions")]
        return len(calls[-1].body["messages"])

    ask(chat_client, "first question about filters", user="alice")
    assert sent() == 1
    ask(chat_client, "and a follow-up", user="alice")
    assert sent() == 3  # alice's question and answer, then the new question
    ask(chat_client, "hello", user="bob")
    assert sent() == 1  # bob has his own conversation
    ask(chat_client, "hi", user="carol")  # memory_users=2: alice, least recent, is forgotten
    ask(chat_client, "again", user="alice")
    assert sent() == 1


def test_without_user_the_request_history_is_the_conversation(
    chat_client: TestClient, wire: WireServer
) -> None:
    body = {
        "model": "ragloom",
        "messages": [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "What is a Document?"},
            {"role": "assistant", "content": "A text with metadata."},
            {"role": "user", "content": "And a segment?"},
        ],
    }
    assert chat_client.post("/v1/chat/completions", json=body).status_code == 200
    messages = [r for r in wire.requests if r.path.endswith("/chat/completions")][-1].body[
        "messages"
    ]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_chat_model_timeout_is_a_504_naming_the_models_timeout(
    wire: WireServer,
    index_dir: Path,
    embedding_model: EmbeddingModel,
    stream: bool,
) -> None:
    """The chat model's own deadline (not the server's request_timeout) ran out: a
    gateway's upstream timeout, 504, with the model's message (its URL and timeout)."""
    model = OpenAiChatModel(base_url=wire.url, model_name=CHAT_MODEL, timeout=0.5, max_retries=0)
    settings = ServerSettings.load(index=index_dir, request_timeout=30)
    service = IndexService(settings, embedding_model=embedding_model, chat_model=model)
    wire.script(delay(3.0))
    body = {"model": "ragloom", "stream": stream, "messages": [{"role": "user", "content": "hi"}]}
    try:
        with TestClient(create_app(settings, service), base_url="http://127.0.0.1:8000") as client:
            response = client.post("/v1/chat/completions", json=body)
    finally:
        service.close()
    if stream:
        assert response.status_code == 200
        events = [json.loads(x[6:]) for x in response.text.splitlines() if x.startswith("data: {")]
        error = events[-1]["error"]
    else:
        assert response.status_code == 504, response.text
        error = response.json()["error"]
    assert error["code"] == 504
    assert error["type"] == "timeout"
    assert wire.url in error["message"]
    assert "30 s" not in error["message"]
