"""Tool calling in core: tool specifications and their argument checks, tool messages, and
RagAssistant giving retrievers to the model as tools.

The chat model is the testkit's ScriptedChatModel (it answers with scripted tool requests);
retrieval is real (FakeEmbeddingModel embeddings in an InMemoryEmbeddingStore).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from ragloom.core import (
    AiMessage,
    ChatMessage,
    ChatResponse,
    Content,
    Document,
    EmbeddingStoreContentRetriever,
    EmbeddingStoreIngestor,
    FinishReason,
    InMemoryEmbeddingStore,
    MessageWindowChatMemory,
    Query,
    RagAssistant,
    RetrieverTool,
    ToolExecutionRequest,
    ToolExecutionResultMessage,
    ToolSpecification,
    UserMessage,
    document_splitters,
    metadata_key,
)
from ragloom.core.errors import InvalidArgumentError
from ragloom.core.retriever_tools import ToolLoop
from ragloom.testkit import FakeEmbeddingModel, ScriptedChatModel
from ragloom.testkit.content_retriever import CORPUS, QUESTIONS

WEATHER = ToolSpecification(
    "weather",
    "The weather in a city.",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 1, "maxLength": 20},
            "days": {"type": "integer", "minimum": 1, "maximum": 7},
            "unit": {"type": "string", "enum": ["C", "F"]},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        },
        "required": ["city"],
        "additionalProperties": False,
    },
)


@pytest.fixture(scope="module")
def retriever() -> EmbeddingStoreContentRetriever:
    model = FakeEmbeddingModel(256)
    store = InMemoryEmbeddingStore()
    EmbeddingStoreIngestor(
        store, model, document_splitter=document_splitters.recursive(300, 0)
    ).ingest([Document(text, {"topic": topic}) for topic, text in CORPUS.items()])
    return EmbeddingStoreContentRetriever(store, model, max_results=2)


def call(name: str, arguments: Any, id: str = "call_1") -> ToolExecutionRequest:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolExecutionRequest(id, name, text)


def asks(*requests: ToolExecutionRequest) -> ChatResponse:
    return ChatResponse("", None, FinishReason.TOOL_EXECUTION, requests)


# --- ToolSpecification -------------------------------------------------------------------


def test_valid_arguments_are_parsed() -> None:
    arguments = '{"city": "Oslo", "days": 3, "unit": "C", "tags": ["a"]}'
    assert WEATHER.parse_arguments(arguments) == {
        "city": "Oslo",
        "days": 3,
        "unit": "C",
        "tags": ["a"],
    }
    assert WEATHER.to_dict()["parameters"]["required"] == ["city"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("{city: Oslo}", "not valid JSON"),
        ("[1]", "arguments must be object, got list"),
        ('{"days": 2}', "missing required field.*'city'"),
        ('{"city": 7}', r"arguments\.city must be string, got int"),
        ('{"city": ""}', r"arguments\.city must have at least 1 characters, got 0"),
        ('{"city": "' + "x" * 21 + '"}', r"arguments\.city must have at most 20 characters"),
        ('{"city": "Oslo", "days": 8}', r"arguments\.days must be at most 7, got 8"),
        ('{"city": "Oslo", "days": true}', r"arguments\.days must be integer, got bool"),
        ('{"city": "Oslo", "days": NaN}', "not valid JSON.*NaN"),
        ('{"city": "Oslo", "unit": "K"}', r"arguments\.unit must be one of \['C', 'F'\]"),
        ('{"city": "Oslo", "tags": ["a", "b", "c"]}', "at most 2 items, got 3"),
        ('{"city": "Oslo", "tags": [1]}', r"arguments\.tags\[0\] must be string"),
        ('{"city": "Oslo", "drop": 1}', "unknown field.*'drop'"),
        ('{"city": "Oslo", "city": "Rome"}', "duplicate key 'city'"),
        ('{"city": ' + "[" * 100_000 + "]" * 100_000 + "}", "over the limit of 16000"),
    ],
)
def test_hostile_arguments_are_refused_naming_the_field(arguments: str, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        WEATHER.parse_arguments(arguments)


def test_deep_nesting_within_the_size_limit_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="not valid JSON"):
        WEATHER.parse_arguments("[" * 5000 + "]" * 5000, max_chars=20_000)


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"type": "string"}, "JSON schema of type object"),
        ({"type": "object", "pattern": "x"}, "unsupported JSON-schema keyword.*pattern"),
        ({"type": "object", "properties": {"a": {"type": "text"}}}, r"\.a type must be one of"),
        ({"type": "object", "required": ["a"]}, "required must list declared properties"),
        (
            {"type": "object", "properties": {"a": {"type": "string", "maxLength": "9"}}},
            "maxLength must be an int",
        ),
    ],
)
def test_schemas_with_unenforced_rules_are_refused(
    parameters: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        ToolSpecification("t", "d", parameters)


def test_tool_names_follow_the_api_rule() -> None:
    with pytest.raises(InvalidArgumentError, match="tool name"):
        ToolSpecification("search docs", "d")


# --- messages ----------------------------------------------------------------------------


def test_tool_messages_round_trip_through_dicts() -> None:
    request = call("weather", {"city": "Oslo"})
    messages: list[ChatMessage] = [
        UserMessage("weather?"),
        AiMessage("", (request,)),
        ToolExecutionResultMessage.from_request(request, "sunny"),
    ]
    dicts = [message.to_dict() for message in messages]
    assert dicts[1]["tool_execution_requests"] == [
        {"id": "call_1", "name": "weather", "arguments": '{"city": "Oslo"}'}
    ]
    assert dicts[2] == {"role": "tool", "text": "sunny", "id": "call_1", "tool_name": "weather"}
    assert [ChatMessage.from_dict(json.loads(json.dumps(d))) for d in dicts] == messages
    assert asks(request).ai_message == messages[1]


def test_bad_tool_messages_are_rejected() -> None:
    with pytest.raises(TypeError, match="ToolExecutionRequest"):
        AiMessage("x", ("not a request",))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="id must be str"):
        ToolExecutionResultMessage("x", id=None, tool_name="t")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tool_execution_requests"):
        ChatResponse("x", tool_execution_requests=({"id": "1"},))  # type: ignore[arg-type]


# --- RagAssistant with retriever tools ---------------------------------------------------


def test_the_model_retrieves_by_tool_and_cites_the_sources(
    retriever: EmbeddingStoreContentRetriever,
) -> None:
    model = ScriptedChatModel(
        [asks(call("search", {"query": QUESTIONS["volcanoes"]})), "Magma erupts as lava [1]."]
    )
    assistant = RagAssistant(model, retriever_tools=[RetrieverTool(retriever)])
    result = assistant.chat("How do volcanoes work?")
    assert result.content == "Magma erupts as lava [1]."
    assert result.sources[0].text == CORPUS["volcanoes"]
    assert len(result.sources) == 2
    first, second = model.requests
    assert [spec.name for spec in first.options["tools"]] == ["search"]
    assert "tool_choice" not in first.options
    assert [m.role for m in second.messages] == ["user", "assistant", "tool"]
    result_message = second.messages[-1]
    assert isinstance(result_message, ToolExecutionResultMessage)
    assert result_message.id == "call_1"
    assert result_message.text.startswith(f"[1] {CORPUS['volcanoes']}\n\n[2] ")


def test_the_model_may_answer_without_retrieving(
    retriever: EmbeddingStoreContentRetriever,
) -> None:
    model = ScriptedChatModel(["Hello! Ask me about the documents."])
    result = RagAssistant(model, retriever_tools=[RetrieverTool(retriever)]).chat("hi")
    assert result.content == "Hello! Ask me about the documents."
    assert result.sources == []
    assert len(model.requests) == 1


def test_bad_calls_are_answered_with_errors_the_model_can_fix(
    retriever: EmbeddingStoreContentRetriever,
) -> None:
    model = ScriptedChatModel(
        [
            asks(
                call("search", '{"query": 42}', "c1"),
                call("delete_all", "{}", "c2"),
                call("search", {"query": "x" * 501}, "c3"),
                call("search", {"query": "   "}, "c4"),
            ),
            asks(call("search", {"query": QUESTIONS["chess"]}, "c5")),
            "The knight was sacrificed [1].",
        ]
    )
    tool = RetrieverTool(retriever)
    result = RagAssistant(model, retriever_tools=[tool]).chat("chess?")
    errors = [m.text for m in model.requests[1].messages if m.role == "tool"]
    assert errors == [
        "error: tool 'search' arguments.query must be string, got int 42",
        "error: there is no tool 'delete_all'; the tools are search",
        "error: tool 'search' arguments.query must have at most 500 characters, got 501",
        "error: tool 'search' arguments.query is blank",
    ]
    assert result.sources[0].text == CORPUS["chess"]


def test_rounds_and_calls_per_round_are_bounded(
    retriever: EmbeddingStoreContentRetriever,
) -> None:
    greedy = asks(*(call("search", {"query": f"q{i}"}, f"c{i}") for i in range(3)))
    model = ScriptedChatModel([greedy, greedy, "done"])
    assistant = RagAssistant(
        model,
        retriever_tools=[RetrieverTool(retriever)],
        max_tool_rounds=2,
        max_tool_calls_per_round=2,
    )
    assert assistant.chat("go").content == "done"
    last = model.requests[-1]
    assert last.options["tool_choice"] == "none"
    results = [m.text for m in last.messages if m.role == "tool"]
    assert len(results) == 6
    assert results[2] == "error: not run; at most 2 tool calls are run per round"
    assert results[5] == results[2]


def test_a_model_asking_for_tools_after_the_last_round_gets_no_more_runs(
    retriever: EmbeddingStoreContentRetriever,
) -> None:
    request = call("search", {"query": "lava"})
    model = ScriptedChatModel([asks(request), asks(request)])
    assistant = RagAssistant(model, retriever_tools=[RetrieverTool(retriever)], max_tool_rounds=1)
    result = assistant.chat("go")
    assert result.finish_reason is FinishReason.TOOL_EXECUTION
    assert len(model.requests) == 2


def test_each_result_is_bounded_and_only_sent_contents_are_sources(
    retriever: EmbeddingStoreContentRetriever,
) -> None:
    model = ScriptedChatModel([asks(call("search", {"query": QUESTIONS["baking"]})), "ok"])
    tool = RetrieverTool(retriever, max_result_chars=100)
    result = RagAssistant(model, retriever_tools=[tool]).chat("bread?")
    sent = model.requests[1].messages[-1].text
    assert len(sent) <= 100
    assert sent.startswith(f"[1] {CORPUS['baking']}")
    assert [content.text for content in result.sources] == [CORPUS["baking"]]


def test_numbers_continue_across_rounds_and_repeats_keep_theirs(
    retriever: EmbeddingStoreContentRetriever,
) -> None:
    model = ScriptedChatModel(
        [
            asks(call("search", {"query": QUESTIONS["sailing"]}, "a")),
            asks(call("search", {"query": QUESTIONS["sailing"]}, "b")),
            "answer",
        ]
    )
    tool = RetrieverTool(retriever)
    result = RagAssistant(model, retriever_tools=[tool]).chat("sailing?")
    second_result = model.requests[2].messages[-1].text
    assert second_result.startswith(f"[1] {CORPUS['sailing']}")
    assert len(result.sources) == 2


def test_the_memory_id_reaches_the_tool_query_and_memory_keeps_only_the_answer(
    retriever: EmbeddingStoreContentRetriever,
) -> None:
    seen: list[Query] = []

    class Recording:
        def retrieve(self, query: Query) -> list[Content]:
            seen.append(query)
            return retriever.retrieve(query)

    model = ScriptedChatModel([asks(call("search", {"query": "lava"})), "Lava [1]."])
    assistant = RagAssistant(
        model,
        retriever_tools=[RetrieverTool(Recording())],
        chat_memory_provider=lambda memory_id: MessageWindowChatMemory(id=memory_id),
    )
    assistant.chat("volcano?", memory_id="ada")
    assert seen[0].text == "lava"
    assert seen[0].metadata.chat_memory_id == "ada"
    memory = assistant.chat_memory("ada")
    assert memory is not None
    assert memory.messages() == [UserMessage("volcano?"), AiMessage("Lava [1].")]


def test_filters_still_apply_to_tool_queries() -> None:
    model = FakeEmbeddingModel(256)
    store = InMemoryEmbeddingStore()
    EmbeddingStoreIngestor(
        store, model, document_splitter=document_splitters.recursive(300, 0)
    ).ingest([Document(text, {"topic": topic}) for topic, text in CORPUS.items()])
    only_chess = EmbeddingStoreContentRetriever(
        store, model, max_results=5, filter=metadata_key("topic").is_equal_to("chess")
    )
    chat = ScriptedChatModel([asks(call("search", {"query": "lava"})), "x"])
    result = RagAssistant(chat, retriever_tools=[RetrieverTool(only_chess)]).chat("q")
    assert [content.text for content in result.sources] == [CORPUS["chess"]]


def test_streaming_reports_each_round_then_the_answer(
    retriever: EmbeddingStoreContentRetriever,
) -> None:
    model = ScriptedChatModel(
        [asks(call("search", {"query": QUESTIONS["astronomy"]})), "Telescopes observe [1]."]
    )
    assistant = RagAssistant(model, retriever_tools=[RetrieverTool(retriever)])
    rounds: list[list[Content]] = []
    stream = assistant.stream("stars?", on_retrieved=rounds.append)
    assert "".join(stream) == "Telescopes observe [1]."
    assert [len(found) for found in rounds] == [2]
    assert stream.result.sources == rounds[0]
    assert all(request.streamed for request in model.requests)


def test_async_chat_and_stream_run_the_same_loop(
    retriever: EmbeddingStoreContentRetriever,
) -> None:
    script = [asks(call("search", {"query": QUESTIONS["chess"]})), "Knight [1]."]

    async def run() -> tuple[str, str, int]:
        chatted = await RagAssistant(
            ScriptedChatModel(script), retriever_tools=[RetrieverTool(retriever)]
        ).achat("chess?")
        stream = RagAssistant(
            ScriptedChatModel(script), retriever_tools=[RetrieverTool(retriever)]
        ).astream("chess?")
        text = "".join([part async for part in stream])
        return chatted.content, text, len(stream.result.sources)

    assert asyncio.run(run()) == ("Knight [1].", "Knight [1].", 2)


def test_assistant_options_are_checked(retriever: EmbeddingStoreContentRetriever) -> None:
    model = ScriptedChatModel()
    with pytest.raises(InvalidArgumentError, match="exactly one of"):
        RagAssistant(model, content_retriever=retriever, retriever_tools=[RetrieverTool(retriever)])
    with pytest.raises(InvalidArgumentError, match="two tools named 'search'"):
        RagAssistant(model, retriever_tools=[RetrieverTool(retriever), RetrieverTool(retriever)])
    with pytest.raises(TypeError, match=r"retriever_tools\[0\] is EmbeddingStoreContentRetriever"):
        RagAssistant(model, retriever_tools=[retriever])  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentError, match="max_tool_rounds must be a positive int"):
        RagAssistant(model, retriever_tools=[RetrieverTool(retriever)], max_tool_rounds=0)
    with pytest.raises(InvalidArgumentError, match="max_result_chars must be a positive int"):
        RetrieverTool(retriever, max_result_chars=0)


def test_the_loop_offers_tools_until_the_rounds_are_spent(
    retriever: EmbeddingStoreContentRetriever,
) -> None:
    from ragloom.core import QueryMetadata

    loop = ToolLoop(
        [RetrieverTool(retriever)],
        [UserMessage("q")],
        QueryMetadata(),
        max_rounds=1,
        max_calls_per_round=1,
    )
    assert "tool_choice" not in loop.options()
    assert loop.after(ChatResponse("plain answer")) is None
    assert loop.after(asks(call("search", {"query": "lava"}))) is not None
    assert loop.options()["tool_choice"] == "none"
