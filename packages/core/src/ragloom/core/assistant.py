"""RagAssistant: the AI service of the spec, a chat model answering from retrieved content.

One call does a whole RAG turn: remember the conversation (per memory id), retrieve and
inject relevant content, ask the model, and return the answer with its sources::

    assistant = RagAssistant(
        chat_model,
        content_retriever=EmbeddingStoreContentRetriever(store, embedding_model),
        chat_memory_provider=lambda memory_id: MessageWindowChatMemory(id=memory_id),
        system_prompt="Answer from the documents only.",
    )
    result = assistant.chat("How do I cancel a booking?", memory_id="user-42")
    result.content, result.sources

    for token in assistant.stream("And get a refund?", memory_id="user-42",
                                  on_retrieved=show_sources):
        print(token, end="")

With ``retriever_tools`` instead, the model gets the retrievers as tools and decides when
and what to retrieve (:mod:`ragloom.core.retriever_tools`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from ragloom.core.chat.memory import DEFAULT_MEMORY_ID, ChatMemory, ChatMemoryProvider
from ragloom.core.chat.messages import AiMessage, ChatMessage, SystemMessage, UserMessage
from ragloom.core.chat.model import ChatModel, ChatResponse, FinishReason
from ragloom.core.content import Content
from ragloom.core.embedding import TokenUsage
from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError, RagloomError
from ragloom.core.query import QueryMetadata
from ragloom.core.retrieval_augmentor import (
    AugmentationResult,
    DefaultRetrievalAugmentor,
    RetrievalAugmentor,
)
from ragloom.core.retriever_tools import RetrieverTool, ToolLoop
from ragloom.core.retrievers.base import ContentRetriever

__all__ = [
    "Result",
    "OnRetrieved",
    "OnPartialResponse",
    "OnComplete",
    "OnError",
    "RagAssistant",
    "TokenStream",
    "AsyncTokenStream",
]


@dataclass(frozen=True, slots=True)
class Result:
    """An answer with the sources it was given (the spec's ``Result<String>``).

    ``token_usage`` and ``finish_reason`` are those of the final model call.
    """

    content: str
    sources: list[Content]
    token_usage: TokenUsage | None = None
    finish_reason: FinishReason | None = None


OnRetrieved = Callable[[list[Content]], object]
OnPartialResponse = Callable[[str], object]
OnComplete = Callable[[Result], object]
OnError = Callable[[Exception], object]

# What a turn's event generator yields: the sources, then partial texts, then the result.
_Event = list[Content] | str | Result


@dataclass(frozen=True, slots=True)
class _Turn:
    """One exchange in progress: its memory, the user's message and the retrieval metadata."""

    memory: ChatMemory | None
    user_message: UserMessage
    metadata: QueryMetadata
    history: list[ChatMessage]

    def messages(self, augmented: UserMessage) -> list[ChatMessage]:
        """What the model is sent: the remembered conversation, then the augmented message."""
        return [*self.history, augmented]


class RagAssistant:
    """A chat model that answers from retrieved content and remembers conversations.

    Give one of ``content_retriever`` (naive RAG, through a
    :class:`DefaultRetrievalAugmentor`), ``retrieval_augmentor`` (advanced RAG) or
    ``retriever_tools`` (:class:`~ragloom.core.retriever_tools.RetrieverTool` s: the model
    calls them when it needs to, at most ``max_tool_rounds`` rounds of at most
    ``max_tool_calls_per_round`` calls; the sources are the contents the tools returned,
    numbered as the model saw them, so its ``[n]`` citations index ``sources``). For
    memory give either one ``chat_memory`` (a single conversation) or a
    ``chat_memory_provider`` building the memory of each memory id (separate
    conversations, e.g. per user); without either, every call stands alone.

    The memory keeps the user's own message and the answer, not the retrieved content:
    each turn retrieves afresh, and the window is not filled with old context.
    ``system_prompt``, if given, is sent first on every call (and kept in the memory).

    The memory id is passed to retrieval as ``query.metadata.chat_memory_id``, so a
    retriever's dynamic filter can restrict each user to their own documents. Calls for
    one memory id are meant to be sequential; different ids may run concurrently.

    When streaming with tools, ``on_retrieved`` is called after each round of tool calls
    with that round's new contents, and any text the model writes before a tool call is
    streamed too (the :class:`Result` holds the final answer's text only).
    """

    def __init__(
        self,
        chat_model: ChatModel,
        *,
        content_retriever: ContentRetriever | None = None,
        retrieval_augmentor: RetrievalAugmentor | None = None,
        chat_memory: ChatMemory | None = None,
        chat_memory_provider: ChatMemoryProvider | None = None,
        system_prompt: str | None = None,
        retriever_tools: Sequence[RetrieverTool] | None = None,
        max_tool_rounds: int = 3,
        max_tool_calls_per_round: int = 4,
    ) -> None:
        if not callable(getattr(chat_model, "chat", None)):
            raise InvalidArgumentTypeError(
                f"chat_model must be a ChatModel, got {type(chat_model).__name__}"
            )
        if chat_memory is not None and chat_memory_provider is not None:
            raise InvalidArgumentError(
                "give RagAssistant chat_memory or chat_memory_provider, not both"
            )
        if system_prompt is not None and (
            not isinstance(system_prompt, str) or not system_prompt.strip()
        ):
            raise InvalidArgumentError(
                f"system_prompt must be a non-blank str or None: {system_prompt!r}"
            )
        given = [content_retriever, retrieval_augmentor, retriever_tools]
        if sum(option is not None for option in given) != 1:
            raise InvalidArgumentError(
                "give RagAssistant exactly one of content_retriever, retrieval_augmentor and "
                "retriever_tools"
            )
        self.retriever_tools = _check_tools(retriever_tools)
        for label, bound in (
            ("max_tool_rounds", max_tool_rounds),
            ("max_tool_calls_per_round", max_tool_calls_per_round),
        ):
            if isinstance(bound, bool) or not isinstance(bound, int) or bound < 1:
                raise InvalidArgumentError(f"{label} must be a positive int, got {bound!r}")
        self.max_tool_rounds = max_tool_rounds
        self.max_tool_calls_per_round = max_tool_calls_per_round
        self._owned_augmentor: DefaultRetrievalAugmentor | None = None
        if retrieval_augmentor is None and content_retriever is not None:
            retrieval_augmentor = self._owned_augmentor = DefaultRetrievalAugmentor(
                content_retriever=content_retriever
            )
        self.chat_model = chat_model
        self.retrieval_augmentor: RetrievalAugmentor | None = retrieval_augmentor
        self.system_prompt = system_prompt
        self._chat_memory = chat_memory
        self._chat_memory_provider = chat_memory_provider
        self._memories: dict[Hashable, ChatMemory] = {}
        self._memories_lock = threading.Lock()

    # --- memory ---------------------------------------------------------------------------

    def chat_memory(self, memory_id: Hashable = None) -> ChatMemory | None:
        """The memory of ``memory_id`` (built on first use by the provider), or ``None``."""
        if self._chat_memory_provider is not None:
            key = DEFAULT_MEMORY_ID if memory_id is None else memory_id
            if not isinstance(key, Hashable):
                raise InvalidArgumentTypeError(f"memory_id must be hashable, got {memory_id!r}")
            with self._memories_lock:
                memory = self._memories.get(key)
                if memory is None:
                    memory = self._memories[key] = self._chat_memory_provider(key)
            return memory
        if (
            memory_id is not None
            and self._chat_memory is not None
            and memory_id != self._chat_memory.id
        ):
            raise InvalidArgumentError(
                f"memory_id {memory_id!r} given, but this assistant has a single chat_memory "
                "shared by every caller; give it a chat_memory_provider to keep ids apart"
            )
        return self._chat_memory

    def evict_chat_memory(self, memory_id: Hashable = None) -> None:
        """Forget the conversation of ``memory_id`` (clears its memory, drops it)."""
        memory = self.chat_memory(memory_id)
        if memory is not None:
            memory.clear()
        if self._chat_memory_provider is not None:
            with self._memories_lock:
                self._memories.pop(DEFAULT_MEMORY_ID if memory_id is None else memory_id, None)

    def _begin(self, message: str | UserMessage, memory_id: Hashable) -> _Turn:
        user_message = UserMessage(message) if isinstance(message, str) else message
        if not isinstance(user_message, UserMessage):
            raise InvalidArgumentTypeError(
                f"message must be a str or UserMessage, got {type(message).__name__}"
            )
        if not user_message.text.strip():
            raise InvalidArgumentError("message must not be blank")
        memory = self.chat_memory(memory_id)
        system = None if self.system_prompt is None else SystemMessage(self.system_prompt)
        if memory is None:
            previous: list[ChatMessage] = []
            history: list[ChatMessage] = [] if system is None else [system]
        else:
            if system is not None:
                memory.add(system)
            previous = history = memory.messages()
        conversation = memory_id if memory_id is not None or memory is None else memory.id
        metadata = QueryMetadata(user_message, conversation, tuple(previous))
        return _Turn(memory, user_message, metadata, history)

    @staticmethod
    def _end(turn: _Turn, sources: Sequence[Content], response: ChatResponse) -> Result:
        if turn.memory is not None:
            turn.memory.add(turn.user_message)
            turn.memory.add(AiMessage(response.text))  # tool calls stay out of the memory
        return Result(response.text, list(sources), response.token_usage, response.finish_reason)

    def _augment(self, turn: _Turn) -> AugmentationResult:
        assert self.retrieval_augmentor is not None  # no tools: the constructor saw to it
        return self.retrieval_augmentor.augment(turn.user_message, turn.metadata)

    def _tool_loop(self, turn: _Turn) -> ToolLoop:
        return ToolLoop(
            self.retriever_tools,
            turn.messages(turn.user_message),
            turn.metadata,
            max_rounds=self.max_tool_rounds,
            max_calls_per_round=self.max_tool_calls_per_round,
        )

    # --- sync -----------------------------------------------------------------------------

    def chat(self, message: str | UserMessage, memory_id: Hashable = None) -> Result:
        """Answer ``message`` in the conversation ``memory_id``, with the sources used."""
        turn = self._begin(message, memory_id)
        if self.retriever_tools:
            loop = self._tool_loop(turn)
            while True:
                response = self.chat_model.chat(loop.messages, **loop.options())
                if loop.after(response) is None:
                    return self._end(turn, loop.sources, response)
        augmentation = self._augment(turn)
        response = self.chat_model.chat(turn.messages(augmentation.chat_message))
        return self._end(turn, augmentation.contents, response)

    def stream(
        self,
        message: str | UserMessage,
        memory_id: Hashable = None,
        *,
        on_retrieved: OnRetrieved | None = None,
        on_partial_response: OnPartialResponse | None = None,
        on_complete: OnComplete | None = None,
        on_error: OnError | None = None,
    ) -> TokenStream:
        """A lazy :class:`TokenStream` of the answer; nothing runs until it is consumed."""
        return TokenStream(
            self._events(message, memory_id),
            on_retrieved=on_retrieved,
            on_partial_response=on_partial_response,
            on_complete=on_complete,
            on_error=on_error,
        )

    def _events(self, message: str | UserMessage, memory_id: Hashable) -> Iterator[_Event]:
        turn = self._begin(message, memory_id)
        if self.retriever_tools:
            loop = self._tool_loop(turn)
            while True:
                with self.chat_model.stream(loop.messages, **loop.options()) as stream:
                    yield from stream
                    response = stream.response
                found = loop.after(response)
                if found is None:
                    yield self._end(turn, loop.sources, response)
                    return
                yield found
        augmentation = self._augment(turn)
        yield list(augmentation.contents)
        with self.chat_model.stream(turn.messages(augmentation.chat_message)) as stream:
            yield from stream
            response = stream.response
        yield self._end(turn, augmentation.contents, response)

    # --- async ----------------------------------------------------------------------------

    async def achat(self, message: str | UserMessage, memory_id: Hashable = None) -> Result:
        """:meth:`chat` for asyncio; memory and sync-only components run in worker threads."""
        turn = await asyncio.to_thread(self._begin, message, memory_id)
        if self.retriever_tools:
            loop = self._tool_loop(turn)
            while True:
                response = await self.chat_model.achat(loop.messages, **loop.options())
                if await asyncio.to_thread(loop.after, response) is None:
                    return await asyncio.to_thread(self._end, turn, loop.sources, response)
        augmentation = await self._aaugment(turn)
        response = await self.chat_model.achat(turn.messages(augmentation.chat_message))
        return await asyncio.to_thread(self._end, turn, augmentation.contents, response)

    def astream(
        self,
        message: str | UserMessage,
        memory_id: Hashable = None,
        *,
        on_retrieved: OnRetrieved | None = None,
        on_partial_response: OnPartialResponse | None = None,
        on_complete: OnComplete | None = None,
        on_error: OnError | None = None,
    ) -> AsyncTokenStream:
        """:meth:`stream` for ``async for``."""
        return AsyncTokenStream(
            self._aevents(message, memory_id),
            on_retrieved=on_retrieved,
            on_partial_response=on_partial_response,
            on_complete=on_complete,
            on_error=on_error,
        )

    async def _aevents(
        self, message: str | UserMessage, memory_id: Hashable
    ) -> AsyncIterator[_Event]:
        turn = await asyncio.to_thread(self._begin, message, memory_id)
        if self.retriever_tools:
            loop = self._tool_loop(turn)
            while True:
                async with self.chat_model.astream(loop.messages, **loop.options()) as stream:
                    async for text in stream:
                        yield text
                    response = stream.response
                found = await asyncio.to_thread(loop.after, response)
                if found is None:
                    yield await asyncio.to_thread(self._end, turn, loop.sources, response)
                    return
                yield found
        augmentation = await self._aaugment(turn)
        yield list(augmentation.contents)
        async with self.chat_model.astream(turn.messages(augmentation.chat_message)) as stream:
            async for text in stream:
                yield text
            response = stream.response
        yield await asyncio.to_thread(self._end, turn, augmentation.contents, response)

    async def _aaugment(self, turn: _Turn) -> AugmentationResult:
        native = getattr(self.retrieval_augmentor, "aaugment", None)
        if native is not None:
            result: AugmentationResult = await native(turn.user_message, turn.metadata)
            return result
        return await asyncio.to_thread(self._augment, turn)

    # --- resources ------------------------------------------------------------------------

    def close(self) -> None:
        """Release the retrieval thread pool, if this assistant created the augmentor."""
        if self._owned_augmentor is not None:
            self._owned_augmentor.close()

    def __enter__(self) -> RagAssistant:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _check_tools(tools: Sequence[RetrieverTool] | None) -> tuple[RetrieverTool, ...]:
    """``tools`` as a tuple of RetrieverTools with distinct names (empty for ``None``)."""
    if tools is None:
        return ()
    checked = tuple(tools)
    if not checked:
        raise InvalidArgumentError("retriever_tools is empty; give at least one RetrieverTool")
    names: set[str] = set()
    for index, tool in enumerate(checked):
        if not isinstance(tool, RetrieverTool):
            raise InvalidArgumentTypeError(
                f"retriever_tools[{index}] is {type(tool).__name__}, not a RetrieverTool"
            )
        if tool.name in names:
            raise InvalidArgumentError(f"retriever_tools has two tools named {tool.name!r}")
        names.add(tool.name)
    return checked


class _Callbacks:
    """Dispatches a turn's events to the stream callbacks (shared by both token streams)."""

    __slots__ = (
        "_error",
        "_finished",
        "_result",
        "on_complete",
        "on_error",
        "on_partial_response",
        "on_retrieved",
    )

    def __init__(
        self,
        on_retrieved: OnRetrieved | None,
        on_partial_response: OnPartialResponse | None,
        on_complete: OnComplete | None,
        on_error: OnError | None,
    ) -> None:
        self.on_retrieved = on_retrieved
        self.on_partial_response = on_partial_response
        self.on_complete = on_complete
        self.on_error = on_error
        self._result: Result | None = None
        self._error: Exception | None = None
        self._finished = False

    def _dispatch(self, event: _Event) -> str | None:
        """The partial text in ``event``, after calling its callback; ``None`` otherwise."""
        if isinstance(event, Result):
            self._result = event
            if self.on_complete is not None:
                self.on_complete(event)
            return None
        if isinstance(event, list):
            if self.on_retrieved is not None:
                self.on_retrieved(event)
            return None
        if self.on_partial_response is not None:
            self.on_partial_response(event)
        return event

    def _handled(self, error: Exception) -> bool:
        """Whether ``on_error`` took ``error`` (otherwise the caller re-raises it)."""
        self._error = error
        if self.on_error is None:
            return False
        self.on_error(error)
        return True

    @property
    def result(self) -> Result:
        """The :class:`Result`, once the stream has completed."""
        if self._result is None:
            if self._error is not None:
                raise RagloomError(f"the token stream failed: {self._error!r}") from self._error
            raise RagloomError("the token stream has not completed; consume it first")
        return self._result


class TokenStream(_Callbacks, Iterator[str]):
    """The answer of :meth:`RagAssistant.stream`, as partial texts (the spec's ``TokenStream``).

    Iterate it for the partial texts, or call :meth:`start` to run it through the
    callbacks only. Either way ``on_retrieved(sources)`` comes first (before any text),
    then ``on_partial_response(text)`` for each text, then ``on_complete(result)``;
    :attr:`result` holds the :class:`Result` afterwards. An error (including one raised
    by a callback) goes to ``on_error`` and ends the stream; without ``on_error`` it is
    raised. :meth:`close` (or leaving a ``with`` block) abandons the answer and closes
    the model's stream.
    """

    __slots__ = ("_events",)

    def __init__(
        self,
        events: Iterator[_Event],
        *,
        on_retrieved: OnRetrieved | None = None,
        on_partial_response: OnPartialResponse | None = None,
        on_complete: OnComplete | None = None,
        on_error: OnError | None = None,
    ) -> None:
        super().__init__(on_retrieved, on_partial_response, on_complete, on_error)
        self._events = events

    def __iter__(self) -> TokenStream:
        return self

    def __next__(self) -> str:
        if self._finished:
            raise StopIteration
        try:
            while True:
                text = self._dispatch(next(self._events))
                if text is not None:
                    return text
        except StopIteration:
            self._finished = True
            raise
        except Exception as error:
            self.close()
            if self._handled(error):
                raise StopIteration from None
            raise

    def start(self) -> None:
        """Run the stream to its end on this thread, through the callbacks."""
        for _ in self:
            pass

    def close(self) -> None:
        """Stop the stream (and the model's stream) without waiting for the rest."""
        self._finished = True
        close: Callable[[], Any] | None = getattr(self._events, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> TokenStream:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class AsyncTokenStream(_Callbacks, AsyncIterator[str]):
    """:class:`TokenStream` for ``async for``; :meth:`start` and :meth:`aclose` are awaited."""

    __slots__ = ("_events",)

    def __init__(
        self,
        events: AsyncIterator[_Event],
        *,
        on_retrieved: OnRetrieved | None = None,
        on_partial_response: OnPartialResponse | None = None,
        on_complete: OnComplete | None = None,
        on_error: OnError | None = None,
    ) -> None:
        super().__init__(on_retrieved, on_partial_response, on_complete, on_error)
        self._events = events

    def __aiter__(self) -> AsyncTokenStream:
        return self

    async def __anext__(self) -> str:
        if self._finished:
            raise StopAsyncIteration
        try:
            while True:
                text = self._dispatch(await anext(self._events))
                if text is not None:
                    return text
        except StopAsyncIteration:
            self._finished = True
            raise
        except Exception as error:
            await self.aclose()
            if self._handled(error):
                raise StopAsyncIteration from None
            raise

    async def start(self) -> None:
        """Run the stream to its end, through the callbacks."""
        async for _ in self:
            pass

    async def aclose(self) -> None:
        """Stop the stream (and the model's stream) without waiting for the rest."""
        self._finished = True
        aclose: Callable[[], Any] | None = getattr(self._events, "aclose", None)
        if aclose is not None:
            await aclose()

    async def __aenter__(self) -> AsyncTokenStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
