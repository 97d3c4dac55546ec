"""OpenAiChatModel: a ChatModel over the OpenAI chat-completions wire format.

Works with any server that speaks ``POST {base_url}/chat/completions``: OpenAI, vLLM,
Ollama (``http://localhost:11434/v1``), the llama.cpp server, LM Studio, ...
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any

import httpx

from ragloom.chat_models.openai._http import (
    DEFAULT_BASE_URL,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_TIMEOUT,
    ApiClient,
    ApiModel,
    RetryPolicy,
    make_timeout,
    normalize_base_url,
    resolve_api_key,
)
from ragloom.chat_models.openai._sse import ServerSentEvent, SseDecoder
from ragloom.chat_models.openai.errors import OpenAiChatModelError, OpenAiPromptTooLongError
from ragloom.chat_models.openai.tokenizer import OpenAiTokenizer, count_prompt_tokens
from ragloom.core.chat.messages import (
    AiMessage,
    ChatMessage,
    SystemMessage,
    ToolExecutionResultMessage,
    UserMessage,
)
from ragloom.core.chat.model import (
    AsyncChatStream,
    ChatModel,
    ChatResponse,
    ChatStream,
    FinishReason,
)
from ragloom.core.chat.tools import ToolExecutionRequest, ToolSpecification
from ragloom.core.embedding import TokenUsage
from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError
from ragloom.core.kit.http import HttpCallError, HttpErrorKind, HttpReply
from ragloom.core.tokenizer import Tokenizer

__all__ = ["CHAT_API_KEY_ENV", "DEFAULT_CHAT_MODEL_NAME", "OpenAiChatModel"]

CHAT_API_KEY_ENV = ("RAGLOOM_CHAT_API_KEY", "OPENAI_API_KEY")
"""Where the chat model looks for its API key when none is passed, first set one wins."""

DEFAULT_CHAT_MODEL_NAME = "gpt-4o-mini"
"""What :meth:`OpenAiChatModel.from_env` runs on OpenAI's API when no model name is set."""

_PATH = "chat/completions"

#: Options a call (or the constructor, as defaults) may set; sent as is.
_OPTIONS = frozenset(
    {
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "stop",
        "seed",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "response_format",
        "user",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
    }
)
_TOOL_CHOICES = frozenset({"auto", "none", "required"})
_MAX_STREAMED_TOOL_CALLS = 128  # distinct tool-call indexes one streamed answer may open
_RESERVED = frozenset({"model", "messages", "stream", "stream_options", "n"})

_FINISH_REASONS = {
    "stop": FinishReason.STOP,
    "eos": FinishReason.STOP,
    "eos_token": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "end_turn": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "max_tokens": FinishReason.LENGTH,
    "model_length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_EXECUTION,
    "function_call": FinishReason.TOOL_EXECUTION,
    "content_filter": FinishReason.CONTENT_FILTER,
}


