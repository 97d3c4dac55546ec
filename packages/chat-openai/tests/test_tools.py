"""Tool calling over the chat-completions tools format, against the local wire server:
tools and tool_choice in requests, tool calls in answers and assembled from streamed
deltas, tool messages sent back, and RagAssistant's retriever tools end to end."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from openai_helpers import chat_error, chat_model

from ragloom.chat_models.openai.testing import WireServer, events, sse, status
from ragloom.core import (
    AiMessage,
    ChatResponse,
    Document,
    EmbeddingStoreContentRetriever,
    EmbeddingStoreIngestor,
    FinishReason,
    InMemoryEmbeddingStore,
    RagAssistant,
    RetrieverTool,
    SystemMessage,
    ToolExecutionRequest,
    ToolExecutionResultMessage,
    ToolSpecification,
    UserMessage,
)
from ragloom.core.kit.http import HttpErrorKind
from ragloom.testkit import FakeEmbeddingModel

SEARCH = ToolSpecification(
    "search",
    "Search the documents.",
    {
        "type": "object",
        "properties": {"query": {"type": "string", "maxLength": 200}},
        "required": ["query"],
    },
)
CLOCK = ToolSpecification("clock", "The current time.")
QUESTION = [UserMessage("where do volcanoes erupt")]
CALL = ToolExecutionRequest("call_wire0", "search", '{"query": "where do volcanoes erupt"}')


def chunk(delta: dict[str, Any], reason: str | None = None) -> str:
    return sse(
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
        }
    )


def streamed(model: Any, messages: list[Any], **options: Any) -> tuple[str, ChatResponse]:
    stream = model.stream(messages, **options)
    return "".join(stream), stream.response


def astreamed(model: Any, messages: list[Any], **options: Any) -> tuple[str, ChatResponse]:
    async def run() -> tuple[str, ChatResponse]:
        stream = model.astream(messages, **options)
        text = "".join([part async for part in stream])
        return text, stream.response

    result: tuple[str, ChatResponse] = asyncio.run(run())
    return result


# -- requests --------------------------------------------------------------------------


def test_tools_and_a_named_tool_choice_are_sent_in_the_wire_format(server: WireServer) -> None:
    chat_model(server).chat(QUESTION, tools=[SEARCH, CLOCK], tool_choice="clock")
    (body,) = server.bodies()
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "search",
                "description": "Search the documents.",
                "parameters": SEARCH.parameters,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "clock",
                "description": "The current time.",
                "parameters": {"type": "object", "properties": {}},
            },
        },
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "clock"}}


def test_calls_and_results_are_sent_back_as_tool_calls_and_tool_messages(
    server: WireServer,
) -> None:
    model = chat_model(server)
    first = model.chat(QUESTION, tools=[SEARCH])
    conversation = [
        SystemMessage("Use the tools."),
        *QUESTION,
        first.ai_message,
        ToolExecutionResultMessage.from_request(first.tool_execution_requests[0], "Iceland."),
    ]
    answer = model.chat(conversation, tools=[SEARCH], tool_choice="auto")
    assert answer.text == "Echo: Iceland."
    assert answer.tool_execution_requests == ()
    messages = server.bodies()[1]["messages"]
    assert messages[2:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_wire0",
                    "type": "function",
                    "function": {
                        "name": "search",
                        "arguments": '{"query": "where do volcanoes erupt"}',
                    },
                }
            ],
        },
        {"role": "tool", "content": "Iceland.", "tool_call_id": "call_wire0"},
    ]


def test_the_server_refuses_what_openai_refuses(server: WireServer) -> None:
    model = chat_model(server)
    orphan = ToolExecutionResultMessage("x", id="call_9", tool_name="search")
    with chat_error(
        HttpErrorKind.STATUS, match="must be a response to a preceeding message", status=400
    ):
        model.chat([*QUESTION, orphan], tools=[SEARCH])
    with chat_error(
        HttpErrorKind.STATUS, match="did not have response messages: call_wire0", status=400
    ):
        model.chat([*QUESTION, AiMessage("", (CALL,)), *QUESTION], tools=[SEARCH])


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"tool_choice": "auto"}, ValueError, "tool_choice 'auto' given without tools"),
        ({"tools": [SEARCH], "tool_choice": "clock"}, ValueError, r"one of the tools \(search\)"),
        ({"tools": SEARCH}, TypeError, "tools must be a sequence of ToolSpecification"),
        ({"tools": [{"name": "x"}]}, TypeError, r"tools\[0\] is dict"),
    ],
)
def test_bad_tool_options_are_refused_before_sending(
    server: WireServer, options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        chat_model(server).chat(QUESTION, **options)
    assert server.requests == []


# -- answers ---------------------------------------------------------------------------


def test_a_tool_call_answer_becomes_execution_requests(server: WireServer) -> None:
    response = chat_model(server).chat(QUESTION, tools=[SEARCH])
    assert response.text == ""
    assert response.finish_reason is FinishReason.TOOL_EXECUTION
    assert response.tool_execution_requests == (CALL,)
    assert SEARCH.parse_arguments(CALL.arguments) == {"query": "where do volcanoes erupt"}


@pytest.mark.parametrize("collect", [streamed, astreamed])
def test_streamed_tool_call_deltas_are_assembled(server: WireServer, collect: Any) -> None:
    text, response = collect(chat_model(server), QUESTION, tools=[SEARCH])
    assert text == ""
    assert response.tool_execution_requests == (CALL,)
    assert response.finish_reason is FinishReason.TOOL_EXECUTION
    assert response.token_usage is not None


def test_parallel_calls_streamed_by_index_are_assembled_in_index_order(
    server: WireServer,
) -> None:
    server.script(
        events(
            [
                chunk({"role": "assistant", "content": "Looking. "}),
                chunk({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "clock"}}]}),
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "a",
                                "type": "function",
                                "function": {"name": "search", "arguments": '{"qu'},
                            }
                        ]
                    }
                ),
                chunk({"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]}),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ery": "x"}'}}]}),
                chunk({}, "tool_calls"),
                sse("[DONE]"),
            ]
        )
    )
    text, response = streamed(chat_model(server), QUESTION, tools=[SEARCH, CLOCK])
    assert text == "Looking. "
    assert response.text == "Looking. "
    assert response.tool_execution_requests == (
        ToolExecutionRequest("a", "search", '{"query": "x"}'),
        ToolExecutionRequest("b", "clock", "{}"),
    )


def test_the_server_calls_every_tool_when_required(server: WireServer) -> None:
    response = chat_model(server).chat(QUESTION, tools=[SEARCH, CLOCK], tool_choice="required")
    assert [r.name for r in response.tool_execution_requests] == ["search", "clock"]
    assert response.tool_execution_requests[1].arguments == "{}"


def _completion_with(calls: Any) -> dict[str, Any]:
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    return {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}


@pytest.mark.parametrize(
    ("calls", "message"),
    [
        ([{"id": "a", "type": "function"}], "malformed tool call"),
        ("search", "malformed tool call"),
        ([{"id": "", "function": {"name": "search", "arguments": "{}"}}], "without an id or name"),
        ([{"id": "a", "function": {"arguments": "{}"}}], "without an id or name"),
        ([{"id": "a", "function": {"name": "s", "arguments": 3}}], "arguments are int"),
    ],
)
def test_malformed_tool_calls_are_response_errors(
    server: WireServer, calls: Any, message: str
) -> None:
    server.script(status(200, _completion_with(calls)))
    with chat_error(HttpErrorKind.PROTOCOL, match=message):
        chat_model(server).chat(QUESTION, tools=[SEARCH])


def test_arguments_sent_as_an_object_become_json_text(server: WireServer) -> None:
    calls = [{"id": "a", "function": {"name": "search", "arguments": {"query": "x"}}}]
    server.script(status(200, _completion_with(calls)))
    response = chat_model(server).chat(QUESTION, tools=[SEARCH])
    assert json.loads(response.tool_execution_requests[0].arguments) == {"query": "x"}


@pytest.mark.parametrize(
    ("delta", "message"),
    [
        ({"tool_calls": [{"index": -1, "function": {"name": "s"}}]}, "malformed tool-call delta"),
        ({"tool_calls": [{"index": 0, "function": "s"}]}, "malformed tool-call delta"),
        ({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}, "without an id or name"),
        (
            {
                "tool_calls": [
                    {"index": i, "id": "x", "function": {"name": "s"}} for i in range(129)
                ]
            },
            "more than 128 tool calls",
        ),
    ],
)
def test_malformed_streamed_tool_calls_are_response_errors(
    server: WireServer, delta: dict[str, Any], message: str
) -> None:
    server.script(events([chunk(delta), chunk({}, "tool_calls"), sse("[DONE]")]))
    with chat_error(HttpErrorKind.PROTOCOL, match=message):
        streamed(chat_model(server), QUESTION, tools=[SEARCH])


# -- RagAssistant over the wire --------------------------------------------------------


@pytest.fixture
def retriever() -> EmbeddingStoreContentRetriever:
    embeddings = FakeEmbeddingModel(128)
    store = InMemoryEmbeddingStore()
    texts = [
        "where do volcanoes erupt: along plate boundaries such as Iceland",
        "bread dough rises with yeast",
    ]
    EmbeddingStoreIngestor(store, embeddings).ingest([Document(text) for text in texts])
    return EmbeddingStoreContentRetriever(store, embeddings, max_results=1)


def test_the_assistant_retrieves_through_the_model_s_tool_calls(
    server: WireServer, retriever: EmbeddingStoreContentRetriever
) -> None:
    assistant = RagAssistant(chat_model(server), retriever_tools=[RetrieverTool(retriever)])
    result = assistant.chat("where do volcanoes erupt")
    source = "where do volcanoes erupt: along plate boundaries such as Iceland"
    assert result.content == f"Echo: [1] {source}"
    assert [content.text for content in result.sources] == [source]
    first, second = server.bodies()
    assert first["tools"][0]["function"]["name"] == "search"
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "tool"]


def test_the_assistant_streams_over_the_wire_with_tools(
    server: WireServer, retriever: EmbeddingStoreContentRetriever
) -> None:
    assistant = RagAssistant(chat_model(server), retriever_tools=[RetrieverTool(retriever)])
    rounds: list[Any] = []
    stream = assistant.stream("where do volcanoes erupt", on_retrieved=rounds.append)
    text = "".join(stream)
    assert text == stream.result.content
    assert text.startswith("Echo: [1] where do volcanoes erupt")
    assert len(rounds) == 1
    assert all(body["stream"] for body in server.bodies())
