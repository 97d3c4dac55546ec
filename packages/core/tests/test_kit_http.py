"""The kit's bounded HTTP call against a local server (reached with ALLOW_ALL): retries
with Retry-After, byte caps on body and headers, the redirect limit, error kinds; the
async client and streamed answers (lines, idle and total bounds, line cap)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from ragloom.core.errors import InvalidArgumentError
from ragloom.core.kit.egress import ALLOW_ALL
from ragloom.core.kit.http import (
    AsyncHttpClient,
    HttpCallError,
    HttpClient,
    HttpErrorKind,
    status_kind,
)
from ragloom.core.retry import RetryPolicy


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    busy = 0

    def log_message(self, *args: object) -> None:
        pass

    def answer(self, status: int, body: bytes = b"", **headers: str) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/busy-once":
            Handler.busy += 1
            if Handler.busy % 2:
                self.answer(503, b"busy", Retry_After="0.25")
            else:
                self.answer(200, b"done")
        elif self.path == "/big":
            self.answer(200, b"x" * 2000)
        elif self.path == "/loop":
            self.answer(302, Location="/loop")
        elif self.path == "/fat-headers":
            self.answer(200, b"ok", X_Pad="y" * 200_000)
        elif self.path.startswith("/pieces"):  # a close-delimited body, piece by piece
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            pieces = {
                "/pieces/lines": [b"a\r", b"\nb\rc", b"\n\xc3", b"\xa9"],
                "/pieces/stall": [b"first\n", b"", b"never\n"],
                "/pieces/long": [b"z" * 600, b"z" * 600, b"\n"],
            }[self.path]
            for piece in pieces:
                if not piece:
                    time.sleep(3)
                self.wfile.write(piece)
                self.wfile.flush()
                time.sleep(0.05)
        else:
            self.answer(404, b"none")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def http() -> Iterator[HttpClient]:
    with HttpClient(egress=ALLOW_ALL, max_bytes=1000, max_redirects=3) as client:
        yield client


def test_retries_honour_retry_after(server: str, http: HttpClient) -> None:
    waits: list[float] = []
    reply = http.request(
        "GET", f"{server}/busy-once", timeout=5, retry=RetryPolicy(sleep=waits.append)
    )
    assert (reply.status, reply.body, reply.attempts) == (200, b"done", 2)
    assert waits == [0.25]


def test_without_retry_an_error_status_is_an_answer(server: str, http: HttpClient) -> None:
    reply = http.request("GET", f"{server}/missing", timeout=5)
    assert (reply.status, reply.text, status_kind(reply.status)) == (
        404,
        "none",
        HttpErrorKind.STATUS,
    )


def test_body_cap(server: str, http: HttpClient) -> None:
    with pytest.raises(HttpCallError, match="max_bytes=1,000") as info:
        http.request("GET", f"{server}/big", timeout=5)
    assert info.value.kind is HttpErrorKind.TOO_LARGE


def test_header_cap(server: str, http: HttpClient) -> None:
    with pytest.raises(HttpCallError) as info:
        http.request("GET", f"{server}/fat-headers", timeout=5)
    assert info.value.kind is HttpErrorKind.PROTOCOL


def test_redirect_limit(server: str, http: HttpClient) -> None:
    with pytest.raises(HttpCallError, match="more than max_redirects=3") as info:
        http.request("GET", f"{server}/loop", timeout=5)
    assert info.value.kind is HttpErrorKind.TOO_MANY_REDIRECTS


def test_lost_connections_are_retried_then_named() -> None:
    waits: list[float] = []
    with HttpClient(egress=ALLOW_ALL) as http, pytest.raises(HttpCallError) as info:
        http.request("GET", "http://127.0.0.1:9/", timeout=2, retry=RetryPolicy(sleep=waits.append))
    assert info.value.kind is HttpErrorKind.CONNECTION
    assert "127.0.0.1:9" in str(info.value)
    assert len(waits) == 2


def test_status_kinds() -> None:
    assert [status_kind(s) for s in (401, 403, 429, 500, 503, 400)] == [
        HttpErrorKind.AUTHENTICATION,
        HttpErrorKind.AUTHENTICATION,
        HttpErrorKind.RATE_LIMIT,
        HttpErrorKind.SERVER,
        HttpErrorKind.SERVER,
        HttpErrorKind.STATUS,
    ]


def test_a_foreign_client_only_with_allow_all() -> None:
    with httpx.Client() as client:
        with pytest.raises(InvalidArgumentError, match="egress"):
            HttpClient(client=client)
        HttpClient(egress=ALLOW_ALL, client=client).close()
        assert not client.is_closed  # the caller's to close
    with pytest.raises(InvalidArgumentError, match="timeout"):
        HttpClient(egress=ALLOW_ALL).request("GET", "http://127.0.0.1:9/", timeout=0)


def test_async_client_has_the_same_bounds(server: str) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async def run() -> None:
        async with AsyncHttpClient(egress=ALLOW_ALL, max_bytes=1000, max_redirects=3) as http:
            retry = RetryPolicy(async_sleep=sleep)
            reply = await http.request("GET", f"{server}/busy-once", timeout=5, retry=retry)
            assert (reply.status, reply.body, reply.attempts) == (200, b"done", 2)
            for path, kind in (
                ("/big", HttpErrorKind.TOO_LARGE),
                ("/loop", HttpErrorKind.TOO_MANY_REDIRECTS),
            ):
                with pytest.raises(HttpCallError) as info:
                    await http.request("GET", f"{server}{path}", timeout=5)
                assert info.value.kind is kind
            with pytest.raises(HttpCallError) as info:
                await http.request("GET", "http://127.0.0.1:9/", timeout=2, retry=retry)
            assert (info.value.kind, info.value.attempts) == (HttpErrorKind.CONNECTION, 3)

    asyncio.run(run())
    assert waits[0] == 0.25  # the server's Retry-After
    assert len(waits) == 3


def test_redirects_as_answers(server: str) -> None:
    with HttpClient(egress=ALLOW_ALL, follow_redirects=False) as http:
        reply = http.request("GET", f"{server}/loop", timeout=5)
    assert (reply.status, reply.headers["location"], reply.redirects) == (302, "/loop", 0)


def test_stream_lines_sync_and_async(server: str) -> None:
    url = f"{server}/pieces/lines"
    with HttpClient(egress=ALLOW_ALL) as http, http.stream("GET", url, timeout=5) as stream:
        assert stream.reply.status == 200
        assert list(stream.iter_lines()) == ["a", "b", "c", "\u00e9"]

    async def run() -> list[str]:
        async with (
            AsyncHttpClient(egress=ALLOW_ALL) as http,
            http.stream("GET", url, timeout=5) as stream,
        ):
            return [line async for line in stream.aiter_lines()]

    assert asyncio.run(run()) == ["a", "b", "c", "\u00e9"]


def test_stream_error_status_is_read_whole(server: str) -> None:
    with HttpClient(egress=ALLOW_ALL) as http, http.stream("GET", f"{server}/nope", timeout=5) as s:
        assert (s.reply.status, s.reply.body, s.read()) == (404, b"none", b"none")


def test_a_stalled_stream_ends_at_its_idle_timeout(server: str) -> None:
    url = f"{server}/pieces/stall"
    started = time.monotonic()
    with (
        HttpClient(egress=ALLOW_ALL) as http,
        http.stream("GET", url, timeout=5, idle_timeout=0.4) as stream,
    ):
        lines = stream.iter_lines()
        assert next(lines) == "first"
        with pytest.raises(HttpCallError, match="stalled") as info:
            next(lines)
    assert info.value.kind is HttpErrorKind.TIMEOUT
    assert time.monotonic() - started < 2

    async def run() -> None:
        async with (
            AsyncHttpClient(egress=ALLOW_ALL) as http,
            http.stream("GET", url, timeout=5, total_timeout=0.4) as stream,
        ):
            await stream.aread()

    started = time.monotonic()
    with pytest.raises(HttpCallError, match="0.4 s in all") as info:
        asyncio.run(run())
    assert info.value.kind is HttpErrorKind.TIMEOUT
    assert time.monotonic() - started < 2


def test_a_line_longer_than_the_cap(server: str) -> None:
    url = f"{server}/pieces/long"
    with (
        HttpClient(egress=ALLOW_ALL) as http,
        http.stream("GET", url, timeout=5, max_line_bytes=1000) as stream,
        pytest.raises(HttpCallError, match="max_line_bytes=1,000") as info,
    ):
        list(stream.iter_lines())
    assert info.value.kind is HttpErrorKind.TOO_LARGE
