"""Cancelled and interrupted calls of the kit's HTTP clients close their connections.

A call is cancelled (``asyncio.wait_for``, ``task.cancel()``) or interrupted (a signal
handler raising, as Ctrl-C does) at varied points: while it connects, between the connect
and the headers, while it reads the body, and inside a stream. Afterwards no socket of
this process is still connected to the test servers and none was left to the garbage
collector (which says so with a ``ResourceWarning``).

A connect is held up by a listener whose accept queue is full (:class:`SlowDoor`): the
kernel drops the SYN and the client retries it about a second later, when the door has
opened. Client sockets are counted from ``/proc/self/fd`` and ``/proc/net/tcp``: this
process's TCP sockets whose peer is a test server's port.
"""

from __future__ import annotations

import asyncio
import gc
import os
import random
import signal
import socket
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType

import pytest

from ragloom.core.kit.egress import ALLOW_ALL
from ragloom.core.kit.http import AsyncHttpClient, HttpCallError, HttpClient, HttpErrorKind

CONNECT_BOUND = 2.5
"""The calls' timeout, so also the longest a connect held up at the door can take."""


def client_sockets(port: int) -> list[str]:
    """The local addresses of this process's TCP sockets (in any state) whose peer is
    ``port`` on 127.0.0.1 (in /proc/net/tcp's hex)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    peer = f"0100007F:{port:04X}"
    with open("/proc/net/tcp") as table:
        rows = [row.split() for row in table.readlines()[1:]]
    return sorted(row[1] for row in rows if row[2] == peer and row[9] in inodes)


@contextmanager
def no_leak(*ports: int, settle: float = CONNECT_BOUND + 1) -> Iterator[None]:
    """Asserts that the block leaves no socket connected to ``ports`` and none to the
    garbage collector (no ResourceWarning, even after a collection). A connect the
    block gave up on may still be under way in its thread (bounded by the calls'
    timeout), so its socket is given ``settle`` seconds to be closed."""
    gc.collect()
    before = [client_sockets(port) for port in ports]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        yield
        end = time.monotonic() + settle
        while True:
            gc.collect()
            after = [client_sockets(port) for port in ports]
            if after == before or time.monotonic() > end:
                break
            time.sleep(0.05)
    leaked = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert leaked == []
    assert after == before


class SlowDoor:
    """A listener whose accept queue is full until :meth:`open`: connects to it hang (the
    kernel drops their SYN) until then; once open it accepts and closes each connection."""

    def __init__(self) -> None:
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(0)
        self.port: int = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        self._filler = socket.create_connection(("127.0.0.1", self.port))
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._closing = False

    def open(self) -> None:
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            connection.close()

    def close(self) -> None:
        self._filler.close()
        self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        if self._thread.is_alive():
            self._thread.join(5)


@pytest.fixture
def door() -> Iterator[SlowDoor]:
    door = SlowDoor()
    yield door
    door.close()


class SlowHandler(BaseHTTPRequestHandler):
    """``/late``: headers after 0.15 s; ``/drip``: headers at once, then the body in ten
    pieces 0.03 s apart; anything else: a short answer at once."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        try:
            if self.path == "/late":
                time.sleep(0.15)
            self.send_response(200)
            self.send_header("Content-Length", "100" if self.path == "/drip" else "2")
            self.end_headers()
            if self.path != "/drip":
                self.wfile.write(b"ok")
                return
            for _ in range(10):
                self.wfile.write(b"x" * 10)
                self.wfile.flush()
                time.sleep(0.03)
        except OSError:
            self.close_connection = True  # the client hung up: what these tests do


class SlowServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # every connect is accepted at once (5 drops SYNs for 1 s)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, int]]:
    httpd = SlowServer(("127.0.0.1", 0), SlowHandler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    port = httpd.server_address[1]
    assert isinstance(port, int)
    yield f"http://127.0.0.1:{port}", port
    httpd.shutdown()
    httpd.server_close()


def test_the_door_holds_a_connect_until_it_opens(door: SlowDoor) -> None:
    """The premise of the connect cases: a connect waits at the closed door."""
    with pytest.raises(TimeoutError):
        socket.create_connection(("127.0.0.1", door.port), timeout=0.3).close()
    door.open()
    socket.create_connection(("127.0.0.1", door.port), timeout=CONNECT_BOUND).close()


def test_async_calls_cancelled_while_connecting_close_their_sockets(door: SlowDoor) -> None:
    async def run() -> None:
        async with AsyncHttpClient(egress=ALLOW_ALL) as http:
            calls = [
                http.request("GET", f"{door.url}{n}", timeout=CONNECT_BOUND) for n in range(30)
            ]
            waits = [asyncio.wait_for(call, 0.002 + n * 0.001) for n, call in enumerate(calls)]
            started = time.monotonic()
            outcomes = await asyncio.gather(*waits, return_exceptions=True)
            assert all(isinstance(o, TimeoutError) for o in outcomes), outcomes
            door.open()  # the connects still under way complete (at the SYN's retry)
            await asyncio.sleep(max(0.0, started + CONNECT_BOUND + 0.5 - time.monotonic()))

    with no_leak(door.port):
        asyncio.run(run())


def test_async_calls_cancelled_after_connecting_close_their_connections(
    server: tuple[str, int],
) -> None:
    url, port = server
    chosen = random.Random(7)

    async def cancelled(http: AsyncHttpClient, path: str, after: float, n: int) -> None:
        if path == "/stream":

            async def call() -> None:
                async with http.stream("GET", f"{url}/drip", timeout=5) as stream:
                    await stream.aread()

            task = asyncio.ensure_future(call())
        else:
            task = asyncio.ensure_future(http.request("GET", f"{url}{path}", timeout=5))
        if n % 2:  # half by wait_for, half by cancel()
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(task, after)
            return
        await asyncio.sleep(after)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    async def run() -> None:
        async with AsyncHttpClient(egress=ALLOW_ALL) as http:
            reply = await http.request("GET", f"{url}/", timeout=5)  # one pooled connection
            assert reply.body == b"ok"
            calls = []
            for n in range(36):
                path = ("/late", "/drip", "/stream")[n % 3]
                after = chosen.uniform(0.002, 0.12)  # headers at 0.15 s, body to 0.3 s
                calls.append(cancelled(http, path, after, n))
            await asyncio.gather(*calls)
            reply = await http.request("GET", f"{url}/", timeout=5)  # the pool still works
            assert reply.body == b"ok"

    with no_leak(port):
        asyncio.run(run())


class Interrupt(BaseException):
    """What a signal handler raises here (as SIGINT's raises KeyboardInterrupt)."""


@contextmanager
def interrupted_after(seconds: float) -> Iterator[None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        raise Interrupt

    previous: Callable[[int, FrameType | None], object] | int | None
    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        with pytest.raises(Interrupt):
            yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_sync_calls_interrupted_or_timed_out_close_their_sockets(
    door: SlowDoor, server: tuple[str, int]
) -> None:
    url, port = server
    with no_leak(door.port, port), HttpClient(egress=ALLOW_ALL) as http:
        for n in range(4):  # while connecting
            with interrupted_after(0.01 + n * 0.02):
                http.request("GET", door.url, timeout=CONNECT_BOUND)
        with pytest.raises(HttpCallError) as info:
            http.request("GET", door.url, timeout=0.2)
        assert info.value.kind is HttpErrorKind.TIMEOUT
        for path, after in (("/late", 0.05), ("/drip", 0.05), ("/drip", 0.2)):
            with interrupted_after(after):
                http.request("GET", f"{url}{path}", timeout=5)
        with interrupted_after(0.1), http.stream("GET", f"{url}/drip", timeout=5) as stream:
            stream.read()
        assert http.request("GET", f"{url}/", timeout=5).body == b"ok"
