"""The ChatModel protocol, ChatResponse and the streams a model returns.

A chat model answers a list of :class:`~ragloom.core.chat.messages.ChatMessage` s with a
:class:`ChatResponse` (text, token usage, finish reason, and the tools the model asks to
run when it was offered :class:`~ragloom.core.chat.tools.ToolSpecification` s).
Streaming yields the answer as partial texts; the complete :class:`ChatResponse` is
available once the stream is exhausted. Implementations subclass :class:`ChatModel` and
define :meth:`ChatModel.chat`; they override :meth:`~ChatModel.stream`,
:meth:`~ChatModel.achat` and :meth:`~ChatModel.astream` when the provider supports them
natively.

A producer builds a stream from an (async) iterator that yields ``str`` partial texts and
then exactly one :class:`ChatResponse`::

    def stream(self, messages, **options):
        def chunks():
            for delta in self._server_sent_events(messages, options):
                yield delta.text
            yield ChatResponse(full_text, usage, FinishReason.STOP)
        return ChatStream(chunks())
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, runtime_checkable

from ragloom.core.chat.messages import AiMessage, ChatMessage
from ragloom.core.chat.tools import ToolExecutionRequest
from ragloom.core.embedding import TokenUsage
from ragloom.core.errors import ChatModelError, InvalidArgumentTypeError, RagloomError

__all__ = [
    "FinishReason",
    "ChatResponse",
    "ChatStream",
    "AsyncChatStream",
    "ChatModel",
]


class FinishReason(enum.StrEnum):
    """Why the model stopped generating (the spec's ``FinishReason``)."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_EXECUTION = "tool_execution"
    CONTENT_FILTER = "content_filter"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """A chat model's complete answer: its text, the tokens used and why it stopped.

    ``token_usage`` and ``finish_reason`` are ``None`` when the provider does not report
    them. ``tool_execution_requests`` are the tools the model asks to run (finish reason
    ``TOOL_EXECUTION``), empty otherwise.
    """

    text: str
    token_usage: TokenUsage | None = None
    finish_reason: FinishReason | None = None
    tool_execution_requests: tuple[ToolExecutionRequest, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise InvalidArgumentTypeError(
                f"ChatResponse text must be str, got {type(self.text).__name__}"
            )
        if self.token_usage is not None and not isinstance(self.token_usage, TokenUsage):
            raise InvalidArgumentTypeError(
                f"ChatResponse token_usage must be a TokenUsage, got {self.token_usage!r}"
            )
        if self.finish_reason is not None and not isinstance(self.finish_reason, FinishReason):
            raise InvalidArgumentTypeError(
                f"ChatResponse finish_reason must be a FinishReason, got {self.finish_reason!r}"
            )
        requests = tuple(self.tool_execution_requests)
        if not all(isinstance(request, ToolExecutionRequest) for request in requests):
            raise InvalidArgumentTypeError(
                "ChatResponse tool_execution_requests must hold ToolExecutionRequest, got "
                f"{self.tool_execution_requests!r}"
            )
        object.__setattr__(self, "tool_execution_requests", requests)

    @property
    def ai_message(self) -> AiMessage:
        """The answer as a message (with its tool requests), to append to a conversation."""
        return AiMessage(self.text, self.tool_execution_requests)


class _StreamState:
    """What the sync and async streams share: protocol checks and the final response."""

    __slots__ = ("_response",)

    def __init__(self) -> None:
        self._response: ChatResponse | None = None

    def _accept(self, chunk: object) -> str | None:
        """The partial text in ``chunk``; ``None`` for the final response or an empty text."""
        if isinstance(chunk, ChatResponse):
            if self._response is not None:
                raise ChatModelError("chat stream produced a second final ChatResponse")
            self._response = chunk
            return None
        if not isinstance(chunk, str):
            raise ChatModelError(
                f"chat stream produced {type(chunk).__name__}; expected str or ChatResponse"
            )
        if self._response is not None:
            raise ChatModelError("chat stream produced text after its final ChatResponse")
        return chunk or None

    def _end(self) -> None:
        if self._response is None:
            raise ChatModelError("chat stream ended without a final ChatResponse")

    @property
    def response(self) -> ChatResponse:
        """The complete response; available once the stream is exhausted."""
        if self._response is None:
            raise RagloomError("the chat stream has not finished; consume it before .response")
        return self._response


class ChatStream(_StreamState, Iterator[str]):
    """The partial texts of a streamed answer; :attr:`response` once exhausted.

    Empty partial texts are skipped. :meth:`close` (or leaving a ``with`` block) stops
    the producer early, e.g. to drop an HTTP connection.
    """

    __slots__ = ("_chunks",)

    def __init__(self, chunks: Iterable[str | ChatResponse]) -> None:
        super().__init__()
        self._chunks = iter(chunks)

    def __iter__(self) -> ChatStream:
        return self

    def __next__(self) -> str:
        while True:
            try:
                chunk = next(self._chunks)
            except StopIteration:
                self._end()
                raise
            text = self._accept(chunk)
            if text is not None:
                return text

    def collect(self) -> ChatResponse:
        """Consume the rest of the stream and return the complete response."""
        for _ in self:
            pass
        return self.response

    def close(self) -> None:
        """Stop the producer (closes a generator; a no-op for other iterators)."""
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> ChatStream:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class AsyncChatStream(_StreamState, AsyncIterator[str]):
    """The async counterpart of :class:`ChatStream`: ``async for`` partial texts."""

    __slots__ = ("_chunks",)

    def __init__(self, chunks: AsyncIterable[str | ChatResponse]) -> None:
        super().__init__()
        self._chunks = aiter(chunks)

    def __aiter__(self) -> AsyncChatStream:
        return self

    async def __anext__(self) -> str:
        while True:
            try:
                chunk = await anext(self._chunks)
            except StopAsyncIteration:
                self._end()
                raise
            text = self._accept(chunk)
            if text is not None:
                return text

    async def collect(self) -> ChatResponse:
        """Consume the rest of the stream and return the complete response."""
        async for _ in self:
            pass
        return self.response

    async def aclose(self) -> None:
        """Stop the producer (closes an async generator; a no-op for other iterators)."""
        aclose = getattr(self._chunks, "aclose", None)
        if aclose is not None:
            await aclose()

    async def __aenter__(self) -> AsyncChatStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()


@runtime_checkable
class ChatModel(Protocol):
    """A language model that answers a conversation (the spec's ``ChatLanguageModel``).

    ``options`` are provider settings for one call (``temperature``, ``max_tokens``,
    ``stop``, ...); each implementation documents the ones it accepts. Models that call
    tools accept ``tools`` (a sequence of
    :class:`~ragloom.core.chat.tools.ToolSpecification`) and ``tool_choice`` (``"auto"``,
    ``"none"``, ``"required"`` or a tool's name). Errors of the
    provider (authentication, unknown model, malformed answers) are raised as
    :class:`~ragloom.core.errors.ChatModelError`. Implementations must be safe to call
    from several threads at once.

    Subclassing explicitly inherits working defaults for everything but :meth:`chat`:
    :meth:`stream` yields the whole answer as one partial text, and the async variants
    run the sync ones in a worker thread.
    """

    def chat(self, messages: Sequence[ChatMessage], **options: Any) -> ChatResponse:
        """The model's complete answer to ``messages`` (oldest first)."""
        ...

    def stream(self, messages: Sequence[ChatMessage], **options: Any) -> ChatStream:
        """The answer as partial texts, then :attr:`ChatStream.response`."""

        def chunks() -> Iterator[str | ChatResponse]:
            response = self.chat(messages, **options)
            yield response.text
            yield response

        return ChatStream(chunks())

    async def achat(self, messages: Sequence[ChatMessage], **options: Any) -> ChatResponse:
        """:meth:`chat` without blocking the event loop."""
        return await asyncio.to_thread(self.chat, messages, **options)

    def astream(self, messages: Sequence[ChatMessage], **options: Any) -> AsyncChatStream:
        """:meth:`stream` for ``async for``; each partial text is awaited, not blocked on."""

        async def chunks() -> AsyncIterator[str | ChatResponse]:
            stream = await asyncio.to_thread(self.stream, messages, **options)
            try:
                while (text := await asyncio.to_thread(next, stream, None)) is not None:
                    yield text
                yield stream.response
            finally:
                stream.close()

        return AsyncChatStream(chunks())
