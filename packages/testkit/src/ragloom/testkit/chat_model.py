"""ChatModelSuite: the contract every ChatModel must pass unchanged.

Subclass it and provide one fixture, ``model``, returning the model to test::

    class TestMyChatModel(ChatModelSuite):
        @pytest.fixture
        def model(self):
            return MyChatModel(base_url=..., model_name=...)

The suite checks shapes, not wording: any non-empty answer passes, so it runs against a
real model or a local server that speaks the provider's wire format.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from ragloom.core.chat.messages import AiMessage, ChatMessage, SystemMessage, UserMessage
from ragloom.core.chat.model import (
    AsyncChatStream,
    ChatModel,
    ChatResponse,
    ChatStream,
    FinishReason,
)
from ragloom.core.embedding import TokenUsage
from ragloom.core.errors import RagloomError
from ragloom.testkit.suite import ConformanceSuite, if_fails

__all__ = ["ChatModelSuite"]

_QUESTION = [UserMessage("Reply with one short greeting.")]
_CONVERSATION: list[ChatMessage] = [
    SystemMessage("You are a terse assistant."),
    UserMessage("My name is Ada."),
    AiMessage("Hello Ada."),
    UserMessage("What is my name?"),
]


def _check_response(response: ChatResponse) -> None:
    assert isinstance(response, ChatResponse)
    assert isinstance(response.text, str)
    assert response.text.strip(), "the model answered with an empty text"
    assert response.finish_reason is None or isinstance(response.finish_reason, FinishReason)
    usage = response.token_usage
    if usage is not None:
        assert isinstance(usage, TokenUsage)
        for count in (usage.input_token_count, usage.output_token_count, usage.total_token_count):
            assert count is None or (isinstance(count, int) and count >= 0)


class ChatModelSuite(ConformanceSuite, standard=True):
    """chat, stream, achat, astream: response shape, stream protocol, threads."""

    integration_fixtures = frozenset({"model"})

    @pytest.fixture
    def model(self) -> ChatModel:
        """Provided by the integration: the chat model under test."""
        raise NotImplementedError(
            f"{type(self).__name__} must define a `model` fixture returning a ChatModel"
        )

    @if_fails(
        "the model must implement the ragloom ChatModel protocol (chat, stream, achat, astream)"
    )
    def test_is_a_chat_model(self, model: ChatModel) -> None:
        assert isinstance(model, ChatModel)

    @if_fails("chat() must return ChatResponse with non-empty text; map finish reason and usage")
    def test_chat_answers_with_a_response(self, model: ChatModel) -> None:
        _check_response(model.chat(_QUESTION))

    @if_fails("check the mapping of system, user and ai messages to the provider's roles")
    def test_chat_accepts_a_whole_conversation(self, model: ChatModel) -> None:
        _check_response(model.chat(_CONVERSATION))

    @if_fails("chat() must not mutate the message list passed in")
    def test_chat_leaves_the_messages_unchanged(self, model: ChatModel) -> None:
        messages = list(_CONVERSATION)
        model.chat(messages)
        assert messages == _CONVERSATION

    @if_fails("stream must yield non-empty text deltas whose join equals stream.response.text")
    def test_stream_yields_partial_texts_then_the_response(self, model: ChatModel) -> None:
        stream = model.stream(_QUESTION)
        assert isinstance(stream, ChatStream)
        with stream:
            parts = list(stream)
        assert parts, "the stream yielded no partial text"
        assert all(isinstance(part, str) and part for part in parts)
        _check_response(stream.response)
        assert stream.response.text == "".join(parts)

    @if_fails("stream.response must raise RagloomError (not finished) before the stream ends")
    def test_stream_response_is_unavailable_before_the_end(self, model: ChatModel) -> None:
        with model.stream(_QUESTION) as stream:
            next(stream)
            with pytest.raises(RagloomError, match="not finished"):
                _ = stream.response

    @if_fails("closing a stream mid-way must not raise (release the HTTP response)")
    def test_stream_can_be_closed_early(self, model: ChatModel) -> None:
        stream = model.stream(_CONVERSATION)
        assert isinstance(next(stream), str)
        stream.close()

    @if_fails("achat() must behave like chat() inside asyncio.run")
    def test_achat_answers_with_a_response(self, model: ChatModel) -> None:
        _check_response(asyncio.run(model.achat(_CONVERSATION)))

    @if_fails("astream must yield deltas and set response like stream, with async with support")
    def test_astream_yields_partial_texts_then_the_response(self, model: ChatModel) -> None:
        async def consume() -> tuple[list[str], ChatResponse]:
            stream = model.astream(_QUESTION)
            assert isinstance(stream, AsyncChatStream)
            async with stream:
                parts = [part async for part in stream]
            return parts, stream.response

        parts, response = asyncio.run(consume())
        assert parts
        assert all(isinstance(part, str) and part for part in parts)
        _check_response(response)
        assert response.text == "".join(parts)

    @if_fails("the model must be thread-safe: no shared mutable request state or client per call")
    def test_calls_from_several_threads_all_succeed(self, model: ChatModel) -> None:
        responses: list[ChatResponse] = []
        errors: list[BaseException] = []
        lock = threading.Lock()

        def ask() -> None:
            try:
                response = model.chat(_QUESTION)
            except BaseException as exc:  # reported below, with the others
                with lock:
                    errors.append(exc)
                return
            with lock:
                responses.append(response)

        threads = [threading.Thread(target=ask) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not errors, errors
        assert len(responses) == 4
        for response in responses:
            _check_response(response)
