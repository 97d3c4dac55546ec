"""Retrieval and OpenAI-compatible chat against a real index (in-process ASGI)."""

from __future__ import annotations

import json
import logging

import pytest
from fastapi.testclient import TestClient

from ragloom.server import SOURCES_FIELD, IndexService, create_app

Headers = dict[str, dict[str, str]]


def test_retrieve_returns_passages_with_scores_and_citations(
    client: TestClient, headers: Headers
) -> None:
    ADMIN = headers["admin"]
    response = client.post(
        "/v1/retrieve",
        json={"query": "metadata filter syntax", "max_results": 3},
        headers=ADMIN,
    )
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert 1 <= len(data) <= 3
    first = data[0]
    assert first["source"] == "filters.md"
    assert 0.0 <= first["score"] <= 1.0
    assert first["text"]
    assert first["end"] > first["start"]
    assert first["metadata"]["file_name"] == "filters.md"


def test_retrieve_applies_the_filter_text(client: TestClient, headers: Headers) -> None:
    ADMIN = headers["admin"]
    response = client.post(
        "/v1/retrieve",
        json={"query": "metadata filter", "filter": "file_name == 'index.md'"},
        headers=ADMIN,
    )
    assert {d["source"] for d in response.json()["data"]} == {"index.md"}


def test_bad_input_is_a_clear_400(client: TestClient, headers: Headers) -> None:
    ADMIN = headers["admin"]
    cases = [
        ({"query": "x", "filter": "file_name =="}, "filter"),
        ({"query": "x", "max_results": 10_000}, "max_results"),
        ({"query": ""}, "query"),
        ({"query": "x", "surprise": 1}, "surprise"),
        ({"query": "x", "min_score": 0.5, "mode": "keyword"}, "min_score"),
    ]
    for body, field in cases:
        response = client.post("/v1/retrieve", json=body, headers=ADMIN)
        assert response.status_code == 400, (body, response.text)
        assert field in response.json()["error"]["message"]
    malformed = client.post(
        "/v1/retrieve", content=b"{not json", headers={**ADMIN, "content-type": "application/json"}
    )
    assert malformed.status_code == 400


def test_oversized_body_is_413(client: TestClient, headers: Headers) -> None:
    ADMIN = headers["admin"]
    response = client.post("/v1/retrieve", json={"query": "x" * (2 << 20)}, headers=ADMIN)
    assert response.status_code == 413
    assert "exceeds" in response.json()["error"]["message"]


def test_models_lists_the_server_model(client: TestClient, headers: Headers) -> None:
    ADMIN = headers["admin"]
    response = client.get("/v1/models", headers=ADMIN)
    assert [m["id"] for m in response.json()["data"]] == ["ragloom"]


def test_chat_answers_extractively_with_sources(client: TestClient, headers: Headers) -> None:
    ADMIN = headers["admin"]
    response = client.post(
        "/v1/chat/completions",
        json={
            "model": "ragloom",
            "messages": [{"role": "user", "content": "How do filters work?"}],
        },
        headers=ADMIN,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    answer = body["choices"][0]["message"]["content"]
    assert "No chat model is configured" in answer
    sources = body[SOURCES_FIELD]
    assert sources
    assert sources[0]["text"].strip()[:40] in answer


def test_chat_refuses_unknown_model_and_non_user_last_message(
    client: TestClient, headers: Headers
) -> None:
    ADMIN = headers["admin"]
    unknown = client.post(
        "/v1/chat/completions",
        json={"model": "gpt-4", "messages": [{"role": "user", "content": "hi"}]},
        headers=ADMIN,
    )
    assert unknown.status_code == 404
    last_assistant = client.post(
        "/v1/chat/completions",
        json={"model": "ragloom", "messages": [{"role": "assistant", "content": "hi"}]},
        headers=ADMIN,
    )
    assert last_assistant.status_code == 400


def test_streaming_sends_sources_before_the_first_token(
    client: TestClient, headers: Headers
) -> None:
    ADMIN = headers["admin"]
    body = {
        "model": "ragloom",
        "stream": True,
        "messages": [{"role": "user", "content": "What is a Document?"}],
    }
    with client.stream("POST", "/v1/chat/completions", json=body, headers=ADMIN) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line[6:]) for line in lines[:-1]]
    assert chunks[0][SOURCES_FIELD]
    assert not chunks[0]["choices"][0]["delta"]["content"]
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text.startswith("No chat model is configured")
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_memory_is_bounded_per_user(client: TestClient, headers: Headers) -> None:
    ADMIN = headers["admin"]
    for user in ("u1", "u2", "u3"):
        response = client.post(
            "/v1/chat/completions",
            json={"model": "ragloom", "user": user, "messages": [{"role": "user", "content": "q"}]},
            headers=ADMIN,
        )
        assert response.status_code == 200


def test_retrieve_is_in_the_openapi_schema(client: TestClient) -> None:
    """/v1/retrieve is a plain ASGI route (the event loop's fast path); /docs still shows
    it with its request body."""
    schema = client.get("/openapi.json").json()
    operation = schema["paths"]["/v1/retrieve"]["post"]
    body = operation["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/RetrieveRequest"}
    fields = schema["components"]["schemas"]["RetrieveRequest"]["properties"]
    assert set(fields) == {"query", "max_results", "min_score", "filter", "mode"}
    assert "/v1/chat/completions" in schema["paths"]
    assert client.get("/docs").status_code == 200


def test_retrieve_refuses_a_body_that_is_not_json(client: TestClient, headers: Headers) -> None:
    ADMIN = headers["admin"]
    for kind in ("text/plain", "application/x-www-form-urlencoded"):
        response = client.post(
            "/v1/retrieve", content=b'{"query": "x"}', headers={**ADMIN, "content-type": kind}
        )
        assert response.status_code == 400, (kind, response.text)
        assert "application/json" in response.json()["error"]["message"]
    typed = {**ADMIN, "content-type": "application/json; charset=utf-8"}
    assert client.post("/v1/retrieve", content=b'{"query": "x"}', headers=typed).status_code == 200
    wrong = client.get("/v1/retrieve", headers=ADMIN)
    assert wrong.status_code == 405
    assert wrong.json()["error"]["type"] == "method_not_allowed"
    unknown = client.post("/v1/retrieve", json={"query": "x", "max_results": "many"}, headers=ADMIN)
    assert "body.max_results" in unknown.json()["error"]["message"]


def test_create_app_leaves_the_root_logger_alone(
    service: IndexService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The MCP SDK's server sets up the root logger (a Rich handler at INFO) when nothing
    has; an app embedding create_app keeps its own logging, and its access-log lines do
    not go through Rich."""
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])
    monkeypatch.setattr(root, "level", logging.WARNING)
    create_app(service.settings, service)
    assert root.handlers == []
    assert root.level == logging.WARNING
