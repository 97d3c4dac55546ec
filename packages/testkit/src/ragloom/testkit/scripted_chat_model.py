"""ScriptedChatModel: a deterministic chat model that answers from a script.

Tests of query transformers, routers and assistants need a chat model whose answers are
known in advance and whose prompts can be inspected afterwards. Give it a list of replies
(used in order) or one function of the messages (used for every request)::

    model = ScriptedChatModel(["Where did John Doe live?", "He lived in Paris."])
    model = ScriptedChatModel(lambda messages: "2" if "weather" in messages[-1].text else "1")

A reply is a ``str``, a complete :class:`ChatResponse`, an exception to raise, or a
function of the messages returning a ``str`` or :class:`ChatResponse`. Every request is
recorded in :attr:`ScriptedChatModel.requests`. Streaming splits the answer into words
(each with its trailing whitespace), so the partial texts join to the answer.
"""

from __future__ import annotations

import re
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragloom.core.chat.messages import ChatMessage
from ragloom.core.chat.model import (
    AsyncChatStream,
    ChatModel,
    ChatResponse,
    ChatStream,
    FinishReason,
)
from ragloom.core.embedding import TokenUsage
from ragloom.core.errors import ChatModelError

__all__ = ["ChatRequest", "Reply", "Responder", "ScriptedChatModel"]

Responder = Callable[[list[ChatMessage]], "str | ChatResponse"]
"""A function from the request's messages to the answer."""
Reply = str | ChatResponse | BaseException | Responder
"""One scripted answer: text, a complete response, an exception to raise, or a function."""

_WORDS = re.compile(r"\S+")
_PIECES = re.compile(r"\S+\s*|\s+")


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One recorded request: the messages, the options and whether it was streamed."""

    messages: tuple[ChatMessage, ...]
    options: dict[str, Any] = field(default_factory=dict)
    streamed: bool = False

    @property
    def prompt(self) -> str:
        """The text of the last message (the prompt the model was asked to answer)."""
        return self.messages[-1].text if self.messages else ""


class ScriptedChatModel(ChatModel):
    """Answers from ``script`` and records every request (thread-safe, no network).

    With a list, a request beyond its end raises
    :class:`~ragloom.core.errors.ChatModelError` showing the unexpected prompt. Token usage
    counts whitespace-separated words of all messages (input) and of the answer (output);
    the finish reason is ``STOP`` unless the reply is a :class:`ChatResponse`.
    """

    def __init__(self, script: Iterable[Reply] | Responder = ()) -> None:
        self._lock = threading.Lock()
        self._responder: Responder | None = None
        self._replies: list[Reply] = []
        if callable(script):
            self._responder = script
        else:
            self._replies = list(script)
        self._next = 0
        self.requests: list[ChatRequest] = []

    @property
    def prompts(self) -> list[str]:
        """The prompt (last message text) of every request, in order."""
        with self._lock:
            return [request.prompt for request in self.requests]

    @property
    def remaining(self) -> int:
        """How many scripted replies are still unused (0 for a function script)."""
        with self._lock:
            return len(self._replies) - self._next

    def chat(self, messages: Sequence[ChatMessage], **options: Any) -> ChatResponse:
        return self._answer(messages, options, streamed=False)

    def stream(self, messages: Sequence[ChatMessage], **options: Any) -> ChatStream:
        def chunks() -> Iterator[str | ChatResponse]:
            response = self._answer(messages, options, streamed=True)
            yield from _PIECES.findall(response.text)
            yield response

        return ChatStream(chunks())

    async def achat(self, messages: Sequence[ChatMessage], **options: Any) -> ChatResponse:
        return self._answer(messages, options, streamed=False)

    def astream(self, messages: Sequence[ChatMessage], **options: Any) -> AsyncChatStream:
        async def chunks() -> AsyncIterator[str | ChatResponse]:
            response = self._answer(messages, options, streamed=True)
            for piece in _PIECES.findall(response.text):
                yield piece
            yield response

        return AsyncChatStream(chunks())

    def _answer(
        self, messages: Sequence[ChatMessage], options: dict[str, Any], *, streamed: bool
    ) -> ChatResponse:
        request = ChatRequest(tuple(messages), dict(options), streamed)
        with self._lock:
            self.requests.append(request)
            if self._responder is not None:
                reply: Reply = self._responder
            elif self._next < len(self._replies):
                reply = self._replies[self._next]
                self._next += 1
            else:
                raise ChatModelError(
                    f"ScriptedChatModel script exhausted after {len(self._replies)} replies; "
                    f"unexpected prompt: {request.prompt!r}"
                )
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply):
            reply = reply(list(messages))
        if isinstance(reply, ChatResponse):
            return reply
        if not isinstance(reply, str):
            raise ChatModelError(f"ScriptedChatModel reply must be str, got {reply!r}")
        input_words = sum(len(_WORDS.findall(message.text)) for message in messages)
        usage = TokenUsage(input_words, len(_WORDS.findall(reply)))
        return ChatResponse(reply, usage, FinishReason.STOP)

    def __repr__(self) -> str:
        return f"ScriptedChatModel(requests={len(self.requests)}, remaining={self.remaining})"
