"""A real local HTTP server speaking the OpenAI wire format, for tests of any package.

    from ragloom.chat_models.openai.testing import CHAT_MODEL, WireServer

    with WireServer() as server:  # RAGLOOM_CHAT_BASE_URL=server.url, model CHAT_MODEL
        ...

The OpenAI routes over the testkit's scriptable server (:mod:`ragloom.testkit.wire`, so
this module needs ``ragloom-testkit``): ``POST /v1/chat/completions`` (JSON, or
server-sent events with ``"stream": true``, usage in a last chunk when
``stream_options.include_usage`` is set) and ``POST /v1/embeddings`` (float lists or
base64, ``dimensions``), as documented by OpenAI's API reference, with OpenAI's error
bodies. Answers are deterministic: the chat model answers ``"Echo: <last user or tool
message>"`` (cut to ``max_tokens`` words, then finish reason ``length``), and
embeddings come from the testkit's hashing FakeEmbeddingModel.

Tools follow the chat-completions tools format: offered ``tools`` (unless
``tool_choice`` is ``"none"``) are called when the last message is the user's: the
named ``tool_choice``, else the first tool (every tool for ``"required"`` with
``parallel_tool_calls`` not false), with the user's text as the first required string
argument; finish reason ``tool_calls``. Streamed, a call arrives as OpenAI sends it: a
first delta with its ``index``, ``id``, ``type`` and ``name`` and empty ``arguments``,
then argument fragments. Requests that break the format's rules (a ``tool`` message not
answering a preceding ``tool_calls`` id, a ``tool_calls`` id left unanswered, a
malformed tool or ``tool_choice``) get OpenAI's 400 error.

Failures are scripted per request: ``server.script(behaviour, ...)`` queues behaviours
that the next requests (one each, any endpoint) play instead of the normal answer: the
testkit's (``raw``, ``delay``, ``disconnect``), an OpenAI error ``status``, and the
streaming ones here (a stream that breaks off, stalls or drips, SSE events written
verbatim).
Every request is recorded in ``server.requests``.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ragloom.testkit import wire
from ragloom.testkit.fake_embedding_model import FakeEmbeddingModel
from ragloom.testkit.wire import (
    Answer,
    Behaviour,
    Recorded,
    WireHandler,
    delay,
    disconnect,
    raw,
)

__all__ = [
    "CHAT_MODEL",
    "EMBEDDING_MODEL",
    "WireServer",
    "broken_stream",
    "completion",
    "completion_events",
    "delay",
    "disconnect",
    "dripping_stream",
    "embeddings",
    "events",
    "json_answer",
    "raw",
    "sse",
    "stalled_stream",
    "status",
]

CHAT_MODEL = "echo-1"
EMBEDDING_MODEL = "embed-1"

_PIECES = re.compile(r"\S+\s*|\s+")


def _error(code: int, message: str, kind: str, error_code: str | None) -> Answer:
    return code, {"error": {"message": message, "type": kind, "code": error_code}}


def _unauthorized(request: Recorded) -> Answer:
    shown = request.headers.get("authorization", "").removeprefix("Bearer ") or "(none)"
    return _error(
        401,
        f"Incorrect API key provided: {shown}. You can find your API key at "
        "https://platform.openai.com/account/api-keys.",
        "invalid_request_error",
        "invalid_api_key",
    )


def _not_found(request: Recorded) -> Answer:
    return 404, "404 page not found"


def _model_not_found(model: object) -> Answer:
    return _error(
        404,
        f"The model `{model}` does not exist or you do not have access to it.",
        "invalid_request_error",
        "model_not_found",
    )


class WireServer(wire.WireServer):
    """The OpenAI server; a context manager that starts and stops it."""

    def __init__(self, *, api_key: str | None = None, embedding_dimension: int = 64) -> None:
        super().__init__(
            {"/v1/chat/completions": self._chat, "/v1/embeddings": self._embeddings},
            api_key=api_key,
            unauthorized=_unauthorized,
            not_found=_not_found,
        )
        self.embedding_dimension = embedding_dimension

    @property
    def url(self) -> str:
        """The API root (what a client takes as ``base_url``)."""
        return super().url + "/v1"

    def _chat(self, request: Recorded) -> Answer:
        body = request.body
        if not isinstance(body, dict):
            return _error(400, "We could not parse the JSON body.", "invalid_request", None)
        if body.get("model") != CHAT_MODEL:
            return _model_not_found(body.get("model"))
        problem = _tools_problem(body)
        if problem is not None:
            return _error(400, problem, "invalid_request_error", None)
        if body.get("stream"):
            return lambda handler, request: stream_completion(handler, body)
        return 200, completion(body)

    def _embeddings(self, request: Recorded) -> Answer:
        body = request.body
        if not isinstance(body, dict):
            return _error(400, "We could not parse the JSON body.", "invalid_request", None)
        if body.get("model") != EMBEDDING_MODEL:
            return _model_not_found(body.get("model"))
        return 200, embeddings(body, self.embedding_dimension)


def stream_completion(
    handler: WireHandler,
    body: dict[str, Any],
    *,
    chunked: bool = True,
    cut_after: int | None = None,
    stall_after: int | None = None,
    stall_seconds: float = 0.0,
    drip_seconds: float = 0.0,
) -> None:
    """Stream the answer to ``body`` as SSE, optionally cut or stalled at an event, or
    with a pause of ``drip_seconds`` before every event."""
    handler.start_events(chunked=chunked)
    for index, event in enumerate(completion_events(body)):
        if cut_after is not None and index == cut_after:
            handler.cut()
            return
        if stall_after is not None and index == stall_after:
            handler.wire.stopping.wait(stall_seconds)
        if drip_seconds and handler.wire.stopping.wait(drip_seconds):
            return  # the server is stopping
        handler.write_event(event)
    handler.end_events()


# -- deterministic answers -------------------------------------------------------------


def reply_text(messages: list[dict[str, Any]]) -> str:
    said = [m.get("content") for m in messages if m.get("role") in ("user", "tool")]
    return f"Echo: {said[-1] if said else ''}"


_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _tools_problem(body: dict[str, Any]) -> str | None:
    """OpenAI's 400 message for a request that breaks the tools format, else ``None``."""
    tools = body.get("tools")
    names: list[str] = []
    if tools is not None:
        if not isinstance(tools, list) or not tools:
            return "Invalid 'tools': empty array. Expected an array with minimum length 1."
        for index, tool in enumerate(tools):
            function = tool.get("function") if isinstance(tool, dict) else None
            name = function.get("name") if isinstance(function, dict) else None
            if tool.get("type") != "function" or not isinstance(name, str):
                return f"Missing required parameter: 'tools[{index}].function'."
            if not _TOOL_NAME.fullmatch(name):
                return (
                    f"Invalid 'tools[{index}].function.name': string does not match pattern. "
                    "Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
                )
            names.append(name)
    choice = body.get("tool_choice")
    if choice is not None:
        if not names:
            return (
                "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' "
                "are specified."
            )
        chosen = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
        if choice not in ("auto", "none", "required") and chosen not in names:
            return f"Invalid value for 'tool_choice': {json.dumps(choice)}."
    pending: list[str] = []
    for message in body.get("messages") or []:
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            if message.get("tool_call_id") not in pending:
                return (
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'."
                )
            pending.remove(message["tool_call_id"])
            continue
        if pending:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(pending)}"
            )
        if role == "assistant":
            pending = [call.get("id") for call in message.get("tool_calls") or []]
    return None


