"""A real local JSON-over-HTTP server with scriptable failures, for wire-format tests.

An integration's ``testing`` module describes its API as routes, each a function from
the recorded request to ``(status, json_body)`` or ``(status, json_body, headers)``, or
to a :data:`Behaviour` that writes the answer itself (a stream of server-sent events
through :meth:`WireHandler.start_events`)::

    server = WireServer({"/v2/rerank": rerank}, api_key="secret")
    with server:
        client = MyClient(base_url=server.url)
        server.script(status(429, {"message": "slow down"}, {"Retry-After": "0"}))
        ...

The server listens on 127.0.0.1 (a free port) in a background thread. A request to an
unknown path gets ``not_found(request)`` (404 by default); with ``api_key`` set, a
request without ``Authorization: Bearer <api_key>`` gets ``unauthorized(request)`` (401
by default).
``script(...)`` queues behaviours that the next requests play instead of the normal
answer, one each: an HTTP status with a body and headers, a raw body, a delay, a
dropped connection, or the normal answer transformed (truncated, reordered). Every
request is recorded in ``requests``.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = [
    "Behaviour",
    "Recorded",
    "Route",
    "WireHandler",
    "WireServer",
    "delay",
    "disconnect",
    "raw",
    "status",
    "transform",
]


@dataclass(frozen=True)
class Recorded:
    """One request the server received (header names lowercased; body parsed JSON)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


Behaviour = Callable[["WireHandler", Recorded], None]
Answer = tuple[int, Any] | tuple[int, Any, Mapping[str, str]] | Behaviour
Route = Callable[[Recorded], Answer]


def _unauthorized(request: Recorded) -> Answer:
    return 401, {"message": "invalid api token"}


def _not_found(request: Recorded) -> Answer:
    return 404, {"message": f"no route for {request.path}"}


class WireServer:
    """The server; a context manager that starts and stops it."""

    def __init__(
        self,
        routes: Mapping[str, Route],
        *,
        api_key: str | None = None,
        unauthorized: Route = _unauthorized,
        not_found: Route = _not_found,
    ) -> None:
        self.routes = dict(routes)
        self.api_key = api_key
        self.unauthorized = unauthorized
        self.not_found = not_found
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
    def url(self) -> str:
        """``http://127.0.0.1:<port>``, without a trailing slash."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

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

    def _next_behaviour(self) -> Behaviour | None:
        with self._lock:
            return self._script.popleft() if self._script else None

    def _record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    def bodies(self, path: str | None = None) -> list[Any]:
        """The JSON bodies received (at ``path`` only, when given), in order."""
        with self._lock:
            return [r.body for r in self.requests if path is None or r.path == path]

    def answer(self, request: Recorded) -> Answer:
        """The normal (documented) answer to ``request``."""
        given = request.headers.get("authorization")
        if self.api_key is not None and given != f"Bearer {self.api_key}":
            return self.unauthorized(request)
        route = self.routes.get(request.path)
        if route is None:
            return self.not_found(request)
        return route(request)


class WireHandler(BaseHTTPRequestHandler):
    """Serves one connection; behaviours and streaming routes write through it."""

    protocol_version = "HTTP/1.1"
    server_version = "ragloom-wire/1"

    @property
    def wire(self) -> WireServer:
        return self.server.wire  # type: ignore[attr-defined,no-any-return]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        # Without this, Nagle's algorithm and delayed ACKs hold each answer back ~40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(data) if data else None
        except json.JSONDecodeError:
            body = data.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in self.headers.items()}
        self._serve(Recorded("POST", self.path, headers, body))

    def do_GET(self) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        self._serve(Recorded("GET", self.path, headers, None))

    def _serve(self, request: Recorded) -> None:
        self.wire._record(request)
        behaviour = self.wire._next_behaviour()
        if behaviour is not None:
            behaviour(self, request)
        else:
            self.send_answer(self.wire.answer(request), request)

    def send_answer(self, answer: Answer, request: Recorded) -> None:
        """Write ``answer``: a JSON body with its status (and headers), or play it."""
        if callable(answer):
            answer(self, request)
            return
        code, body = answer[0], answer[1]
        headers = answer[2] if len(answer) == 3 else {}
        if isinstance(body, str):
            self.send_body(code, body.encode(), "text/plain; charset=utf-8", headers)
        else:
            self.send_body(code, json.dumps(body).encode(), "application/json", headers)

    def send_body(
        self, code: int, body: bytes, content_type: str, headers: Mapping[str, str] | None = None
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def start_events(self, *, chunked: bool = True) -> None:
        """Begin a ``text/event-stream`` answer (chunked, or delimited by closing)."""
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


def status(code: int, body: Any = None, headers: Mapping[str, str] | None = None) -> Behaviour:
    """Answer HTTP ``code`` with JSON ``body`` (a str is sent as text/plain) and headers."""

    def play(handler: WireHandler, request: Recorded) -> None:
        payload = {"message": f"scripted {code}"} if body is None else body
        handler.send_answer((code, payload, headers or {}), request)

    return play


def raw(body: bytes, content_type: str = "application/json", code: int = 200) -> Behaviour:
    """Answer ``body`` verbatim."""

    def play(handler: WireHandler, request: Recorded) -> None:
        handler.send_body(code, body, content_type)

    return play


def delay(seconds: float) -> Behaviour:
    """Answer normally after ``seconds`` (cut short when the server stops)."""

    def play(handler: WireHandler, request: Recorded) -> None:
        handler.wire.stopping.wait(seconds)
        handler.send_answer(handler.wire.answer(request), request)

    return play


def disconnect() -> Behaviour:
    """Close the connection without answering."""

    def play(handler: WireHandler, request: Recorded) -> None:
        handler.cut()

    return play


def transform(change: Callable[[Any], Any]) -> Behaviour:
    """Answer the normal JSON body passed through ``change`` (truncate, reorder, corrupt)."""

    def play(handler: WireHandler, request: Recorded) -> None:
        answer = handler.wire.answer(request)
        if callable(answer):
            raise TypeError(f"transform() needs a JSON answer; {request.path} streams")
        handler.send_answer((answer[0], change(answer[1]), *answer[2:]), request)

    return play