class OpenAiChatModel(ApiModel, ChatModel):
    """A chat model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    ``base_url`` is the API root (``https://api.openai.com/v1`` by default; e.g.
    ``http://localhost:8000/v1`` for vLLM). The API key is ``api_key``, else
    ``$RAGLOOM_CHAT_API_KEY``, else ``$OPENAI_API_KEY``; without one no
    ``Authorization`` header is sent (local servers need none; ``api_key=""`` forces
    that). ``temperature``, ``max_tokens``, ``top_p``, ``stop`` and ``seed`` are defaults
    for every call; ``None`` leaves them to the server. ``extra_body`` adds fields to
    every request (e.g. ``{"top_k": 20}`` for vLLM).

    ``timeout`` (120 s) bounds each attempt as a whole (connect, headers and body): a
    server dripping its answer a byte at a time cannot hold a call longer; for a
    streamed answer it bounds the wait for the headers and then each pause between
    chunks of content (SSE keep-alive comments do not extend it). Answers larger than
    ``max_response_bytes`` (100 MiB) raise instead of being read whole. Failed calls
    (HTTP 408, 409, 429, 5xx, refused or dropped connections, timeouts) are retried
    ``max_retries`` times with exponential backoff and jitter, honouring ``Retry-After``; pass a
    :class:`RetryPolicy` for finer control. ``organization`` sets the
    ``OpenAI-Organization`` header; ``headers`` adds any others. ``stream_usage=False``
    stops asking for token usage in streams (``stream_options``), for servers that
    reject it.

    ``context_window`` (the model's context length in tokens) turns on a budget check
    before each call: the prompt (counted by ``tokenizer``, by default
    :meth:`~ragloom.chat_models.openai.tokenizer.OpenAiTokenizer.for_model` of the model
    name, which needs the ``tokenizer`` extra) plus the answer's ``max_tokens`` (or
    ``max_completion_tokens``) must fit, else
    :class:`~ragloom.chat_models.openai.errors.OpenAiPromptTooLongError` names the counts.
    With ``trim_prompt=True`` the oldest messages are dropped instead (system messages and
    the last message are kept; a tool call goes with its results) until it fits.

    A call accepts the options ``temperature``, ``top_p``, ``max_tokens``,
    ``max_completion_tokens``, ``stop``, ``seed``, ``presence_penalty``,
    ``frequency_penalty``, ``logit_bias``, ``response_format``, ``user``, ``tools`` (a
    sequence of :class:`~ragloom.core.chat.tools.ToolSpecification`), ``tool_choice``
    (``"auto"``, ``"none"``, ``"required"`` or the name of one of ``tools``),
    ``parallel_tool_calls`` and ``extra_body`` (a dict merged into the request). The
    model's tool calls come back as the response's ``tool_execution_requests`` (streamed
    tool-call deltas are assembled); :class:`~ragloom.core.chat.messages.AiMessage` s
    with requests and
    :class:`~ragloom.core.chat.messages.ToolExecutionResultMessage` s are sent in the
    tools wire format. Errors are
    :class:`~ragloom.chat_models.openai.errors.OpenAiChatModelError` s (thus
    :class:`~ragloom.core.errors.ChatModelError` s). Safe to share between threads; the
    pooled connections are released by :meth:`close` (or a ``with`` block).
    """

    def __init__(
        self,
        *,
        model_name: str,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        top_p: float | None = None,
        stop: str | Sequence[str] | None = None,
        seed: int | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        max_retries: int | None = None,
        retry_policy: RetryPolicy | None = None,
        organization: str | None = None,
        headers: Mapping[str, str] | None = None,
        stream_usage: bool = True,
        http_client: httpx.Client | None = None,
        async_http_client: httpx.AsyncClient | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        context_window: int | None = None,
        tokenizer: Tokenizer | None = None,
        trim_prompt: bool = False,
    ) -> None:
        if not isinstance(model_name, str) or not model_name.strip():
            raise InvalidArgumentError(f"model_name must be a non-empty str, got {model_name!r}")
        if context_window is not None and (
            isinstance(context_window, bool)
            or not isinstance(context_window, int)
            or context_window < 1
        ):
            raise InvalidArgumentError(
                f"context_window must be a positive int or None, got {context_window!r}"
            )
        if tokenizer is not None and not callable(getattr(tokenizer, "count_tokens", None)):
            raise InvalidArgumentTypeError(
                f"tokenizer must have count_tokens(text), got {type(tokenizer).__name__}"
            )
        if context_window is not None and tokenizer is None:
            tokenizer = OpenAiTokenizer.for_model(model_name)
        self.context_window = context_window
        self.tokenizer = tokenizer
        self.trim_prompt = bool(trim_prompt)
        url = normalize_base_url(base_url)
        key, source = resolve_api_key(api_key, CHAT_API_KEY_ENV)
        policy = retry_policy or RetryPolicy()
        if max_retries is not None:
            policy = RetryPolicy(
                max_retries=max_retries,
                initial_delay=policy.initial_delay,
                max_delay=policy.max_delay,
                jitter=policy.jitter,
                max_retry_after=policy.max_retry_after,
                sleep=policy.sleep,
                async_sleep=policy.async_sleep,
            )
        defaults = {
            "temperature": temperature,
            "max_tokens": max_tokens,
            "top_p": top_p,
            "stop": list(stop) if stop is not None and not isinstance(stop, str) else stop,
            "seed": seed,
        }
        self._defaults: dict[str, Any] = {k: v for k, v in defaults.items() if v is not None}
        self._extra_body = _check_extra_body(extra_body)
        self._stream_usage = bool(stream_usage)
        self._api = ApiClient(
            base_url=url,
            api_key=key,
            key_source=source,
            model_name=model_name,
            subject=f"chat model {model_name!r}",
            error_type=OpenAiChatModelError,
            timeout=make_timeout(timeout),
            retry=policy,
            organization=organization,
            headers=headers,
            http_client=http_client,
            async_http_client=async_http_client,
            max_response_bytes=max_response_bytes,
        )

    @classmethod
    def from_env(cls, **options: Any) -> OpenAiChatModel:
        """The chat model the environment configures (what easy RAG uses).

        Reads ``$RAGLOOM_CHAT_MODEL_NAME``, ``$RAGLOOM_CHAT_BASE_URL`` (else
        ``$OPENAI_BASE_URL``, else OpenAI's API) and the API key from
        ``$RAGLOOM_CHAT_API_KEY`` or ``$OPENAI_API_KEY``. On OpenAI's API with a key, the
        model name defaults to :data:`DEFAULT_CHAT_MODEL_NAME`. Keyword ``options`` go to
        the constructor and win over the environment. Raises
        :class:`~ragloom.chat_models.openai.errors.OpenAiChatModelError` (``kind`` None)
        naming the variables to set when OpenAI's
        API would be used without a key, or another server without a model name.
        """
        model_name = options.pop("model_name", None) or _env("RAGLOOM_CHAT_MODEL_NAME")
        base_url = (
            options.pop("base_url", None)
            or _env("RAGLOOM_CHAT_BASE_URL")
            or _env("OPENAI_BASE_URL")
            or DEFAULT_BASE_URL
        )
        key, _ = resolve_api_key(options.get("api_key"), CHAT_API_KEY_ENV)
        on_openai = normalize_base_url(base_url) == DEFAULT_BASE_URL
        if on_openai and key is None:
            raise OpenAiChatModelError(
                f"chat model {model_name or DEFAULT_CHAT_MODEL_NAME!r} would use OpenAI's API "
                f"({DEFAULT_BASE_URL}) without an API key: set OPENAI_API_KEY (or "
                "RAGLOOM_CHAT_API_KEY), or RAGLOOM_CHAT_BASE_URL and RAGLOOM_CHAT_MODEL_NAME "
                "for a local server",
                url=base_url,
            )
        if not model_name and not on_openai:
            raise OpenAiChatModelError(
                f"no chat model name for {base_url}: set RAGLOOM_CHAT_MODEL_NAME to the model "
                "your server serves (e.g. llama3.2)",
                url=base_url,
            )
        return cls(model_name=model_name or DEFAULT_CHAT_MODEL_NAME, base_url=base_url, **options)

    # -- properties --------------------------------------------------------------------

    @property
    def retry_policy(self) -> RetryPolicy:
        """How failed calls are retried."""
        return self._api.retry

    def __repr__(self) -> str:
        return f"OpenAiChatModel(model_name={self.model_name!r}, base_url={self.base_url!r})"

    # -- ChatModel ---------------------------------------------------------------------

    def chat(self, messages: Sequence[ChatMessage], **options: Any) -> ChatResponse:
        """The complete answer to ``messages`` (see the class docstring for ``options``)."""
        payload = self._payload(messages, options, stream=False)
        body = self._api.post(_PATH, payload)
        return self._completion(body)

    async def achat(self, messages: Sequence[ChatMessage], **options: Any) -> ChatResponse:
        """:meth:`chat` on asyncio (natively, not in a thread)."""
        payload = self._payload(messages, options, stream=False)
        body = await self._api.apost(_PATH, payload)
        return self._completion(body)

    def stream(self, messages: Sequence[ChatMessage], **options: Any) -> ChatStream:
        """The answer as partial texts over server-sent events, then ``.response``.

        Nothing is sent before the first ``next()``. Closing the stream early drops the
        connection (the server stops generating).
        """
        payload = self._payload(messages, options, stream=True)

        def chunks() -> Iterator[str | ChatResponse]:
            with self._api.stream(_PATH, payload) as stream:
                url = stream.reply.url
                if _is_json(stream.reply):  # a server that ignores "stream": true
                    try:
                        whole = dataclasses.replace(stream.reply, body=stream.read())
                    except HttpCallError as exc:
                        raise self._api.call_error(exc, 0) from exc
                    yield from _whole(self._completion(self._api.decode(whole)))
                    return
                state = _StreamState(self._api, url)
                decoder = SseDecoder()
                lines = stream.iter_lines()
                watch = _StallWatch(self._api, url)
                while not state.done:
                    try:
                        line = next(lines, None)
                    except HttpCallError as exc:
                        raise self._api.call_error(exc, state.received) from exc
                    event = decoder.feed(line) if line is not None else decoder.end()
                    if event is not None and (text := state.add(event)) is not None:
                        watch.progress()
                        if text:
                            yield text
                    watch.check(state.received)
                    if line is None:
                        break
                yield state.finish()

        return ChatStream(chunks())

    def astream(self, messages: Sequence[ChatMessage], **options: Any) -> AsyncChatStream:
        """:meth:`stream` for ``async for`` (natively on asyncio)."""
        payload = self._payload(messages, options, stream=True)

        async def chunks() -> AsyncIterator[str | ChatResponse]:
            async with self._api.astream(_PATH, payload) as stream:
                url = stream.reply.url
                if _is_json(stream.reply):
                    try:
                        whole = dataclasses.replace(stream.reply, body=await stream.aread())
                    except HttpCallError as exc:
                        raise self._api.call_error(exc, 0) from exc
                    for item in _whole(self._completion(self._api.decode(whole))):
                        yield item
                    return
                state = _StreamState(self._api, url)
                decoder = SseDecoder()
                lines = stream.aiter_lines()
                watch = _StallWatch(self._api, url)
                while not state.done:
                    try:
                        async with asyncio.timeout(watch.remaining()):
                            line = await anext(lines, None)
                    except TimeoutError as exc:
                        raise self._api.stalled(url, state.received) from exc
                    except HttpCallError as exc:
                        raise self._api.call_error(exc, state.received) from exc
                    event = decoder.feed(line) if line is not None else decoder.end()
                    if event is not None and (text := state.add(event)) is not None:
                        watch.progress()
                        if text:
                            yield text
                    watch.check(state.received)
                    if line is None:
                        break
                yield state.finish()

        return AsyncChatStream(chunks())

    # -- wire format -------------------------------------------------------------------

    def _payload(
        self, messages: Sequence[ChatMessage], options: Mapping[str, Any], *, stream: bool
    ) -> dict[str, Any]:
        unknown = set(options) - _OPTIONS - {"extra_body"}
        if unknown:
            raise InvalidArgumentTypeError(
                f"unknown chat option(s) {', '.join(sorted(unknown))}; accepted: "
                f"{', '.join(sorted(_OPTIONS | {'extra_body'}))}"
            )
        _wire(messages)  # checks the messages before they are counted
        payload: dict[str, Any] = {"model": self.model_name}
        payload.update(self._defaults)
        payload.update((k, v) for k, v in options.items() if k != "extra_body" and v is not None)
        if self.context_window is not None and self.tokenizer is not None:
            messages = self._fit(messages, payload, self.context_window, self.tokenizer)
        payload["messages"] = _wire(messages)
        _wire_tools(payload)
        if isinstance(payload.get("stop"), tuple):
            payload["stop"] = list(payload["stop"])
        payload.update(self._extra_body)
        payload.update(_check_extra_body(options.get("extra_body")))
        if stream:
            payload["stream"] = True
            if self._stream_usage:
                payload["stream_options"] = {"include_usage": True}
        return payload

    def _fit(
        self,
        messages: Sequence[ChatMessage],
        payload: dict[str, Any],
        window: int,
        tokenizer: Tokenizer,
    ) -> list[ChatMessage]:
        """``messages`` within the context ``window`` (trimmed if allowed), else an error."""
        offered = payload.get("tools")
        tools = list(offered) if isinstance(offered, Sequence) else []
        tools = [tool for tool in tools if isinstance(tool, ToolSpecification)]
        reserved = payload.get("max_completion_tokens") or payload.get("max_tokens") or 0
        budget = window - reserved
        kept = list(messages)
        needed = count_prompt_tokens(tokenizer, kept, tools)
        dropped = 0
        while needed > budget and self.trim_prompt:
            group = _oldest_group(kept)
            if not group:
                break
            del kept[group]
            dropped += group.stop - group.start
            needed = count_prompt_tokens(tokenizer, kept, tools)
        if needed > budget:
            trimmed = (
                f" even after dropping {dropped} of {len(messages)} messages (the system "
                "messages and the last message are kept)"
                if self.trim_prompt
                else ""
            )
            raise OpenAiPromptTooLongError(
                f"the prompt to {self.model_name!r} is {needed} tokens{trimmed}; with "
                f"{reserved} reserved for the answer it exceeds the context window of "
                f"{window} tokens (counted with {tokenizer!r})",
                prompt_tokens=needed,
                reserved_tokens=reserved,
                context_window=window,
            )
        return kept

    def _completion(self, body: Any) -> ChatResponse:
        """The ChatResponse in a (non-streamed) chat-completion body."""
        url = self._api.url(_PATH)
        if not isinstance(body, dict):
            raise self._api.error(
                HttpErrorKind.PROTOCOL,
                f"{url} answered with JSON {type(body).__name__}, not a chat completion object",
                url,
            )
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices:
            problem = _embedded_error(body) or "it has no choices"
            raise self._api.error(
                HttpErrorKind.PROTOCOL, f"{url} answered with no chat completion: {problem}", url
            )
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(choice, dict) or not isinstance(message, dict):
            raise self._api.error(
                HttpErrorKind.PROTOCOL,
                f"{url} answered with a choice without a message object: {_short(choice)}",
                url,
            )
        text = _content_text(message.get("content"))
        if text is None:
            text = _content_text(message.get("refusal"))
        if text is None and "content" in message and message["content"] is not None:
            raise self._api.error(
                HttpErrorKind.PROTOCOL,
                f"{url} answered with message content of an unknown shape: "
                f"{_short(message['content'])}",
                url,
            )
        requests = tuple(
            self._tool_request(call, url) for call in _tool_calls(message.get("tool_calls"))
        )
        return ChatResponse(
            text or "",
            _token_usage(body.get("usage")),
            finish_reason(choice.get("finish_reason")),
            requests,
        )

    def _tool_request(self, call: object, url: str) -> ToolExecutionRequest:
        """The request in one wire ``tool_calls`` item; an error for a malformed one."""
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(call, dict) or not isinstance(function, dict):
            raise self._api.error(
                HttpErrorKind.PROTOCOL,
                f"{url} answered with a malformed tool call: {_short(call)}",
                url,
            )
        return _request(
            self._api, url, call.get("id"), function.get("name"), function.get("arguments")
        )


