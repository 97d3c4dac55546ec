"""Retrieval and OpenAI-compatible chat against a real index (in-process ASGI)."""

from __future__ import annotations

import json
import logging

import openai
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


#: Chat fields typed strictly as the schema declares them, each with a value the
#: schema refuses that lax validation took (text for a number, 5.0 or true for an integer).
STRICT_CHAT_FIELDS = [
    ({"max_tokens": "5"}, "body.max_tokens"),
    ({"max_tokens": 5.0}, "body.max_tokens"),
    ({"max_completion_tokens": "5"}, "body.max_completion_tokens"),
    ({"n": True}, "body.n"),
    ({"seed": "7"}, "body.seed"),
    ({"temperature": "0.5"}, "body.temperature"),
    ({"top_p": "1"}, "body.top_p"),
    ({"presence_penalty": "0"}, "body.presence_penalty"),
    ({"frequency_penalty": False}, "body.frequency_penalty"),
    ({"stream": "true"}, "body.stream"),
    ({"ragloom": {"max_results": "2"}}, "body.ragloom.max_results"),
    ({"ragloom": {"max_results": 2.0}}, "body.ragloom.max_results"),
    ({"ragloom": {"min_score": "0.5"}}, "body.ragloom.min_score"),
]


@pytest.mark.parametrize(
    ("given", "field"), STRICT_CHAT_FIELDS, ids=[f for _, f in STRICT_CHAT_FIELDS]
)
def test_chat_numbers_sent_as_text_are_a_400_naming_the_field(
    client: TestClient, headers: Headers, given: dict[str, object], field: str
) -> None:
    body = {"model": "ragloom", "messages": [{"role": "user", "content": "hi"}], **given}
    response = client.post("/v1/chat/completions", json=body, headers=headers["admin"])
    assert response.status_code == 400, (given, response.text)
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["message"].count(field + ":") == 1, error["message"]


def test_the_chat_schema_types_the_strict_fields(client: TestClient) -> None:
    """The OpenAPI schema declares each strict field as the route takes it: a number or
    null, never text."""
    schemas = client.get("/openapi.json").json()["components"]["schemas"]

    def types(model: str, name: str) -> set[str]:
        field = schemas[model]["properties"][name]
        return {option["type"] for option in field.get("anyOf", [field])}

    for given, field in STRICT_CHAT_FIELDS:
        name = field.rsplit(".", 1)[1]
        model = "RagloomOptions" if "ragloom" in given else "ChatRequest"
        declared = types(model, name)
        assert "string" not in declared, (field, declared)
        assert declared & {"integer", "number", "boolean"}, (field, declared)
    assert types("ChatRequest", "max_tokens") == {"integer", "null"}
    assert types("ChatRequest", "temperature") == {"number", "null"}
    assert types("RagloomOptions", "min_score") == {"number"}


def test_the_openai_client_sends_numbers_the_chat_route_takes(
    client: TestClient, headers: Headers
) -> None:
    """The official client's numbers (an int where a float is declared too) and the
    ragloom extension still pass the strict fields."""
    key = headers["admin"]["Authorization"].removeprefix("Bearer ")
    chat = openai.OpenAI(base_url="http://testserver/v1", api_key=key, http_client=client)
    completion = chat.chat.completions.create(
        model="ragloom",
        messages=[{"role": "user", "content": "How do filters work?"}],
        extra_body={"ragloom": {"max_results": 2, "min_score": 0}},
        max_tokens=5,
        max_completion_tokens=5,
        n=1,
        seed=7,
        temperature=0,
        top_p=1,
        presence_penalty=0,
        frequency_penalty=0.5,
    )
    assert "No chat model is configured" in (completion.choices[0].message.content or "")
    assert completion.model_extra is not None
    assert 1 <= len(completion.model_extra[SOURCES_FIELD]) <= 2
    stream = chat.chat.completions.create(
        model="ragloom",
        stream=True,
        messages=[{"role": "user", "content": "What is a Document?"}],
        temperature=0.2,
        max_tokens=5,
    )
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text.startswith("No chat model is configured")


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
