"""LangChainChatModel: any LangChain chat model as a ragloom ChatModel, streaming included."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.messages import SystemMessage as LcSystemMessage
from langchain_core.messages.ai import add_ai_message_chunks

from ragloom.core.chat.messages import AiMessage, ChatMessage, SystemMessage, UserMessage
from ragloom.core.chat.model import (
    AsyncChatStream,
    ChatModel,
    ChatResponse,
    ChatStream,
    FinishReason,
)
from ragloom.core.embedding import TokenUsage
from ragloom.core.errors import ChatModelError, InvalidArgumentTypeError, RagloomError

__all__ = ["LangChainChatModel"]

# Providers' finish reasons (OpenAI, Anthropic, Google, Ollama, ...) by ragloom reason.
_FINISH_REASONS = {
    **dict.fromkeys(("stop", "end_turn", "stop_sequence", "complete"), FinishReason.STOP),
    **dict.fromkeys(("length", "max_tokens", "model_length"), FinishReason.LENGTH),
    **dict.fromkeys(("tool_calls", "tool_use", "function_call"), FinishReason.TOOL_EXECUTION),
    **dict.fromkeys(("content_filter", "safety", "refusal"), FinishReason.CONTENT_FILTER),
}


class LangChainChatModel(ChatModel):
    """A ragloom ``ChatModel`` over a LangChain ``BaseChatModel``.

    Messages map to ``SystemMessage``, ``HumanMessage`` (with the user's ``name``) and
    ``AIMessage``; ``options`` go to ``invoke``/``stream`` unchanged (``stop``, or the
    provider's settings). Token usage comes from LangChain's ``usage_metadata``, the
    finish reason from the provider's ``finish_reason``/``stop_reason``. Failures of the
    wrapped model are raised as :class:`ChatModelError` naming it.
    """

    def __init__(self, model: BaseChatModel) -> None:
        if not isinstance(model, BaseChatModel):
            raise InvalidArgumentTypeError(
                f"model must be a LangChain BaseChatModel, got {type(model).__name__}"
            )
        self.model = model

    def chat(self, messages: Sequence[ChatMessage], **options: Any) -> ChatResponse:
        """The model's answer, through ``invoke``."""
        with self._errors("invoke"):
            answer = self.model.invoke(_to_langchain(messages), **options)
        return _response(answer, str(answer.text))

    async def achat(self, messages: Sequence[ChatMessage], **options: Any) -> ChatResponse:
        """The model's answer, through ``ainvoke``."""
        with self._errors("ainvoke"):
            answer = await self.model.ainvoke(_to_langchain(messages), **options)
        return _response(answer, str(answer.text))

    def stream(self, messages: Sequence[ChatMessage], **options: Any) -> ChatStream:
        """The answer's chunks as LangChain's ``stream`` yields them."""
        lc_messages = _to_langchain(messages)

        def chunks() -> Iterator[str | ChatResponse]:
            source = self.model.stream(lc_messages, **options)
            received: list[AIMessageChunk] = []
            try:
                while True:
                    with self._errors("stream"):
                        chunk = next(source, None)
                    if chunk is None:
                        break
                    received.append(chunk)
                    yield str(chunk.text)
            finally:
                close = getattr(source, "close", None)
                if close is not None:
                    close()
            yield _streamed_response(received)

        return ChatStream(chunks())

    def astream(self, messages: Sequence[ChatMessage], **options: Any) -> AsyncChatStream:
        """The answer's chunks as LangChain's ``astream`` yields them."""
        lc_messages = _to_langchain(messages)

        async def chunks() -> AsyncIterator[str | ChatResponse]:
            source = self.model.astream(lc_messages, **options)
            received: list[AIMessageChunk] = []
            try:
                while True:
                    with self._errors("astream"):
                        chunk = await anext(source, None)
                    if chunk is None:
                        break
                    received.append(chunk)
                    yield str(chunk.text)
            finally:
                aclose = getattr(source, "aclose", None)
                if aclose is not None:
                    await aclose()
            yield _streamed_response(received)

        return AsyncChatStream(chunks())

    def _errors(self, method: str) -> _Errors:
        return _Errors(f"{type(self.model).__name__}.{method}")


class _Errors:
    """Re-raises a failure of the wrapped model as ChatModelError naming the call."""

    def __init__(self, what: str) -> None:
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, _: Any) -> None:
        if isinstance(exc, Exception) and not isinstance(exc, RagloomError):
            raise ChatModelError(f"{self.what} failed: {exc}") from exc


def _to_langchain(messages: Sequence[ChatMessage]) -> list[BaseMessage]:
    converted: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            converted.append(LcSystemMessage(message.text))
        elif isinstance(message, UserMessage):
            converted.append(HumanMessage(message.text, name=message.name))
        elif isinstance(message, AiMessage):
            converted.append(AIMessage(message.text))
        else:
            raise InvalidArgumentTypeError(
                f"messages must be ragloom ChatMessages, got {type(message).__name__}"
            )
    return converted


def _streamed_response(chunks: list[AIMessageChunk]) -> ChatResponse:
    """The ChatResponse of a streamed answer: its chunks merged, as LangChain merges them."""
    if not chunks:
        return ChatResponse("")
    merged = add_ai_message_chunks(chunks[0], *chunks[1:])
    return _response(merged, "".join(str(chunk.text) for chunk in chunks))


def _response(message: BaseMessage, text: str) -> ChatResponse:
    """The ChatResponse of LangChain's answer message, with ``text``."""
    usage = getattr(message, "usage_metadata", None)
    token_usage = (
        None
        if usage is None
        else TokenUsage(usage["input_tokens"], usage["output_tokens"], usage["total_tokens"])
    )
    reason = message.response_metadata.get(
        "finish_reason", message.response_metadata.get("stop_reason")
    )
    return ChatResponse(text, token_usage, _finish_reason(reason))


def _finish_reason(reason: object) -> FinishReason | None:
    if reason is None:
        return None
    return _FINISH_REASONS.get(str(reason).lower(), FinishReason.OTHER)