class _StallWatch:
    """Bounds a stream's pauses at ``timeout`` seconds without content (keep-alive
    comments and empty events do not count; the kit's stream bounds the bytes)."""

    __slots__ = ("_api", "_last", "_url")

    def __init__(self, api: ApiClient, url: str) -> None:
        self._api = api
        self._url = url
        self._last = time.monotonic()

    def progress(self) -> None:
        self._last = time.monotonic()

    def remaining(self) -> float:
        return max(self._api.deadline() - (time.monotonic() - self._last), 0.0)

    def check(self, received: int) -> None:
        if time.monotonic() - self._last > self._api.deadline():
            raise self._api.stalled(self._url, received)


class _StreamState:
    """Collects a streamed answer from its events (one per chat-completion chunk)."""

    __slots__ = ("_api", "_calls", "_parts", "_url", "done", "finish_reason", "received", "usage")

    def __init__(self, api: ApiClient, url: str) -> None:
        self._api = api
        self._url = url
        self._parts: list[str] = []
        self._calls: dict[int, _StreamedCall] = {}
        self.done = False
        self.received = 0
        self.finish_reason: FinishReason | None = None
        self.usage: TokenUsage | None = None

    def add(self, event: ServerSentEvent) -> str | None:
        """The partial text ``event`` carries: ``''`` for content without text (a tool-call
        delta), ``None`` for no content; raises for an error event."""
        data = event.data.strip()
        if data == "[DONE]":
            self.done = True
            return None
        if not data:  # an empty keep-alive event
            return None
        try:
            chunk = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise self._api.error(
                HttpErrorKind.PROTOCOL,
                f"the stream from {self._url} sent an event that is not JSON: {_clip(data)!r}",
                self._url,
            ) from exc
        if not isinstance(chunk, dict):
            raise self._api.error(
                HttpErrorKind.PROTOCOL,
                f"the stream from {self._url} sent {type(chunk).__name__} instead of a chunk "
                f"object: {_clip(data)!r}",
                self._url,
            )
        problem = _embedded_error(chunk)
        if problem or event.event == "error":
            raise self._api.error(
                HttpErrorKind.PROTOCOL,
                f"the server reported an error in the stream from {self._url}: "
                f"{problem or _clip(data)}",
                self._url,
            )
        usage = _token_usage(chunk.get("usage"))
        if usage is not None:
            self.usage = usage
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices:
            return None
        choice = choices[0]
        if not isinstance(choice, dict):
            return None
        reason = finish_reason(choice.get("finish_reason"))
        if reason is not None:
            self.finish_reason = reason
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return None
        calls = delta.get("tool_calls")
        if calls is not None:
            self._add_calls(calls)
        text = _content_text(delta.get("content"))
        if not text:
            text = _content_text(delta.get("refusal"))
        if not text:
            return None if calls is None else ""
        self._parts.append(text)
        self.received += 1
        return text

    def _add_calls(self, calls: object) -> None:
        """Assemble tool-call deltas: the first of an index brings its id and name, the
        rest append to its arguments."""
        for position, delta in enumerate(calls if isinstance(calls, list) else [calls]):
            function = delta.get("function") if isinstance(delta, dict) else {}
            index = delta.get("index", position) if isinstance(delta, dict) else None
            if (
                not isinstance(delta, dict)
                or not isinstance(function, dict)
                or isinstance(index, bool)
                or not isinstance(index, int)
                or index < 0
            ):
                raise self._api.error(
                    HttpErrorKind.PROTOCOL,
                    f"the stream from {self._url} sent a malformed tool-call delta: "
                    f"{_short(delta)}",
                    self._url,
                )
            call = self._calls.get(index)
            if call is None:
                if len(self._calls) >= _MAX_STREAMED_TOOL_CALLS:
                    raise self._api.error(
                        HttpErrorKind.PROTOCOL,
                        f"the stream from {self._url} opened more than "
                        f"{_MAX_STREAMED_TOOL_CALLS} tool calls",
                        self._url,
                    )
                call = self._calls[index] = _StreamedCall()
            call.add(delta.get("id"), function.get("name"), function.get("arguments"))

    def finish(self) -> ChatResponse:
        """The complete response; an error when the stream broke off before its end."""
        if not self.done and self.finish_reason is None:
            raise self._api.error(
                HttpErrorKind.CONNECTION,
                f"the stream from {self._url} ended after {self.received} partial texts "
                "without a finish reason or [DONE]; the connection was cut",
                self._url,
            )
        requests = tuple(
            _request(self._api, self._url, call.id, call.name, "".join(call.arguments))
            for _, call in sorted(self._calls.items())
        )
        return ChatResponse("".join(self._parts), self.usage, self.finish_reason, requests)


