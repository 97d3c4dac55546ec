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

The server listens on 127.0.0.1 (a free port) in a background thread and takes GET,
POST, PUT, PATCH and DELETE. A route's key is a path (without the query string, which
the request carries parsed in ``query``) or, starting with ``^``, a regular expression
the whole path must match (tried in order, after the exact paths). A request to an
unknown path gets ``not_found(request)`` (404 by default); with ``api_key`` set, a
request without ``Authorization: Bearer <api_key>`` (or, with ``api_key_header``, that
header holding the bare key, as ``api-key: <key>``) gets ``unauthorized(request)`` (401
by default).

An answer's body is JSON, a ``str`` (text/plain), ``bytes`` (sent verbatim,
application/octet-stream) or, for a 204 or 304, None (no body); a ``Content-Type``
among its headers replaces the default one. :func:`slowly` sends an answer's body a few
bytes at a time (a server or proxy dribbling it).
``script(...)`` queues behaviours that the next requests play instead of the normal
answer, one each: an HTTP status with a body and headers, a raw body, a delay, a
dropped connection, or the normal answer transformed (truncated, reordered). Every
request is recorded in ``requests``.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import sys
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import parse_qs, parse_qsl

__all__ = [
    "Answer",
    "Behaviour",
    "Recorded",
    "Route",
    "WireHandler",
    "WireFake",
    "WireServer",
    "delay",
    "disconnect",
    "late",
    "raw",
    "slowly",
    "status",
    "transform",
]


@dataclass(frozen=True)
class Recorded:
    """One request the server received: the path without its query string, the query
    parsed (``name -> values``), header names lowercased, the body parsed JSON (a ``str``
    when it is not JSON, None when empty)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    query: dict[str, list[str]] = field(default_factory=dict)

    @property
    def params(self) -> dict[str, str]:
        """The query parameters (the last value of a repeated one wins), with the fields
        of a form-encoded body."""
        params = {name: values[-1] for name, values in self.query.items()}
        form = "application/x-www-form-urlencoded"
        if isinstance(self.body, str) and self.headers.get("content-type", "").startswith(form):
            params.update(parse_qsl(self.body, keep_blank_values=True))
        return params


Behaviour = Callable[["WireHandler", Recorded], None]
Answer = tuple[int, Any] | tuple[int, Any, Mapping[str, str]] | Behaviour
Route = Callable[[Recorded], Answer]


def _unauthorized(request: Recorded) -> Answer:
    return 401, {"message": "invalid api token"}


def _not_found(request: Recorded) -> Answer:
    return 404, {"message": f"no route for {request.path}"}


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet when a client hung up first (a test that timed out on a late answer)."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Started:
    """A context manager that starts (``start`` returns self) and stops its server."""

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


class WireServer(_Started):
    """The server; a context manager that starts and stops it."""

    def __init__(
        self,
        routes: Mapping[str, Route],
        *,
        api_key: str | None = None,
        api_key_header: str = "authorization",
        unauthorized: Route = _unauthorized,
        not_found: Route = _not_found,
    ) -> None:
        self.routes = {path: route for path, route in routes.items() if not path.startswith("^")}
        self.patterns = [
            (re.compile(path), route) for path, route in routes.items() if path.startswith("^")
        ]
        self.api_key = api_key
        self.api_key_header = api_key_header.lower()
        self.unauthorized = unauthorized
        self.not_found = not_found
        self.requests: list[Recorded] = []
        self.stopping = threading.Event()
        self._script: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), WireHandler)
        self._httpd.wire = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``, without a trailing slash."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)

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
        given = request.headers.get(self.api_key_header)
        expected = self.api_key
        if expected is not None and self.api_key_header == "authorization":
            expected = f"Bearer {expected}"
        if expected is not None and given != expected:
            return self.unauthorized(request)
        route = self.routes.get(request.path) or next(
            (route for pattern, route in self.patterns if pattern.fullmatch(request.path)), None
        )
        if route is None:
            return self.not_found(request)
        return route(request)


class WireFake(_Started):
    """The base of an API's fake built on a :class:`WireServer` (set as ``wire`` by the
    subclass): its ``url``, ``start``/``stop`` and ``with`` are the server's."""

    wire: WireServer

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``, without a trailing slash."""
        return self.wire.url

    def start(self) -> Self:
        self.wire.start()
        return self

    def stop(self) -> None:
        self.wire.stop()


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

    def _receive(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(data) if data else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = data.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in self.headers.items()}
        path, _, query = self.path.partition("?")
        parsed = parse_qs(query, keep_blank_values=True)
        self._serve(Recorded(self.command, path, headers, body, parsed))

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _receive

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
        self.send_body(*_encoded(answer))

    def send_body(
        self,
        code: int,
        body: bytes,
        content_type: str,
        headers: Mapping[str, str] | None = None,
        *,
        chunk: tuple[int, float] | None = None,
    ) -> None:
        """Write an answer; with ``chunk = (size, seconds)`` the body goes ``size`` bytes
        every ``seconds`` and the connection closes after it (ended early when the server
        stops or the client hangs up)."""
        self.send_response(code)
        named = {name.lower(): value for name, value in (headers or {}).items()}
        self.send_header("Content-Type", named.pop("content-type", content_type))
        if code not in (204, 304):
            self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            if name.lower() != "content-type":
                self.send_header(name, value)
        self.end_headers()
        if chunk is None:
            self.wfile.write(body)
            self.wfile.flush()
            return
        self.close_connection = True
        size, seconds = chunk
        for start in range(0, len(body), size):
            if self.wire.stopping.wait(seconds):
                return
            try:
                self.wfile.write(body[start : start + size])
                self.wfile.flush()
            except OSError:  # the client gave up and hung up
                return

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


def _encoded(answer: tuple[Any, ...]) -> tuple[int, bytes, str, Mapping[str, str]]:
    """An answer as status, bytes, default content type and headers."""
    code, body = answer[0], answer[1]
    headers: Mapping[str, str] = answer[2] if len(answer) == 3 else {}
    if isinstance(body, bytes):
        return code, body, "application/octet-stream", headers
    if isinstance(body, str):
        return code, body.encode(), "text/plain; charset=utf-8", headers
    if body is None and code in (204, 304):
        return code, b"", "application/json", headers
    return code, json.dumps(body).encode(), "application/json", headers


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


def late(seconds: float, behaviour: Behaviour) -> Behaviour:
    """Play ``behaviour`` after ``seconds`` (cut short when the server stops)."""

    def play(handler: WireHandler, request: Recorded) -> None:
        handler.wire.stopping.wait(seconds)
        behaviour(handler, request)

    return play


def slowly(answer: Answer, chunk_size: int = 16, interval: float = 0.2) -> Behaviour:
    """Send ``answer`` (not a behaviour) with its headers at once and its body
    ``chunk_size`` bytes every ``interval`` seconds, each write well within any socket
    timeout: a server or proxy dribbling a body."""
    if callable(answer):
        raise TypeError("slowly() needs a status and body, not a behaviour")

    def play(handler: WireHandler, request: Recorded) -> None:
        handler.send_body(*_encoded(answer), chunk=(chunk_size, interval))

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
