"""ChatMessage, ChatResponse, the stream protocol, the ChatModel defaults, ScriptedChatModel."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from ragloom.core import (
    AiMessage,
    AsyncChatStream,
    ChatMessage,
    ChatModel,
    ChatModelError,
    ChatResponse,
    ChatStream,
    FinishReason,
    RagloomError,
    SystemMessage,
    TokenUsage,
    UserMessage,
)
from ragloom.testkit import ChatModelSuite, ScriptedChatModel


class ChatOnlyModel(ChatModel):
    """Implements only ``chat``: everything else comes from the protocol's defaults."""

    def chat(self, messages: Sequence[ChatMessage], **options: Any) -> ChatResponse:
        return ChatResponse(f"Hello, you said {len(messages)} things.", None, FinishReason.STOP)


class TestScriptedChatModelConforms(ChatModelSuite):
    @pytest.fixture
    def model(self) -> ChatModel:
        return ScriptedChatModel(lambda messages: "Hi there, how can I help?")


class TestChatOnlyModelConforms(ChatModelSuite):
    @pytest.fixture
    def model(self) -> ChatModel:
        return ChatOnlyModel()


# --- messages ---------------------------------------------------------------------------


def test_message_roles_and_round_trip() -> None:
    messages: list[ChatMessage] = [
        SystemMessage("be brief"),
        UserMessage("hi", name="ada"),
        UserMessage("hello"),
        AiMessage("hey"),
    ]
    assert [m.role for m in messages] == ["system", "user", "user", "assistant"]
    dicts = [m.to_dict() for m in messages]
    assert dicts[1] == {"role": "user", "text": "hi", "name": "ada"}
    assert dicts[2] == {"role": "user", "text": "hello"}
    assert [ChatMessage.from_dict(d) for d in dicts] == messages


def test_messages_are_values() -> None:
    assert UserMessage("a") == UserMessage("a")
    assert len({UserMessage("a"), UserMessage("a"), AiMessage("a"), SystemMessage("a")}) == 3


def test_bad_messages_are_rejected() -> None:
    with pytest.raises(TypeError, match="abstract"):
        ChatMessage("x")
    with pytest.raises(TypeError, match="UserMessage text must be str"):
        UserMessage(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="name must be str"):
        UserMessage("x", name=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown chat message role 'function'"):
        ChatMessage.from_dict({"role": "function", "text": "x"})


def test_chat_response_validates_and_gives_its_message() -> None:
    response = ChatResponse("ok", TokenUsage(3, 1), FinishReason.LENGTH)
    assert response.ai_message == AiMessage("ok")
    assert response.token_usage == TokenUsage(3, 1, 4)
    with pytest.raises(TypeError, match="finish_reason"):
        ChatResponse("ok", None, "stop")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="token_usage"):
        ChatResponse("ok", 3)  # type: ignore[arg-type]
    assert FinishReason("content_filter") is FinishReason.CONTENT_FILTER


# --- streams ----------------------------------------------------------------------------


def test_stream_skips_empty_parts_and_keeps_the_response() -> None:
    final = ChatResponse("ab")
    stream = ChatStream(["a", "", "b", final])
    assert list(stream) == ["a", "b"]
    assert stream.response is final
    assert list(stream) == []  # exhausted, like any iterator


@pytest.mark.parametrize(
    ("chunks", "message"),
    [
        (["a"], "ended without a final ChatResponse"),
        (["a", ChatResponse("a"), ChatResponse("a")], "second final ChatResponse"),
        ([ChatResponse("a"), "b"], "text after its final ChatResponse"),
        (["a", 3], "produced int"),
    ],
)
def test_stream_protocol_violations_are_chat_model_errors(chunks: list[Any], message: str) -> None:
    with pytest.raises(ChatModelError, match=message):
        list(ChatStream(chunks))


def test_stream_collect_and_close() -> None:
    closed: list[bool] = []

    def chunks() -> Any:
        try:
            yield "a"
            yield "b"
            yield ChatResponse("ab")
        finally:
            closed.append(True)

    assert ChatStream(chunks()).collect().text == "ab"
    with ChatStream(chunks()) as stream:
        assert next(stream) == "a"
        with pytest.raises(RagloomError, match="not finished"):
            _ = stream.response
    assert closed == [True, True]


def test_async_stream_collect_and_violations() -> None:
    async def chunks(*items: Any) -> AsyncIterator[Any]:
        for item in items:
            yield item

    async def run() -> None:
        assert (await AsyncChatStream(chunks("x", ChatResponse("x"))).collect()).text == "x"
        with pytest.raises(ChatModelError, match="ended without"):
            await AsyncChatStream(chunks("x")).collect()

    asyncio.run(run())


def test_default_astream_closes_the_sync_stream_when_left_early() -> None:
    closed: list[bool] = []

    class StreamingModel(ChatOnlyModel):
        def stream(self, messages: Sequence[ChatMessage], **options: Any) -> ChatStream:
            def chunks() -> Any:
                try:
                    yield "one "
                    yield "two"
                    yield ChatResponse("one two")
                finally:
                    closed.append(True)

            return ChatStream(chunks())

    async def first_part() -> str:
        async with StreamingModel().astream([UserMessage("q")]) as stream:
            return await anext(stream)

    assert asyncio.run(first_part()) == "one "
    assert closed == [True]


# --- ScriptedChatModel ------------------------------------------------------------------


def test_scripted_model_answers_in_order_and_records_requests() -> None:
    model = ScriptedChatModel(["first answer", ChatResponse("second", None, FinishReason.LENGTH)])
    first = model.chat([SystemMessage("sys"), UserMessage("one two three")], temperature=0)
    assert first.text == "first answer"
    assert first.token_usage == TokenUsage(4, 2)
    assert first.finish_reason is FinishReason.STOP
    streamed = model.stream([UserMessage("again")])
    assert list(streamed) == ["second"]
    assert streamed.response.finish_reason is FinishReason.LENGTH
    assert model.prompts == ["one two three", "again"]
    assert model.requests[0].options == {"temperature": 0}
    assert [r.streamed for r in model.requests] == [False, True]
    assert model.remaining == 0
    with pytest.raises(
        ChatModelError, match="exhausted after 2 replies; unexpected prompt: 'more'"
    ):
        model.chat([UserMessage("more")])


def test_scripted_model_streams_words_that_join_to_the_answer() -> None:
    model = ScriptedChatModel(lambda messages: "  Paris is  lovely. ")
    stream = model.stream([UserMessage("q")])
    parts = list(stream)
    assert parts == ["  ", "Paris ", "is  ", "lovely. "]
    assert "".join(parts) == stream.response.text


def test_scripted_model_raises_scripted_exceptions_and_calls_functions() -> None:
    model = ScriptedChatModel(
        [ChatModelError("server down"), lambda messages: messages[-1].text.upper()]
    )
    with pytest.raises(ChatModelError, match="server down"):
        model.chat([UserMessage("a")])
    assert asyncio.run(model.achat([UserMessage("shout")])).text == "SHOUT"
