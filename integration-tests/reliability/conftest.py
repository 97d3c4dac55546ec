"""The reliability suite's fixtures (every test here gets the marker ``reliability``).

A hostile HTTP server for client tests: each path misbehaves one way.

``/drip/...``     a valid JSON answer, one byte every 0.2 s
``/stall/...``    headers, then nothing
``/huge/...``     a JSON body of 200 MB (streamed, never held in memory)
``/nested/...``   valid JSON nested 100,000 levels deep
``/keepalive/...``  an SSE stream of keep-alive comments only, one every 0.2 s
``/cut/...``      an SSE stream cut off mid-event
``/short/...``    a JSON body shorter than its Content-Length, then the connection closes
``/redirect/...`` a redirect to itself, forever
``/headerdrip/...``  the status line and headers, one byte every 0.3 s
``/slowredirect/N``  after 1.5 s, a redirect to ``/slowredirect/N+1``; from N=9, a page
``/redirectto/?to=URL``  a 302 to ``URL``
GET and POST behave alike (loaders GET, API clients POST).
Runs on 127.0.0.1 in a daemon thread; every handler stops when the client goes away.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

# The suite's helper modules (hostile_corpus) import by name under --import-mode=importlib.
sys.path.insert(0, str(Path(__file__).parent))

ANSWER = json.dumps(
    {
        "id": "x",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
        ],
    }
).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        mode = self.path.strip("/").split("/")[0]
        with contextlib.suppress(TimeoutError, BrokenPipeError, ConnectionResetError):
            getattr(self, f"mode_{mode}")()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        mode = self.path.strip("/").split("/")[0]
        with contextlib.suppress(TimeoutError, BrokenPipeError, ConnectionResetError):
            getattr(self, f"mode_{mode}")()

    def head(self, content_type: str, length: int | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        if length is not None:
            self.send_header("Content-Length", str(length))
        else:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()

    def mode_drip(self) -> None:
        self.head("application/json", len(ANSWER))
        for byte in ANSWER:
            self.wfile.write(bytes([byte]))
            self.wfile.flush()
            time.sleep(0.2)

    def mode_stall(self) -> None:
        self.head("application/json", len(ANSWER))
        time.sleep(30)

    def mode_huge(self) -> None:
        size = 200 * 1024 * 1024
        self.head("application/json", size)
        block = b" " * 65536
        for _ in range(size // len(block)):
            self.wfile.write(block)

    def mode_nested(self) -> None:
        body = b"[" * 100_000 + b"]" * 100_000
        self.head("application/json", len(body))
        self.wfile.write(body)

    def mode_keepalive(self) -> None:
        self.head("text/event-stream")
        for _ in range(300):
            self.wfile.write(b": keep-alive\n\n")
            self.wfile.flush()
            time.sleep(0.2)

    def mode_short(self) -> None:
        self.head("application/json", len(ANSWER) + 100)
        self.wfile.write(ANSWER[:20])
        self.wfile.flush()
        self.close_connection = True

    def mode_redirect(self) -> None:
        self.send_response(302)
        self.send_header("Location", self.path)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def mode_headerdrip(self) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Pad: " + b"x" * 200
        for byte in head + b"\r\nContent-Length: 2\r\n\r\nok":
            self.wfile.write(bytes([byte]))
            self.wfile.flush()
            time.sleep(0.3)
        self.close_connection = True

    def mode_slowredirect(self) -> None:
        hop = int(self.path.strip("/").split("/")[1])
        time.sleep(1.5)
        if hop >= 9:
            self.head("text/plain", 2)
            self.wfile.write(b"ok")
            return
        self.send_response(302)
        self.send_header("Location", f"/slowredirect/{hop + 1}")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def mode_redirectto(self) -> None:
        self.send_response(302)
        self.send_header("Location", self.path.split("?to=", 1)[1])
        self.send_header("Content-Length", "0")
        self.end_headers()

    def mode_cut(self) -> None:
        self.head("text/event-stream")
        chunk = {"choices": [{"index": 0, "delta": {"content": "partial"}}]}
        self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        self.wfile.write(b'data: {"choices": [{"ind')
        self.wfile.flush()


@contextmanager
def hostile_server(host: str = "127.0.0.1") -> Iterator[str]:
    """The base URL of a running hostile server (``.../<mode>/v1``: append a mode)."""
    server = ThreadingHTTPServer((host, 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.reliability)


@pytest.fixture(scope="module")
def hostile() -> Iterator[str]:
    with hostile_server() as url:
        yield url


@pytest.fixture(scope="module")
def hostile_elsewhere() -> Iterator[str]:
    """The hostile server on 127.0.0.2: a loopback address egress tests can allow
    (``allowed_networks``) while 127.0.0.1 stays refused."""
    with hostile_server("127.0.0.2") as url:
        yield url