class _StreamedCall:
    """One tool call being assembled from stream deltas."""

    __slots__ = ("arguments", "id", "name")

    def __init__(self) -> None:
        self.id: object = None
        self.name: object = None
        self.arguments: list[str] = []

    def add(self, id: object, name: object, arguments: object) -> None:
        if id:
            self.id = id
        if name:
            self.name = name
        if isinstance(arguments, str):
            self.arguments.append(arguments)


def finish_reason(value: object) -> FinishReason | None:
    """The ragloom FinishReason of a wire ``finish_reason`` (``None`` stays ``None``).

    ``stop`` (and servers' synonyms ``eos``, ``eos_token``, ``stop_sequence``,
    ``end_turn``) → STOP; ``length``/``max_tokens`` → LENGTH; ``tool_calls`` and
    ``function_call`` → TOOL_EXECUTION; ``content_filter`` → CONTENT_FILTER; anything
    else → OTHER.
    """
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return _FINISH_REASONS.get(value.lower(), FinishReason.OTHER)
    return FinishReason.OTHER


def _wire(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    if isinstance(messages, ChatMessage | str):
        raise InvalidArgumentTypeError(
            "messages must be a sequence of ChatMessage, not a single message"
        )
    wire: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if not isinstance(message, ChatMessage):
            raise InvalidArgumentTypeError(
                f"messages[{index}] is {type(message).__name__}, not a ChatMessage "
                "(SystemMessage, UserMessage or AiMessage)"
            )
        item: dict[str, Any] = {"role": message.role, "content": message.text}
        if isinstance(message, UserMessage) and message.name:
            item["name"] = message.name
        elif isinstance(message, AiMessage) and message.tool_execution_requests:
            item["content"] = message.text or None
            item["tool_calls"] = [
                {
                    "id": request.id,
                    "type": "function",
                    "function": {"name": request.name, "arguments": request.arguments},
                }
                for request in message.tool_execution_requests
            ]
        elif isinstance(message, ToolExecutionResultMessage):
            item["tool_call_id"] = message.id
        wire.append(item)
    if not wire:
        raise InvalidArgumentError("messages is empty; a chat needs at least one message")
    return wire


def _oldest_group(messages: list[ChatMessage]) -> slice | None:
    """The oldest droppable messages: the first after the system messages, with the tool
    results that answer it; ``None`` when only the last message would be left."""
    start = 0
    while start < len(messages) and isinstance(messages[start], SystemMessage):
        start += 1
    stop = start + 1
    while stop < len(messages) and isinstance(messages[stop], ToolExecutionResultMessage):
        stop += 1
    return slice(start, stop) if stop < len(messages) else None


def _wire_tools(payload: dict[str, Any]) -> None:
    """Put the ``tools`` and ``tool_choice`` options in their wire form (in place)."""
    tools = payload.pop("tools", None)
    choice = payload.pop("tool_choice", None)
    names: list[str] = []
    if tools is not None:
        if isinstance(tools, ToolSpecification | str) or not isinstance(tools, Sequence):
            raise InvalidArgumentTypeError(
                f"tools must be a sequence of ToolSpecification, got {type(tools).__name__}"
            )
        for index, tool in enumerate(tools):
            if not isinstance(tool, ToolSpecification):
                raise InvalidArgumentTypeError(
                    f"tools[{index}] is {type(tool).__name__}, not a ToolSpecification"
                )
            names.append(tool.name)
        if tools:
            payload["tools"] = [{"type": "function", "function": t.to_dict()} for t in tools]
    if choice is None:
        return
    if not names:
        raise InvalidArgumentError(f"tool_choice {choice!r} given without tools")
    if choice in _TOOL_CHOICES:
        payload["tool_choice"] = choice
    elif choice in names:
        payload["tool_choice"] = {"type": "function", "function": {"name": choice}}
    else:
        raise InvalidArgumentError(
            f"tool_choice must be auto, none, required or one of the tools "
            f"({', '.join(names)}), got {choice!r}"
        )


def _tool_calls(value: object) -> list[object]:
    """A message's ``tool_calls`` as a list (a non-list is one malformed item)."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _request(
    api: ApiClient, url: str, id: object, name: object, arguments: object
) -> ToolExecutionRequest:
    """A checked ToolExecutionRequest; ``arguments`` sent as an object (some servers do)
    are turned into JSON text."""
    if isinstance(arguments, dict):
        arguments = json.dumps(arguments)
    if arguments is None:
        arguments = ""
    if not (isinstance(id, str) and id and isinstance(name, str) and name):
        raise api.error(
            HttpErrorKind.PROTOCOL,
            f"{url} answered with a tool call without an id or name: id={_short(id)}, "
            f"name={_short(name)}",
            url,
        )
    if not isinstance(arguments, str):
        raise api.error(
            HttpErrorKind.PROTOCOL,
            f"{url} answered with tool call {name!r} whose arguments are "
            f"{type(arguments).__name__}, not a JSON string",
            url,
        )
    return ToolExecutionRequest(id, name, arguments)


def _check_extra_body(extra: Mapping[str, Any] | None) -> dict[str, Any]:
    if extra is None:
        return {}
    if not isinstance(extra, Mapping):
        raise InvalidArgumentTypeError(f"extra_body must be a mapping, got {type(extra).__name__}")
    reserved = _RESERVED & set(extra)
    if reserved:
        raise InvalidArgumentError(
            f"extra_body may not set {', '.join(sorted(reserved))}: the model sets them"
        )
    return dict(extra)


def _content_text(content: object) -> str | None:
    """Message content as text: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        ]
        return "".join(texts) if texts or not content else None
    return None


def _token_usage(usage: object) -> TokenUsage | None:
    if not isinstance(usage, dict):
        return None
    counts = [
        _count(usage.get(name)) for name in ("prompt_tokens", "completion_tokens", "total_tokens")
    ]
    if all(count is None for count in counts):
        return None
    return TokenUsage(*counts)


def _count(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and value >= 0 else None


def _embedded_error(body: dict[str, Any]) -> str | None:
    error = body.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        return str(message) if message else _short(error)
    if isinstance(error, str) and error:
        return error
    return None


def _whole(response: ChatResponse) -> Iterator[str | ChatResponse]:
    if response.text:
        yield response.text
    yield response


def _is_json(reply: HttpReply) -> bool:
    content_type: str = reply.headers.get("content-type", "")
    return content_type.split(";")[0].strip().lower() == "application/json"


def _short(value: object) -> str:
    return _clip(repr(value))


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None
