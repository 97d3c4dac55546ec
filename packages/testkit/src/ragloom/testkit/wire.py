"""A real local JSON-over-HTTP server with scriptable failures, for wire-format tests.

An integration's ``testing`` module describes its API as routes, each a function from
the recorded request to ``(status, json_body)`` or ``(status, json_body, headers)``::

    server = WireServer({"/v2/rerank": rerank}, api_key="secret")
    with server:
        client = MyClient(base_url=server.url)
        server.script(status(429, {"message": "slow down"}, {"Retry-After": "0"}))
        ...

The server listens on 127.0.0.1 (a free port) in a background thread. A request to an
unknown path gets 404; with ``api_key`` set, a request without
``Authorization: Bearer <api_key>`` gets ``unauthorized(request)`` (401 by default).
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


Answer = tuple[int, Any] | tuple[int, Any, Mapping[str, str]]
Route = Callable[[Recorded], Answer]
Behaviour = Callable[["_Handler", Recorded], None]


def _unauthorized(request: Recorded) -> Answer:
    return 401, {"message": "invalid api token"}


class WireServer:
    """The server; a context manager that starts and stops it."""

    def __init__(
        self,
        routes: Mapping[str, Route],
        *,
        api_key: str | None = None,
        unauthorized: Route = _unauthorized,
    ) -> None:
        self.routes = dict(routes)
        self.api_key = api_key
        self.unauthorized = unauthorized
        self.requests: list[Recorded] = []
        self.stopping = threading.Event()
        self._script: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
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
            return 404, {"message": f"no route for {request.path}"}
        return route(request)


class _Handler(BaseHTTPRequestHandler):
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
        request = Recorded("POST", self.path, headers, body)
        self.wire._record(request)
        behaviour = self.wire._next_behaviour()
        if behaviour is not None:
            behaviour(self, request)
        else:
            self.send_answer(self.wire.answer(request))

    def send_answer(self, answer: Answer) -> None:
        code, body = answer[0], answer[1]
        headers = answer[2] if len(answer) == 3 else {}
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

    def cut(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


def status(code: int, body: Any = None, headers: Mapping[str, str] | None = None) -> Behaviour:
    """Answer HTTP ``code`` with JSON ``body`` (a str is sent as text/plain) and headers."""

    def play(handler: _Handler, request: Recorded) -> None:
        payload = {"message": f"scripted {code}"} if body is None else body
        if isinstance(payload, str):
            handler.send_body(code, payload.encode(), "text/plain", headers)
        else:
            handler.send_body(code, json.dumps(payload).encode(), "application/json", headers)

    return play


def raw(body: bytes, content_type: str = "application/json", code: int = 200) -> Behaviour:
    """Answer ``body`` verbatim."""

    def play(handler: _Handler, request: Recorded) -> None:
        handler.send_body(code, body, content_type)

    return play


def delay(seconds: float) -> Behaviour:
    """Answer normally after ``seconds`` (cut short when the server stops)."""

    def play(handler: _Handler, request: Recorded) -> None:
        handler.wire.stopping.wait(seconds)
        handler.send_answer(handler.wire.answer(request))

    return play


def disconnect() -> Behaviour:
    """Close the connection without answering."""

    def play(handler: _Handler, request: Recorded) -> None:
        handler.cut()

    return play


def transform(change: Callable[[Any], Any]) -> Behaviour:
    """Answer the normal JSON body passed through ``change`` (truncate, reorder, corrupt)."""

    def play(handler: _Handler, request: Recorded) -> None:
        answer = handler.wire.answer(request)
        handler.send_answer((answer[0], change(answer[1]), *answer[2:]))

    return play
