"""A real local HTTP server speaking the OpenAI wire format, for tests of any package.

    from ragloom.chat_models.openai.testing import CHAT_MODEL, WireServer

    with WireServer() as server:  # RAGLOOM_CHAT_BASE_URL=server.url, model CHAT_MODEL
        ...

``WireServer`` listens on 127.0.0.1 (a free port) in a background thread and serves
``POST /v1/chat/completions`` (JSON, or server-sent events with ``"stream": true``,
usage in a last chunk when ``stream_options.include_usage`` is set) and
``POST /v1/embeddings`` (float lists or base64, ``dimensions``), as documented by
OpenAI's API reference. Answers are deterministic: the chat model answers
``"Echo: <last user message>"`` (cut to ``max_tokens`` words, then finish reason
``length``), and embeddings come from the testkit's hashing FakeEmbeddingModel (so
the ``/embeddings`` endpoint needs ``ragloom-testkit``; chat needs nothing more).

Failures are scripted per request: ``server.script(behaviour, ...)`` queues behaviours
that the next requests (one each, any endpoint) play instead of the normal answer:
an HTTP status with headers, a raw body, a delay, a dropped connection, a stream that
breaks off or stalls, or SSE events written verbatim. Every request is recorded in
``server.requests``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import numpy as np

CHAT_MODEL = "echo-1"
EMBEDDING_MODEL = "embed-1"

Behaviour = Callable[["WireHandler", "Recorded"], None]

_PIECES = re.compile(r"\S+\s*|\s+")


@dataclass
class Recorded:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any

    @property
    def streamed(self) -> bool:
        return isinstance(self.body, dict) and bool(self.body.get("stream"))


class WireServer:
    """The server; a context manager that starts and stops it."""

    def __init__(self, *, api_key: str | None = None, embedding_dimension: int = 64) -> None:
        self.api_key = api_key
        self.embedding_dimension = embedding_dimension
        self.requests: list[Recorded] = []
        self.stopping = threading.Event()
        self._script: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), WireHandler)
        self._httpd.daemon_threads = True
        self._httpd.wire = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The API root (what a client takes as ``base_url``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> WireServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> WireServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def script(self, *behaviours: Behaviour) -> None:
        """Play ``behaviours`` for the next requests, one per request, in order."""
        with self._lock:
            self._script.extend(behaviours)

    def next_behaviour(self) -> Behaviour | None:
        with self._lock:
            return self._script.popleft() if self._script else None

    def record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    def bodies(self, path_suffix: str = "") -> list[Any]:
        with self._lock:
            return [r.body for r in self.requests if r.path.endswith(path_suffix)]


class WireHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "wire-server/1"

    @property
    def wire(self) -> WireServer:
        return self.server.wire  # type: ignore[attr-defined,no-any-return]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without this, Nagle's algorithm
        # and the client's delayed ACK hold every answer back by ~40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    # -- plumbing ----------------------------------------------------------------------

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        request = Recorded("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        self.wire.record(request)
        behaviour = self.wire.next_behaviour()
        if behaviour is not None:
            behaviour(self, request)
        else:
            self.answer(request)

    def do_GET(self) -> None:
        self.send_text(404, "404 page not found")

    def send_body(
        self,
        status: int,
        body: bytes,
        content_type: str,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def send_json(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
        self.send_body(status, json.dumps(body).encode(), "application/json", headers)

    def send_text(self, status: int, text: str) -> None:
        self.send_body(status, text.encode(), "text/plain; charset=utf-8")

    def send_error_json(self, status: int, message: str, kind: str, code: str | None) -> None:
        self.send_json(status, {"error": {"message": message, "type": kind, "code": code}})

    def start_events(self, *, chunked: bool = True) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self._chunked = chunked

    def write_event(self, text: str) -> None:
        """Write raw SSE text (e.g. ``'data: {...}\\n\\n'``) as one chunk."""
        data = text.encode()
        if self._chunked:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        else:
            self.wfile.write(data)
        self.wfile.flush()

    def end_events(self) -> None:
        if self._chunked:
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def cut(self) -> None:
        """Drop the connection now, mid-answer."""
        self.wfile.flush()
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    # -- the API -----------------------------------------------------------------------

    def answer(self, request: Recorded) -> None:
        """The documented behaviour of the API for ``request``."""
        if self.wire.api_key is not None:
            given = request.headers.get("authorization", "")
            if given != f"Bearer {self.wire.api_key}":
                shown = given.removeprefix("Bearer ") or "(none)"
                self.send_error_json(
                    401,
                    f"Incorrect API key provided: {shown}. You can find your API key at "
                    "https://platform.openai.com/account/api-keys.",
                    "invalid_request_error",
                    "invalid_api_key",
                )
                return
        body = request.body
        if not isinstance(body, dict):
            self.send_error_json(400, "We could not parse the JSON body.", "invalid_request", None)
            return
        if self.path == "/v1/chat/completions":
            if body.get("model") != CHAT_MODEL:
                self.model_not_found(body.get("model"))
            elif body.get("stream"):
                self.stream_completion(body)
            else:
                self.send_json(200, completion(body))
        elif self.path == "/v1/embeddings":
            if body.get("model") != EMBEDDING_MODEL:
                self.model_not_found(body.get("model"))
            else:
                self.send_json(200, embeddings(body, self.wire.embedding_dimension))
        else:
            self.send_text(404, "404 page not found")

    def model_not_found(self, model: object) -> None:
        self.send_error_json(
            404,
            f"The model `{model}` does not exist or you do not have access to it.",
            "invalid_request_error",
            "model_not_found",
        )

    def stream_completion(
        self,
        body: dict[str, Any],
        *,
        chunked: bool = True,
        cut_after: int | None = None,
        stall_after: int | None = None,
        stall_seconds: float = 0.0,
    ) -> None:
        self.start_events(chunked=chunked)
        for index, event in enumerate(completion_events(body)):
            if cut_after is not None and index == cut_after:
                self.cut()
                return
            if stall_after is not None and index == stall_after:
                self.wire.stopping.wait(stall_seconds)
            self.write_event(event)
        self.end_events()


# -- deterministic answers -------------------------------------------------------------


def reply_text(messages: list[dict[str, Any]]) -> str:
    users = [m.get("content") for m in messages if m.get("role") == "user"]
    return f"Echo: {users[-1] if users else ''}"


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
    prompt = sum(_words(str(m.get("content", ""))) for m in messages)
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": _words(text),
        "total_tokens": prompt + _words(text),
    }
    return text, finish, usage


def completion(body: dict[str, Any]) -> dict[str, Any]:
    text, finish, usage = _answer(body)
    return {
        "id": "chatcmpl-wire",
        "object": "chat.completion",
        "created": 1700000000,
        "model": body.get("model"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
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

    events = [sse(chunk({"role": "assistant", "content": ""}, None))]
    events += [sse(chunk({"content": piece}, None)) for piece in _PIECES.findall(text)]
    events.append(sse(chunk({}, finish)))
    if include_usage:
        events.append(sse({**base, "choices": [], "usage": usage}))
    events.append(sse("[DONE]"))
    return events


def embeddings(body: dict[str, Any], default_dimension: int) -> dict[str, Any]:
    from ragloom.testkit.fake_embedding_model import FakeEmbeddingModel

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

    def play(handler: WireHandler, request: Recorded) -> None:
        payload = body
        if payload is None:
            payload = {"error": {"message": f"scripted {code}", "type": "server_error"}}
        if isinstance(payload, str):
            handler.send_body(code, payload.encode(), "text/plain", headers)
        else:
            handler.send_json(code, payload, headers)

    return play


def raw(body: bytes, content_type: str = "application/json", code: int = 200) -> Behaviour:
    """Answer ``body`` verbatim."""

    def play(handler: WireHandler, request: Recorded) -> None:
        handler.send_body(code, body, content_type)

    return play


def delay(seconds: float) -> Behaviour:
    """Answer normally after ``seconds`` (interrupted when the server stops)."""

    def play(handler: WireHandler, request: Recorded) -> None:
        handler.wire.stopping.wait(seconds)
        handler.answer(request)

    return play


def disconnect() -> Behaviour:
    """Close the connection without answering."""

    def play(handler: WireHandler, request: Recorded) -> None:
        handler.cut()

    return play


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
            handler.stream_completion(request.body, cut_after=after)
        else:  # close-delimited body: the client sees a clean end of stream
            handler.start_events(chunked=False)
            for item in completion_events(request.body)[:after]:
                handler.write_event(item)

    return play


def stalled_stream(after: int, seconds: float) -> Behaviour:
    """Stream normally but pause ``seconds`` before event number ``after``."""

    def play(handler: WireHandler, request: Recorded) -> None:
        handler.stream_completion(request.body, stall_after=after, stall_seconds=seconds)

    return play


def json_answer() -> Behaviour:
    """Answer a streamed request with a plain JSON completion (stream ignored)."""

    def play(handler: WireHandler, request: Recorded) -> None:
        handler.send_json(200, completion(request.body))

    return play
