"""OpenAiChatModel against the local wire-format server: requests, answers, streams."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from openai_helpers import API_KEY, chat_model

from ragloom.chat_models.openai import DEFAULT_BASE_URL, OpenAiChatModel, finish_reason
from ragloom.chat_models.openai.testing import CHAT_MODEL, WireServer, events, json_answer, raw, sse
from ragloom.core.chat import (
    AiMessage,
    ChatModel,
    ChatResponse,
    FinishReason,
    SystemMessage,
    ToolExecutionRequest,
    UserMessage,
)
from ragloom.core.embedding import TokenUsage

HELLO = [UserMessage("hello there")]


def collect_async(model: OpenAiChatModel, **options: object) -> tuple[list[str], ChatResponse]:
    async def run() -> tuple[list[str], ChatResponse]:
        stream = model.astream(HELLO, **options)
        parts = [part async for part in stream]
        return parts, stream.response

    return asyncio.run(run())


# -- requests --------------------------------------------------------------------------


def test_request_carries_model_messages_and_headers(server: WireServer) -> None:
    model = chat_model(server, organization="org-1", headers={"X-Trace": "t1"})
    model.chat(
        [
            SystemMessage("Be brief."),
            UserMessage("Hi, I am Ada.", name="ada"),
            AiMessage("Hello Ada."),
            UserMessage("Who am I?"),
        ]
    )
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body == {
        "model": CHAT_MODEL,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi, I am Ada.", "name": "ada"},
            {"role": "assistant", "content": "Hello Ada."},
            {"role": "user", "content": "Who am I?"},
        ],
    }
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.headers["openai-organization"] == "org-1"
    assert request.headers["x-trace"] == "t1"
    assert request.headers["accept"] == "application/json"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["user-agent"].startswith("ragloom-chat-openai/")


def test_defaults_and_call_options_are_sent(server: WireServer) -> None:
    model = chat_model(
        server,
        temperature=0.2,
        max_tokens=50,
        top_p=0.9,
        stop=("END",),
        seed=7,
        extra_body={"top_k": 20},
    )
    model.chat(HELLO)
    model.chat(HELLO, temperature=0.0, stop="STOP", extra_body={"min_p": 0.1}, user="u1")
    first, second = server.bodies()
    assert {
        k: first[k] for k in ("temperature", "max_tokens", "top_p", "stop", "seed", "top_k")
    } == {
        "temperature": 0.2,
        "max_tokens": 50,
        "top_p": 0.9,
        "stop": ["END"],
        "seed": 7,
        "top_k": 20,
    }
    assert "stream" not in first
    assert second["temperature"] == 0.0
    assert second["stop"] == "STOP"
    assert second["min_p"] == 0.1
    assert second["top_k"] == 20
    assert second["user"] == "u1"


def test_unset_options_are_left_to_the_server(server: WireServer) -> None:
    chat_model(server).chat(HELLO)
    assert set(server.bodies()[0]) == {"model", "messages"}


def test_unknown_option_is_a_type_error_naming_the_accepted_ones() -> None:
    model = OpenAiChatModel(base_url="http://127.0.0.1:1/v1", model_name="m")
    with pytest.raises(TypeError, match=r"temprature.*accepted: .*temperature"):
        model.chat(HELLO, temprature=0.1)


@pytest.mark.parametrize("reserved", ["model", "messages", "stream", "n"])
def test_extra_body_cannot_override_what_the_model_sets(reserved: str) -> None:
    with pytest.raises(ValueError, match=reserved):
        OpenAiChatModel(base_url="http://127.0.0.1:1/v1", model_name="m", extra_body={reserved: 1})


def test_messages_are_checked() -> None:
    model = OpenAiChatModel(base_url="http://127.0.0.1:1/v1", model_name="m")
    with pytest.raises(ValueError, match="empty"):
        model.chat([])
    with pytest.raises(TypeError, match="single message"):
        model.chat(UserMessage("hi"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"messages\[1\] is dict"):
        model.chat([UserMessage("hi"), {"role": "user", "content": "x"}])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("base_url", "message"),
    [("localhost:8000/v1", "http"), ("ftp://host/v1", "http"), ("http://", "http")],
)
def test_base_url_must_be_http(base_url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        OpenAiChatModel(base_url=base_url, model_name="m")


def test_base_url_trailing_slash_is_dropped(server: WireServer) -> None:
    model = chat_model(server, base_url=server.url + "/")
    assert model.base_url == server.url
    assert model.chat(HELLO).text == "Echo: hello there"


def test_defaults_to_openai() -> None:
    model = OpenAiChatModel(model_name="gpt-4o-mini", api_key="sk-x")
    assert model.base_url == DEFAULT_BASE_URL == "https://api.openai.com/v1"


def test_model_name_is_required() -> None:
    with pytest.raises(ValueError, match="model_name"):
        OpenAiChatModel(model_name=" ")


# -- API key ---------------------------------------------------------------------------


def _auth_header(server: WireServer, **options: object) -> str | None:
    with OpenAiChatModel(base_url=server.url, model_name=CHAT_MODEL, **options) as model:  # type: ignore[arg-type]
        model.chat(HELLO)
    return server.requests[-1].headers.get("authorization")


def test_api_key_from_argument_then_ragloom_env_then_openai_env(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with WireServer() as server:  # no key required: see what arrives
        assert _auth_header(server) is None
        monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
        assert _auth_header(server) == "Bearer sk-openai"
        monkeypatch.setenv("RAGLOOM_CHAT_API_KEY", "sk-ragloom")
        assert _auth_header(server) == "Bearer sk-ragloom"
        assert _auth_header(server, api_key="sk-arg") == "Bearer sk-arg"
        assert _auth_header(server, api_key="") is None  # explicitly no key


def test_api_key_whitespace_is_trimmed_and_bad_keys_are_refused_unshown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with WireServer() as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-from-file\n")
        assert _auth_header(server) == "Bearer sk-from-file"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-pasted\u2026secret")
    with pytest.raises(ValueError, match=r"from \$OPENAI_API_KEY contains") as caught:
        OpenAiChatModel(model_name="m")
    assert "secret" not in str(caught.value)
    with pytest.raises(ValueError, match="from the api_key argument"):
        OpenAiChatModel(model_name="m", api_key="sk-with space")


def test_repr_never_shows_the_key(server: WireServer) -> None:
    model = chat_model(server)
    assert API_KEY not in repr(model)
    assert repr(model) == f"OpenAiChatModel(model_name='{CHAT_MODEL}', base_url='{server.url}')"


# -- answers ---------------------------------------------------------------------------


def test_chat_returns_text_usage_and_finish_reason(server: WireServer) -> None:
    response = chat_model(server).chat([SystemMessage("Be brief."), UserMessage("one two three")])
    assert response == ChatResponse("Echo: one two three", TokenUsage(5, 4, 9), FinishReason.STOP)


def test_max_tokens_cut_maps_to_length(server: WireServer) -> None:
    response = chat_model(server).chat([UserMessage("a b c d e")], max_tokens=3)
    assert response.text == "Echo: a b"
    assert response.finish_reason is FinishReason.LENGTH
    assert response.token_usage == TokenUsage(5, 3, 8)


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        ("stop", FinishReason.STOP),
        ("eos", FinishReason.STOP),
        ("length", FinishReason.LENGTH),
        ("tool_calls", FinishReason.TOOL_EXECUTION),
        ("function_call", FinishReason.TOOL_EXECUTION),
        ("content_filter", FinishReason.CONTENT_FILTER),
        ("something_new", FinishReason.OTHER),
        (None, None),
        ("", None),
    ],
)
def test_finish_reason_mapping(wire: str | None, expected: FinishReason | None) -> None:
    assert finish_reason(wire) is expected


def _completion_body(message: dict[str, object], **extra: object) -> bytes:
    choice = {"index": 0, "message": message, "finish_reason": extra.pop("finish", "stop")}
    return json.dumps({"choices": [choice], **extra}).encode()


def test_tool_call_answer_has_empty_text_and_tool_execution(server: WireServer) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    server.script(
        raw(
            _completion_body(
                {"role": "assistant", "content": None, "tool_calls": [call]},
                finish="tool_calls",
            )
        )
    )
    response = chat_model(server).chat(HELLO)
    requests = (ToolExecutionRequest("c1", "f", "{}"),)
    assert response == ChatResponse("", None, FinishReason.TOOL_EXECUTION, requests)


def test_content_parts_and_refusals_become_text(server: WireServer) -> None:
    parts = [{"type": "text", "text": "Hello "}, {"type": "text", "text": "world"}]
    server.script(
        raw(_completion_body({"role": "assistant", "content": parts})),
        raw(_completion_body({"role": "assistant", "content": None, "refusal": "I can't."})),
    )
    model = chat_model(server)
    assert model.chat(HELLO).text == "Hello world"
    assert model.chat(HELLO).text == "I can't."


def test_missing_or_partial_usage(server: WireServer) -> None:
    server.script(
        raw(_completion_body({"role": "assistant", "content": "x"})),
        raw(_completion_body({"role": "assistant", "content": "x"}, usage={"prompt_tokens": 4})),
    )
    model = chat_model(server)
    assert model.chat(HELLO).token_usage is None
    assert model.chat(HELLO).token_usage == TokenUsage(4, None, 4)


def test_achat(server: WireServer) -> None:
    response = asyncio.run(chat_model(server).achat(HELLO, max_tokens=2))
    assert response == ChatResponse("Echo: hello", TokenUsage(2, 2, 4), FinishReason.LENGTH)
    assert server.requests[0].headers["authorization"] == f"Bearer {API_KEY}"


# -- streams ---------------------------------------------------------------------------


def test_stream_sends_stream_flags_and_collects_usage(server: WireServer) -> None:
    stream = chat_model(server).stream([UserMessage("one two three")])
    assert server.requests == []  # nothing is sent before the first next()
    parts = list(stream)
    assert parts == ["Echo: ", "one ", "two ", "three"]
    assert stream.response == ChatResponse(
        "Echo: one two three", TokenUsage(3, 4, 7), FinishReason.STOP
    )
    (request,) = server.requests
    assert request.body["stream"] is True
    assert request.body["stream_options"] == {"include_usage": True}
    assert request.headers["accept"] == "text/event-stream"


def test_stream_without_usage_option(server: WireServer) -> None:
    stream = chat_model(server, stream_usage=False).stream(HELLO)
    assert stream.collect() == ChatResponse("Echo: hello there", None, FinishReason.STOP)
    assert "stream_options" not in server.bodies()[0]


def test_stream_length_finish(server: WireServer) -> None:
    response = chat_model(server).stream(HELLO, max_tokens=1).collect()
    assert response.text == "Echo:"
    assert response.finish_reason is FinishReason.LENGTH


def test_astream(server: WireServer) -> None:
    parts, response = collect_async(chat_model(server))
    assert parts == ["Echo: ", "hello ", "there"]
    assert response == ChatResponse("Echo: hello there", TokenUsage(2, 3, 5), FinishReason.STOP)


def test_stream_of_a_server_that_answers_json(server: WireServer) -> None:
    server.script(json_answer(), json_answer())
    model = chat_model(server)
    stream = model.stream(HELLO)
    assert list(stream) == ["Echo: hello there"]
    assert stream.response.finish_reason is FinishReason.STOP
    parts, response = collect_async(model)
    assert parts == ["Echo: hello there"]
    assert response.token_usage == TokenUsage(2, 3, 5)


def test_sse_framing_variants(server: WireServer) -> None:
    """Comments, named events, multi-line data, no space after the colon, no [DONE]."""
    chunk = {"choices": [{"index": 0, "delta": {"content": "A"}, "finish_reason": None}]}
    server.script(
        events(
            [
                ": keep-alive comment\n\n",
                "event: message\nid: 1\nretry: 100\n" + sse(chunk),
                'data:{"choices":[{"index":0,"delta":{"content":"B"},\n'
                'data: "finish_reason":null}]}\n\n',
                "data: " + json.dumps({"choices": [{"delta": {}, "finish_reason": "stop"}]}),
            ]
        )
    )
    stream = chat_model(server).stream(HELLO)
    assert list(stream) == ["A", "B"]
    assert stream.response == ChatResponse("AB", None, FinishReason.STOP)


def test_stream_crlf_lines(server: WireServer) -> None:
    chunk = {"choices": [{"delta": {"content": "x"}, "finish_reason": "stop"}]}
    server.script(events([f"data: {json.dumps(chunk)}\r\n\r\n", "data: [DONE]\r\n\r\n"]))
    assert chat_model(server).stream(HELLO).collect().text == "x"


def test_stream_close_early_drops_the_connection(server: WireServer) -> None:
    model = chat_model(server)
    with model.stream([UserMessage("a b c d e f")]) as stream:
        assert next(stream) == "Echo: "
    # the pool is still usable afterwards
    assert model.chat(HELLO).text == "Echo: hello there"


def test_is_a_chat_model_and_closes(server: WireServer) -> None:
    with chat_model(server) as model:
        assert isinstance(model, ChatModel)
        model.chat(HELLO)
    model.close()  # idempotent


def test_caller_supplied_http_clients_are_used_and_left_open(server: WireServer) -> None:
    seen: list[str] = []

    def hook(request: httpx.Request) -> None:
        seen.append(request.url.path)

    async def ahook(request: httpx.Request) -> None:
        seen.append("async " + request.url.path)

    client = httpx.Client(event_hooks={"request": [hook]})

    async def run() -> ChatResponse:
        async with httpx.AsyncClient(event_hooks={"request": [ahook]}) as async_client:
            model = chat_model(server, http_client=client, async_http_client=async_client)
            model.chat(HELLO)
            model.close()
            response = await model.achat(HELLO)
            assert not async_client.is_closed
            return response

    assert asyncio.run(run()).text == "Echo: hello there"
    assert not client.is_closed
    client.close()
    assert seen == ["/v1/chat/completions", "async /v1/chat/completions"]