def _tool_calls(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The calls the deterministic model makes (see the module documentation)."""
    tools = body.get("tools") or []
    choice = body.get("tool_choice", "auto")
    messages = body.get("messages") or []
    if not tools or choice == "none" or not messages or messages[-1].get("role") != "user":
        return []
    if isinstance(choice, dict):
        chosen = [t for t in tools if t["function"]["name"] == choice["function"]["name"]]
    elif choice == "required" and body.get("parallel_tool_calls") is not False:
        chosen = tools
    else:
        chosen = tools[:1]
    calls = []
    for index, tool in enumerate(chosen):
        parameters = tool["function"].get("parameters") or {}
        properties = parameters.get("properties") or {}
        strings = [
            name
            for name in parameters.get("required") or []
            if (properties.get(name) or {}).get("type") == "string"
        ]
        arguments = {strings[0]: messages[-1].get("content")} if strings else {}
        calls.append(
            {
                "id": f"call_wire{index}",
                "type": "function",
                "function": {"name": tool["function"]["name"], "arguments": json.dumps(arguments)},
            }
        )
    return calls


def _words(text: str) -> int:
    return len(text.split())


def _answer(body: dict[str, Any]) -> tuple[str, str, dict[str, int]]:
    messages = body.get("messages") or []
    text = reply_text(messages)
    finish = "stop"
    limit = body.get("max_tokens") or body.get("max_completion_tokens")
    if isinstance(limit, int) and _words(text) > limit:
        text = "".join(_PIECES.findall(text)[:limit]).rstrip()
        finish = "length"
    prompt = sum(_words(str(m.get("content") or "")) for m in messages)
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": _words(text),
        "total_tokens": prompt + _words(text),
    }
    return text, finish, usage


def completion(body: dict[str, Any]) -> dict[str, Any]:
    text, finish, usage = _answer(body)
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    calls = _tool_calls(body)
    if calls:
        message = {"role": "assistant", "content": None, "refusal": None, "tool_calls": calls}
        finish = "tool_calls"
    return {
        "id": "chatcmpl-wire",
        "object": "chat.completion",
        "created": 1700000000,
        "model": body.get("model"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish,
            }
        ],
        "usage": usage,
    }


def sse(data: Any) -> str:
    payload = data if isinstance(data, str) else json.dumps(data)
    return f"data: {payload}\n\n"


def completion_events(body: dict[str, Any]) -> list[str]:
    """The SSE events of a streamed answer, as OpenAI sends them."""
    text, finish, usage = _answer(body)
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    base = {
        "id": "chatcmpl-wire",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": body.get("model"),
    }

    def chunk(delta: dict[str, Any], reason: str | None) -> dict[str, Any]:
        data = {
            **base,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}],
        }
        if include_usage:
            data["usage"] = None
        return data

    calls = _tool_calls(body)
    if calls:
        events = [sse(chunk({"role": "assistant", "content": None}, None))]
        for index, call in enumerate(calls):
            name, arguments = call["function"]["name"], call["function"]["arguments"]
            opening = {"index": index, "id": call["id"], "type": "function"}
            opening["function"] = {"name": name, "arguments": ""}
            events.append(sse(chunk({"tool_calls": [opening]}, None)))
            for start in range(0, len(arguments), 8):
                fragment = {"index": index, "function": {"arguments": arguments[start : start + 8]}}
                events.append(sse(chunk({"tool_calls": [fragment]}, None)))
        finish = "tool_calls"
    else:
        events = [sse(chunk({"role": "assistant", "content": ""}, None))]
        events += [sse(chunk({"content": piece}, None)) for piece in _PIECES.findall(text)]
    events.append(sse(chunk({}, finish)))
    if include_usage:
        events.append(sse({**base, "choices": [], "usage": usage}))
    events.append(sse("[DONE]"))
    return events


def embeddings(body: dict[str, Any], default_dimension: int) -> dict[str, Any]:
    inputs = body.get("input")
    texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
    dimension = body.get("dimensions") or default_dimension
    result = FakeEmbeddingModel(dimension).embed_all(texts)
    data = []
    for index, embedding in enumerate(result.embeddings):
        if body.get("encoding_format") == "base64":
            vector: Any = base64.b64encode(
                np.asarray(embedding.vector, dtype="<f4").tobytes()
            ).decode()
        else:
            vector = embedding.to_list()
        data.append({"object": "embedding", "index": index, "embedding": vector})
    tokens = sum(_words(t) for t in texts)
    return {
        "object": "list",
        "data": data,
        "model": body.get("model"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


# -- scripted behaviours ---------------------------------------------------------------


def status(code: int, body: Any = None, headers: Mapping[str, str] | None = None) -> Behaviour:
    """Answer with HTTP ``code``; ``body`` JSON (dict) or text (default: an OpenAI error)."""
    if body is None:
        body = {"error": {"message": f"scripted {code}", "type": "server_error"}}
    return wire.status(code, body, headers)


def events(items: Iterable[str], *, chunked: bool = True) -> Behaviour:
    """Answer a stream with these SSE texts written verbatim (no ``[DONE]`` added)."""

    def play(handler: WireHandler, request: Recorded) -> None:
        handler.start_events(chunked=chunked)
        for item in items:
            handler.write_event(item)
        handler.end_events()

    return play


def broken_stream(after: int, *, chunked: bool = True) -> Behaviour:
    """Stream normally but drop the connection before event number ``after``."""

    def play(handler: WireHandler, request: Recorded) -> None:
        if chunked:
            stream_completion(handler, request.body, cut_after=after)
        else:  # close-delimited body: the client sees a clean end of stream
            handler.start_events(chunked=False)
            for item in completion_events(request.body)[:after]:
                handler.write_event(item)

    return play


def stalled_stream(after: int, seconds: float) -> Behaviour:
    """Stream normally but pause ``seconds`` before event number ``after``."""

    def play(handler: WireHandler, request: Recorded) -> None:
        stream_completion(handler, request.body, stall_after=after, stall_seconds=seconds)

    return play


def dripping_stream(seconds: float) -> Behaviour:
    """Stream normally but ``seconds`` apart, one word an event: never a long pause, yet
    the whole answer takes ``seconds`` times its number of words."""

    def play(handler: WireHandler, request: Recorded) -> None:
        stream_completion(handler, request.body, drip_seconds=seconds)

    return play


def json_answer() -> Behaviour:
    """Answer a streamed request with a plain JSON completion (stream ignored)."""

    def play(handler: WireHandler, request: Recorded) -> None:
        handler.send_answer((200, completion(request.body)), request)

    return play
