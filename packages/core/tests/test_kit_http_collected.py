"""A kit HTTP client its user forgot to close closes its pooled connections when it is
collected: the server sees them end, and no ``ResourceWarning`` says a socket was left to
the garbage collector (httpx's own clients leave one per socket, two on asyncio).

An async client collected after its event loop has closed can no longer have that loop
close its transports: its sockets are closed at once and one warning per connection
remains (the transport's own, which only the dead loop could have avoided)."""

from __future__ import annotations

import asyncio
import gc
import threading
import warnings
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ragloom.core.kit.egress import ALLOW_ALL
from ragloom.core.kit.http import AsyncHttpClient, HttpClient


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    ended: threading.Semaphore


class _Handler(BaseHTTPRequestHandler):
    """Answers ``ok`` on a kept-alive connection; counts the connections that ended."""

    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def finish(self) -> None:
        super().finish()
        self.server.ended.release()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[_Server]:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.ended = threading.Semaphore(0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def _url(server: _Server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/"


def _resource_warnings(block: Callable[[], None]) -> list[str]:
    """The ResourceWarnings raised while ``block`` runs and the collector runs after it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        block()
        gc.collect()
    return [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]


def test_a_forgotten_sync_client_closes_its_connections(server: _Server) -> None:
    def forget() -> None:
        client = HttpClient(egress=ALLOW_ALL)
        assert client.request("GET", _url(server), timeout=5).body == b"ok"
        del client

    assert _resource_warnings(forget) == []
    assert server.ended.acquire(timeout=5)  # the server saw the connection end


def test_a_forgotten_async_client_closes_its_connections_on_its_loop(server: _Server) -> None:
    async def forget() -> None:
        client = AsyncHttpClient(egress=ALLOW_ALL)
        assert (await client.request("GET", _url(server), timeout=5)).body == b"ok"
        del client
        gc.collect()
        await asyncio.sleep(0.05)  # the loop closes the aborted transport

    assert _resource_warnings(lambda: asyncio.run(forget())) == []
    assert server.ended.acquire(timeout=5)


def test_a_forgotten_async_client_from_another_thread(server: _Server) -> None:
    """Collected on a thread other than its loop's: the loop's thread closes it."""
    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()

    async def use() -> AsyncHttpClient:
        client = AsyncHttpClient(egress=ALLOW_ALL)
        assert (await client.request("GET", _url(server), timeout=5)).body == b"ok"
        return client

    def forget() -> None:
        client = asyncio.run_coroutine_threadsafe(use(), loop).result(timeout=10)
        del client
        assert server.ended.acquire(timeout=5)

    try:
        assert _resource_warnings(forget) == []
    finally:
        loop.call_soon_threadsafe(loop.stop)
        runner.join()
        loop.close()


def test_after_its_loop_closed_a_forgotten_async_client_warns_once(server: _Server) -> None:
    async def use() -> AsyncHttpClient:
        client = AsyncHttpClient(egress=ALLOW_ALL)
        assert (await client.request("GET", _url(server), timeout=5)).body == b"ok"
        return client

    def forget() -> None:
        client = asyncio.run(use())
        del client

    left = _resource_warnings(forget)
    assert [message.split(" <")[0] for message in left] == ["unclosed transport"]
    assert server.ended.acquire(timeout=5)
