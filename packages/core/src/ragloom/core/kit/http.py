"""One bounded HTTP call for every ragloom component that talks HTTP.

A socket timeout bounds each read, not the call: a server dripping its status line one
byte every 0.3 s, or a chain of slow redirects, holds a plain client for as long as it
likes. :class:`HttpClient` bounds a call as a whole and checks where it goes:

- **one deadline** (``timeout`` seconds from the start of the call) covers DNS, connect,
  TLS, sending the request, the status line and headers, every redirect hop and the
  body: its network backend clamps every socket operation to the time left, and raises a
  timeout once it has passed;
- **egress**: every connection is made by :meth:`EgressPolicy.create_connection
  <ragloom.core.kit.egress.EgressPolicy.create_connection>` (the checked address is the
  one connected, so DNS rebinding cannot switch it; TLS still verifies the host name),
  and redirects are followed here, each hop checked by
  :meth:`~ragloom.core.kit.egress.EgressPolicy.check_redirect`, at most
  ``max_redirects`` of them;
- **byte caps**: the body is refused past ``max_bytes`` while it arrives; the status
  line and headers are capped at 100 KiB by httpcore's parser;
- **retries** (optional): 408/429/5xx, lost connections, broken answers and timeouts by a
  :class:`~ragloom.core.retry.RetryPolicy`, honouring ``Retry-After``
  (:func:`~ragloom.core.retry.retry_delay`);
- **error kinds**: :func:`status_kind` maps an HTTP status to an :class:`HttpErrorKind`,
  the failures of the call itself raise :class:`HttpCallError` with its kind, and
  refusals raise :class:`~ragloom.core.errors.EgressRefusedError`;
- **streams** (:meth:`HttpClient.stream`): the deadline bounds the call up to the status
  line and headers; then every chunk must come within ``idle_timeout`` (and the whole
  stream within ``total_timeout``), the body stays under ``max_bytes`` and each line
  under ``max_line_bytes``.

:class:`AsyncHttpClient` is the same on asyncio (``asyncio.timeout`` bounds the call,
connections still come from the egress policy). Both run one sans-I/O description of a
call (retries, redirects, error mapping: :meth:`_Calls._call_steps`) through
:func:`~ragloom.core.kit.steps.run_steps` or :func:`~ragloom.core.kit.steps.arun_steps`.

httpx keeps the pooling and the HTTP parsing; environment proxies are not used (a proxy
would hide the address the egress policy checks).

A client closes its pool on ``close()`` / ``aclose()`` (or its ``with`` block), and also
when it is collected unclosed (``weakref.finalize``), so a forgotten client leaks no
socket: the sync pool is closed there and then; an async client cannot await, so its
event loop aborts its connections (at once on the loop's thread, else soon), and after
that loop has closed their sockets are closed at once (the dead loop's transports then
warn once each, where httpx alone leaves a socket and a transport warning).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import dataclasses
import email.message
import enum
import functools
import json
import math
import re
import select
import socket
import ssl
import time
import weakref
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Generic, Self, TypeAlias, TypedDict, TypeVar, Unpack

import httpcore
import httpx

from ragloom.core.bounded_read import (
    DEFAULT_MAX_RESPONSE_BYTES,
    ResponseTooLargeError,
    read_within,
)
from ragloom.core.errors import EgressRefusedError, InvalidArgumentError, RagloomError
from ragloom.core.kit.egress import DEFAULT_EGRESS_POLICY, EgressPolicy
from ragloom.core.kit.retrying import Pause, retrying
from ragloom.core.kit.steps import arun_steps, run_steps
from ragloom.core.retry import RetryPolicy

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_MAX_REDIRECTS",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "AsyncHttpClient",
    "AsyncHttpStream",
    "HttpCallError",
    "HttpClient",
    "HttpErrorKind",
    "HttpReply",
    "HttpStream",
    "Retryable",
    "status_kind",
]

DEFAULT_MAX_REDIRECTS = 10
"""Redirect hops followed by one call before it fails."""

DEFAULT_MAX_LINE_BYTES = 1024 * 1024
"""The longest line (an SSE event's line, say) a stream hands out before it fails."""

Retryable = Callable[[int, Mapping[str, str]], bool | None]
"""Whether an answer of this status and headers is worth another attempt (``None``: the
usual rule, 408/429/5xx), for APIs that say more, e.g. OpenAI's ``x-should-retry``."""

_LINE_BREAK = re.compile(rb"\r\n|\r|\n")

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "ragloom_http_deadline", default=None
)


class HttpErrorKind(enum.Enum):
    """What went wrong with an HTTP call, for callers that map it to their own errors."""

    TIMEOUT = "timeout"
    CONNECTION = "connection"
    TOO_LARGE = "too large"
    TOO_MANY_REDIRECTS = "too many redirects"
    PROTOCOL = "protocol"
    AUTHENTICATION = "authentication"
    RATE_LIMIT = "rate limit"
    SERVER = "server"
    STATUS = "status"


def status_kind(status: int) -> HttpErrorKind:
    """The kind of an HTTP error status: 401/403 authentication, 429 rate limit, 5xx
    server, anything else status."""
    if status in (401, 403):
        return HttpErrorKind.AUTHENTICATION
    if status == 429:
        return HttpErrorKind.RATE_LIMIT
    if status >= 500:
        return HttpErrorKind.SERVER
    return HttpErrorKind.STATUS


class HttpCallError(RagloomError):
    """An HTTP call that got no complete answer (timeout, connection, size, protocol).

    ``kind`` says which; ``url`` is the URL asked for; ``attempts`` how many were made.
    Callers wrap it in their own error (``DocumentLoadError``, ``WebSearchError``, ...)
    with ``from``."""

    def __init__(self, message: str, *, kind: HttpErrorKind, url: str, attempts: int = 1) -> None:
        super().__init__(message)
        self.kind = kind
        self.url = url
        self.attempts = attempts


@dataclass(frozen=True, slots=True)
class HttpReply:
    """A complete answer: status, headers (case-insensitive), the whole body, the final
    URL after redirects, how many redirects and attempts it took."""

    status: int
    headers: httpx.Headers
    body: bytes
    url: str
    redirects: int = 0
    attempts: int = 1
    retry_note: str = ""

    @property
    def ok(self) -> bool:
        """A 2xx status."""
        return 200 <= self.status < 300

    @property
    def charset(self) -> str | None:
        """The charset the ``Content-Type`` header declares, if any."""
        message = email.message.Message()
        message["content-type"] = self.headers.get("content-type", "")
        return message.get_content_charset()

    @property
    def text(self) -> str:
        """The body decoded with its declared charset (UTF-8 by default), never failing."""
        try:
            return self.body.decode(self.charset or "utf-8", "replace")
        except LookupError:
            return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body as JSON (``ValueError`` or ``RecursionError`` when it is not)."""
        return json.loads(self.body)


def _shown(url: httpx.URL) -> str:
    """``url`` for a message: without its query string, which may hold a key."""
    return str(url.copy_with(query=None))


def _time_left(timeout: float | None, expired: type[httpcore.TimeoutException]) -> float | None:
    """``timeout`` clamped to the time left before this call's deadline; ``expired`` is
    raised once the deadline has passed."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise expired("the call's deadline has passed")
    return left if timeout is None else min(timeout, left)


@contextmanager
def _mapped(
    timeout: type[httpcore.TimeoutException], failure: type[httpcore.NetworkError]
) -> Iterator[None]:
    """Socket errors as httpcore's, which httpx maps to its own."""
    try:
        yield
    except EgressRefusedError:
        raise
    except TimeoutError as exc:
        raise timeout(str(exc) or "timed out") from exc
    except OSError as exc:
        raise failure(str(exc) or type(exc).__name__) from exc


class _DeadlineStream(httpcore.NetworkStream):
    """A socket whose every read, write and TLS handshake ends by the call's deadline."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with _mapped(httpcore.ReadTimeout, httpcore.ReadError):
            self._sock.settimeout(_time_left(timeout, httpcore.ReadTimeout))
            return self._sock.recv(max_bytes)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        with _mapped(httpcore.WriteTimeout, httpcore.WriteError):
            while buffer:
                self._sock.settimeout(_time_left(timeout, httpcore.WriteTimeout))
                buffer = buffer[self._sock.send(buffer) :]

    def close(self) -> None:
        self._sock.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError):
            try:
                self._sock.settimeout(_time_left(timeout, httpcore.ConnectTimeout))
                tls = ssl_context.wrap_socket(self._sock, server_hostname=server_hostname)
            except BaseException:
                self._sock.close()
                raise
        return _DeadlineStream(tls)

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object" and isinstance(self._sock, ssl.SSLSocket):
            return self._sock  # has selected_alpn_protocol(), all httpcore asks of it
        if info == "client_addr":
            return self._sock.getsockname()
        if info == "server_addr":
            return self._sock.getpeername()
        if info == "socket":
            return self._sock
        if info == "is_readable":  # an idle pooled connection the server has closed
            if self._sock.fileno() < 0:
                return True
            return bool(select.select([self._sock], [], [], 0)[0])
        return None


class _PinnedBackend(httpcore.NetworkBackend):
    """Connects through the egress policy (to the checked address) within the deadline."""

    def __init__(self, egress: EgressPolicy) -> None:
        self._egress = egress

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError):
            sock = self._egress.create_connection(
                host,
                port,
                timeout=_time_left(timeout, httpcore.ConnectTimeout),
                source_address=None if local_address is None else (local_address, 0),
            )
            try:
                for option in socket_options or ():
                    sock.setsockopt(*option)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except BaseException:
                sock.close()
                raise
        return _DeadlineStream(sock)


class _PinnedTransport(httpx.HTTPTransport):
    """httpx's transport (pooling, HTTP/1.1) whose connections come from
    :class:`_PinnedBackend` (httpx takes no network backend, so the pool is replaced)."""

    def __init__(self, egress: EgressPolicy, verify: ssl.SSLContext | bool) -> None:
        context = _ssl_context(verify)
        super().__init__(verify=context, trust_env=False)
        self._pool = httpcore.ConnectionPool(
            ssl_context=context, network_backend=_PinnedBackend(egress)
        )


def _running_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop running on this thread, if any."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class _AsyncDeadlineStream(httpcore.AsyncNetworkStream):
    """An asyncio connection; every read, write and TLS handshake within its timeout
    (the call as a whole is bounded by ``asyncio.timeout`` around it)."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, sock: socket.socket
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._sock = sock
        self._loop = asyncio.get_running_loop()

    def abandon(self) -> None:
        """Close without awaiting, from any thread (its client was collected open): on a
        live loop by the loop, soon; on a closed one the socket now (the transport, which
        that loop can no longer close, then warns once when collected)."""
        transport = self._writer.transport
        if transport.is_closing():
            return
        if self._loop.is_closed():
            self._sock.close()
            with contextlib.suppress(RuntimeError):  # marks it closing, then finds no loop
                transport.abort()
        elif _running_loop() is self._loop:
            transport.abort()
        else:  # the loop's thread aborts it; the callback keeps the writer from warning
            self._loop.call_soon_threadsafe(self._abort)

    def _abort(self) -> None:
        self._writer.transport.abort()

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with _mapped(httpcore.ReadTimeout, httpcore.ReadError):
            async with asyncio.timeout(timeout):
                return await self._reader.read(max_bytes)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        with _mapped(httpcore.WriteTimeout, httpcore.WriteError):
            async with asyncio.timeout(timeout):
                self._writer.write(buffer)
                await self._writer.drain()

    async def aclose(self) -> None:
        self._writer.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError):
            try:
                async with asyncio.timeout(timeout):
                    await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
            except BaseException:
                self._writer.close()
                raise
        return self

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object":
            return self._writer.get_extra_info("ssl_object")
        if info in ("client_addr", "server_addr"):
            return self._writer.get_extra_info("sockname" if info == "client_addr" else "peername")
        if info == "socket":
            return self._writer.get_extra_info("socket")
        if info == "is_readable":  # an idle pooled connection the server has closed
            return self._reader.at_eof() or self._writer.is_closing()
        return None


_CONNECTS = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="ragloom-connect")
"""The threads the async client's connects run in (as many as asyncio's default)."""


def _close_abandoned(connecting: concurrent.futures.Future[httpcore.NetworkStream]) -> None:
    """Close the connection of a connect whose caller is gone (cancelled, timed out)."""
    if not connecting.cancelled() and connecting.exception() is None:
        connecting.result().close()


class _AsyncPinnedBackend(httpcore.AsyncNetworkBackend):
    """:class:`_PinnedBackend` on asyncio: the policy's checked connect runs in a thread
    (bounded by its own timeout), the socket is then handed to asyncio.

    A thread cannot be stopped: when the caller is cancelled while the thread connects,
    the connection it makes is closed as soon as it is made (the thread's own future
    keeps it; ``asyncio.to_thread`` would drop it, an open socket for the collector)."""

    def __init__(self, egress: EgressPolicy) -> None:
        self._sync = _PinnedBackend(egress)
        self.streams: weakref.WeakSet[_AsyncDeadlineStream] = weakref.WeakSet()
        """The connections it made that are still alive (closed by :meth:`abandon`)."""

    def abandon(self) -> None:
        """Close every connection it made without awaiting (its client was collected)."""
        for stream in list(self.streams):
            stream.abandon()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        connecting = _CONNECTS.submit(
            contextvars.copy_context().run,
            self._sync.connect_tcp,
            host,
            port,
            timeout,
            local_address,
            socket_options,
        )
        try:
            stream = await asyncio.wrap_future(connecting)
        except BaseException:
            connecting.add_done_callback(_close_abandoned)  # now, or once it has connected
            raise
        sock = stream.get_extra_info("socket")
        try:
            sock.settimeout(0)
            reader, writer = await asyncio.open_connection(sock=sock)
        except BaseException:
            sock.close()
            raise
        connection = _AsyncDeadlineStream(reader, writer, sock)
        self.streams.add(connection)
        return connection

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class _AsyncPinnedTransport(httpx.AsyncHTTPTransport):
    """:class:`_PinnedTransport` for ``httpx.AsyncClient``."""

    def __init__(self, egress: EgressPolicy, verify: ssl.SSLContext | bool) -> None:
        context = _ssl_context(verify)
        super().__init__(verify=context, trust_env=False)
        self.backend = _AsyncPinnedBackend(egress)
        self._pool = httpcore.AsyncConnectionPool(ssl_context=context, network_backend=self.backend)


@functools.cache
def _default_ssl_context() -> ssl.SSLContext:
    """The verifying context, built once (loading the CA bundle takes ~0.2 s)."""
    return httpx.create_ssl_context(verify=True, trust_env=False)


def _ssl_context(verify: ssl.SSLContext | bool) -> ssl.SSLContext:
    if verify is True:
        return _default_ssl_context()
    return httpx.create_ssl_context(verify=verify, trust_env=False)


# -- one call, written once --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Exchange:
    """Send ``request`` (by ``deadline``); its answer read whole, or left open when it is
    a 2xx of a stream (``keep_open``)."""

    request: httpx.Request
    deadline: float
    keep_open: bool


_Step: TypeAlias = _Exchange | Pause


@dataclass(frozen=True, slots=True)
class _Hop:
    """What one exchange brought: the answer, the redirect to follow (if any) and, for a
    stream, the open response."""

    status: int
    headers: httpx.Headers
    body: bytes
    following: httpx.Request | None
    response: httpx.Response | None = None


def _checked_timeout(name: str, value: float | None, *, optional: bool = False) -> float | None:
    """``value`` as seconds: a finite number > 0 (or ``None`` when ``optional``)."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise InvalidArgumentError(f"{name} must be a number > 0, got {value!r}")
    if math.isinf(value):
        raise InvalidArgumentError(f"{name} must be finite: it bounds the whole call")
    return float(value)


def _failure(exc: BaseException, url: str, what: str) -> BaseException | None:
    """The :class:`HttpCallError` for an exception of the HTTP stack (``None`` for one
    that is not), ``what`` saying what did not complete in time."""
    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        return HttpCallError(f"{url}: timed out: {what}", kind=HttpErrorKind.TIMEOUT, url=url)
    if isinstance(exc, ResponseTooLargeError):
        return HttpCallError(f"{url}: {exc}", kind=HttpErrorKind.TOO_LARGE, url=url)
    if isinstance(exc, httpx.ProtocolError | httpx.DecodingError | httpx.UnsupportedProtocol):
        return HttpCallError(f"{url}: broken answer: {exc!r}", kind=HttpErrorKind.PROTOCOL, url=url)
    if isinstance(exc, httpx.TransportError | OSError) and not isinstance(exc, EgressRefusedError):
        return HttpCallError(
            f"{url}: cannot fetch: {exc!r}", kind=HttpErrorKind.CONNECTION, url=url
        )
    return None


_C = TypeVar("_C", httpx.Client, httpx.AsyncClient)

_CallSteps: TypeAlias = Generator[_Step, Any, tuple[_Hop, HttpReply]]


class _CallOptions(TypedDict, total=False):
    """The per-call options of :meth:`HttpClient.request` (and of the streams), described
    there once."""

    headers: Mapping[str, str] | None
    params: Mapping[str, str] | None
    json: Any
    content: bytes | None
    retry: RetryPolicy | None
    retryable: Retryable | None


class _StreamOptions(_CallOptions, total=False):
    """:class:`_CallOptions` and the bounds of a streamed body (:meth:`HttpClient.stream`)."""

    idle_timeout: float | None
    total_timeout: float | None
    max_line_bytes: int


class _Calls(Generic[_C]):
    """What the sync and async clients share: the constructor (its arguments are described
    on :class:`HttpClient`), settings, checks and the call as steps; a subclass says how
    to open its own httpx client (:meth:`_new_client`) and how to perform a step."""

    def __init__(
        self,
        *,
        egress: EgressPolicy = DEFAULT_EGRESS_POLICY,
        max_redirects: int = DEFAULT_MAX_REDIRECTS,
        max_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        verify: ssl.SSLContext | bool = True,
        client: _C | None = None,
        follow_redirects: bool = True,
    ) -> None:
        if type(max_redirects) is not int or max_redirects < 0:
            raise InvalidArgumentError(f"max_redirects must be an int >= 0, got {max_redirects!r}")
        if type(max_bytes) is not int or max_bytes < 0:
            raise InvalidArgumentError(f"max_bytes must be an int >= 0, got {max_bytes!r}")
        if client is not None and not egress.allow_private_addresses:
            raise InvalidArgumentError(
                "an httpx client passed in cannot enforce the egress policy: pass it only "
                "with egress=ALLOW_ALL (for an endpoint of your own configuration)"
            )
        self.egress = egress
        self.max_redirects = max_redirects
        self.max_bytes = max_bytes
        self.follow_redirects = follow_redirects
        self._client: _C = self._new_client(egress, verify) if client is None else client
        self._release: weakref.finalize[[], _Calls[_C]] | None = None
        """Closes the pool of a client of its own when called (by ``close``) or when this
        client is collected unclosed, so a forgotten client leaks no socket."""
        if client is None:
            self._release = weakref.finalize(self, self._closer())

    def _closer(self) -> Callable[[], None]:
        """What releases the pool of a client of its own, without holding this object
        (which would then never be collected)."""
        raise NotImplementedError

    def _new_client(self, egress: EgressPolicy, verify: ssl.SSLContext | bool) -> _C:
        """The pooled httpx client of this kind whose connections come from ``egress``."""
        raise NotImplementedError

    def _following(self, response: httpx.Response) -> httpx.Request | None:
        return response.next_request if self.follow_redirects else None

    def _call_steps(
        self,
        build: Callable[[], httpx.Request],
        url: str,
        timeout: float,
        retry: RetryPolicy | None,
        retryable: Retryable | None,
        keep_open: bool,
    ) -> _CallSteps:
        """Attempts until one answers and is not retried: the last answer (with its URL,
        redirects, attempts and retry note), or the last attempt's HttpCallError."""

        def status(answer: tuple[_Hop, HttpReply]) -> tuple[int, httpx.Headers, bool | None]:
            reply = answer[1]
            says = None if retryable is None else retryable(reply.status, reply.headers)
            return reply.status, reply.headers, says

        done = yield from retrying(
            lambda: self._attempt_steps(build(), url, timeout, keep_open),
            retry or RetryPolicy(max_retries=0),
            status=status,
            retried=_retried,
            gave_up=_counted,
        )
        hop, reply = done.answer
        return hop, dataclasses.replace(reply, attempts=done.attempts, retry_note=done.note)

    def _attempt_steps(
        self, request: httpx.Request, url: str, timeout: float, keep_open: bool
    ) -> _CallSteps:
        """One attempt: the request and its redirects, all within one deadline."""
        deadline = time.monotonic() + timeout
        redirects = 0
        try:
            while True:
                hop: _Hop = yield _Exchange(request, deadline, keep_open)
                if hop.following is None:
                    reply = HttpReply(
                        hop.status, hop.headers, hop.body, str(request.url), redirects
                    )
                    return hop, reply
                if redirects >= self.max_redirects:
                    raise HttpCallError(
                        f"{url}: more than max_redirects={self.max_redirects} redirects "
                        f"(the last to {_shown(hop.following.url)})",
                        kind=HttpErrorKind.TOO_MANY_REDIRECTS,
                        url=url,
                    )
                source, request, redirects = request, hop.following, redirects + 1
                self.egress.check_redirect(str(source.url), str(request.url))
        except EgressRefusedError as exc:
            if not redirects:
                raise
            raise EgressRefusedError(
                f"{url}: redirect {redirects} to {_shown(request.url)} refused: {exc}"
            ) from exc
        except Exception as exc:
            hops = f", {redirects} redirect(s) followed" if redirects else ""
            what = (
                f"no complete answer within {timeout:g} s (the whole call: connect, "
                f"headers, redirects and body{hops})"
            )
            failure = _failure(exc, url, what)
            if failure is None:
                raise
            raise failure from exc

    def _budget(
        self,
        url: str,
        timeout: float,
        idle_timeout: float | None,
        total_timeout: float | None,
        max_line_bytes: int,
    ) -> _Budget:
        """The checked bounds of a stream's body."""
        idle = _checked_timeout("idle_timeout", idle_timeout, optional=True)
        total = _checked_timeout("total_timeout", total_timeout, optional=True)
        if type(max_line_bytes) is not int or max_line_bytes < 1:
            raise InvalidArgumentError(
                f"max_line_bytes must be an int >= 1, got {max_line_bytes!r}"
            )
        return _Budget(url, idle or timeout, total, self.max_bytes, max_line_bytes)

    def _checked_call(
        self,
        method: str,
        url: str,
        timeout: float,
        keep_open: bool,
        *,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        content: bytes | None = None,
        retry: RetryPolicy | None = None,
        retryable: Retryable | None = None,
    ) -> tuple[_CallSteps, float]:
        """The call as steps (building a fresh request for every attempt) and its checked
        timeout; a refused URL is refused here, before any step."""
        seconds = _checked_timeout("timeout", timeout)
        assert seconds is not None
        self.egress.check_url(url)
        build = functools.partial(
            self._client.build_request,
            method,
            url,
            headers=headers,
            params=params,
            json=json,
            content=content,
        )
        return self._call_steps(build, url, seconds, retry, retryable, keep_open), seconds

    def _request_steps(
        self, method: str, url: str, timeout: float, options: _CallOptions
    ) -> _CallSteps:
        """:meth:`HttpClient.request` as steps."""
        return self._checked_call(method, url, timeout, False, **options)[0]

    def _stream_steps(
        self,
        method: str,
        url: str,
        timeout: float,
        *,
        idle_timeout: float | None = None,
        total_timeout: float | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        **options: Unpack[_CallOptions],
    ) -> tuple[_CallSteps, _Budget]:
        """:meth:`HttpClient.stream` as steps, and the checked bounds of its body."""
        steps, seconds = self._checked_call(method, url, timeout, True, **options)
        budget = self._budget(url, seconds, idle_timeout, total_timeout, max_line_bytes)
        return steps, budget


def _timed(request: httpx.Request, deadline: float) -> httpx.Request:
    """``request`` with httpx's timeouts set to the time left before ``deadline``."""
    request.extensions["timeout"] = httpx.Timeout(max(deadline - time.monotonic(), 1e-3)).as_dict()
    return request


def _hop(response: httpx.Response, following: httpx.Request | None, body: bytes) -> _Hop:
    return _Hop(response.status_code, response.headers, body, following)


class _Budget:
    """The bounds of a stream's body after its headers: each chunk within
    ``idle_timeout``, all of it within ``total_timeout`` and ``max_bytes``, each line
    within ``max_line_bytes``. Pure bookkeeping, shared by the sync and async streams."""

    def __init__(
        self,
        url: str,
        idle_timeout: float,
        total_timeout: float | None,
        max_bytes: int,
        max_line_bytes: int,
    ) -> None:
        self.url = url
        self.idle_timeout = idle_timeout
        self._total = total_timeout
        self._end: float | None = None  # set by the first read
        self._left = max_bytes
        self._max_bytes = max_bytes
        self._max_line_bytes = max_line_bytes
        self._pending = b""

    def next_timeout(self) -> float:
        """Seconds the next chunk may take; a TIMEOUT error when the stream's time is up."""
        if self._total is None:
            return self.idle_timeout
        if self._end is None:
            self._end = time.monotonic() + self._total
        left = self._end - time.monotonic()
        if left <= 0:
            raise self.failure(TimeoutError())
        return min(self.idle_timeout, left)

    def took(self, chunk: bytes) -> bytes:
        """``chunk``, counted against ``max_bytes``."""
        self._left -= len(chunk)
        if self._left < 0:
            raise self.failure(
                ResponseTooLargeError(f"the stream is larger than max_bytes={self._max_bytes:,}")
            )
        return chunk

    def lines(self, chunk: bytes | None) -> list[str]:
        """The complete lines (without their ending: ``\\n``, ``\\r\\n`` or ``\\r``) that
        ``chunk`` completes; ``None`` for the end of the stream, which ends the last line."""
        data = self._pending + (chunk or b"")
        half = chunk is not None and data.endswith(b"\r")  # maybe the first half of \r\n
        parts = _LINE_BREAK.split(data[:-1] if half else data)
        pending = b"" if chunk is None else parts.pop()
        if max(map(len, [pending, *parts])) > self._max_line_bytes:
            raise self.failure(
                ResponseTooLargeError(
                    f"a line of the stream is longer than max_line_bytes={self._max_line_bytes:,}"
                )
            )
        self._pending = pending + (b"\r" if half else b"")
        if chunk is None and parts and not parts[-1]:
            parts.pop()
        return [part.decode("utf-8", "replace") for part in parts]

    def failure(self, exc: BaseException) -> HttpCallError:
        """``exc`` of the HTTP stack (or of these bounds) as an :class:`HttpCallError`."""
        total = "" if self._total is None else f", {self._total:g} s in all"
        what = f"the stream stalled (at most {self.idle_timeout:g} s between chunks{total})"
        failure = _failure(exc, self.url, what)
        if isinstance(failure, HttpCallError):
            return failure
        return HttpCallError(f"{self.url}: {exc!r}", kind=HttpErrorKind.CONNECTION, url=self.url)


_RETRIED_KINDS = frozenset(
    {HttpErrorKind.CONNECTION, HttpErrorKind.TIMEOUT, HttpErrorKind.PROTOCOL}
)
"""Failures worth another attempt: lost connections (a server that closes without
answering is a protocol error to httpx), timeouts."""


def _retried(exc: Exception) -> bool:
    return isinstance(exc, HttpCallError) and exc.kind in _RETRIED_KINDS


def _counted(exc: Exception, attempts: int) -> BaseException:
    """The failure of the last attempt, with the number of attempts made."""
    if isinstance(exc, HttpCallError):
        exc.attempts = attempts
    return exc


_STREAM_FAILURES = (httpx.TransportError, httpx.DecodingError, OSError)


class _StreamBase:
    """An answer whose body is read as it arrives (see :meth:`HttpClient.stream`).

    ``reply`` holds the status, headers, final URL and attempts; for an answer that is
    not a 2xx its ``body`` is the whole body (read within the call's deadline), which is
    then also all the stream yields."""

    def __init__(self, reply: HttpReply, response: httpx.Response | None, budget: _Budget) -> None:
        self.reply = reply
        self._response = response
        self._budget = budget


class HttpStream(_StreamBase):
    """A streamed answer of :meth:`HttpClient.stream`; each chunk within the stream's
    bounds, else :class:`HttpCallError` (``TIMEOUT`` or ``TOO_LARGE``)."""

    def iter_bytes(self) -> Iterator[bytes]:
        """The body's chunks as they arrive (content encoding undone)."""
        if self._response is None:
            yield self._budget.took(self.reply.body)
            return
        chunks = self._response.iter_bytes()
        while True:
            token = _DEADLINE.set(time.monotonic() + self._budget.next_timeout())
            try:
                chunk = next(chunks, None)
            except _STREAM_FAILURES as exc:
                raise self._budget.failure(exc) from exc
            finally:
                _DEADLINE.reset(token)
            if chunk is None:
                return
            yield self._budget.took(chunk)

    def iter_lines(self) -> Iterator[str]:
        """The body's lines (UTF-8, without line endings), each within ``max_line_bytes``."""
        for chunk in self.iter_bytes():
            yield from self._budget.lines(chunk)
        yield from self._budget.lines(None)

    def read(self) -> bytes:
        """The rest of the body, whole."""
        return b"".join(self.iter_bytes())


class AsyncHttpStream(_StreamBase):
    """:class:`HttpStream` for ``async for``."""

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body's chunks as they arrive (content encoding undone)."""
        if self._response is None:
            yield self._budget.took(self.reply.body)
            return
        chunks = self._response.aiter_bytes()
        while True:
            try:
                async with asyncio.timeout(self._budget.next_timeout()):
                    chunk = await anext(chunks, None)
            except _STREAM_FAILURES as exc:
                raise self._budget.failure(exc) from exc
            if chunk is None:
                return
            yield self._budget.took(chunk)

    async def aiter_lines(self) -> AsyncIterator[str]:
        """The body's lines (UTF-8, without line endings), each within ``max_line_bytes``."""
        async for chunk in self.aiter_bytes():
            for line in self._budget.lines(chunk):
                yield line
        for line in self._budget.lines(None):
            yield line

    async def aread(self) -> bytes:
        """The rest of the body, whole."""
        return b"".join([chunk async for chunk in self.aiter_bytes()])


async def _aread_within(response: httpx.Response, max_bytes: int) -> bytes:
    """The body of ``response``, refused past ``max_bytes`` (the caller bounds the time)."""
    parts: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise ResponseTooLargeError(f"the answer is larger than max_bytes={max_bytes:,}")
        parts.append(chunk)
    return b"".join(parts)


class HttpClient(_Calls[httpx.Client]):
    """Bounded HTTP calls (see the module doc) through one pooled httpx client.

    ``egress``: where calls may go (:data:`DEFAULT_EGRESS_POLICY`, public addresses only,
    for URLs from documents, search results or models; ``ALLOW_ALL`` for an endpoint of
    the caller's own configuration). ``max_redirects``: hops followed per call
    (``follow_redirects=False``: a redirect status is an answer like any other).
    ``max_bytes``: the cap on one body. ``verify``: TLS verification (``True``,
    ``False`` or an ``ssl.SSLContext``). ``client``: an ``httpx.Client`` of the caller's
    to send through instead (only with a policy that allows every address, since its
    transport cannot be pinned; the deadline then bounds what httpx's own timeouts and
    the body read can bound); it stays the caller's to close.
    """

    def _new_client(self, egress: EgressPolicy, verify: ssl.SSLContext | bool) -> httpx.Client:
        return httpx.Client(transport=_PinnedTransport(egress, verify), trust_env=False)

    def request(
        self, method: str, url: str, *, timeout: float, **options: Unpack[_CallOptions]
    ) -> HttpReply:
        """The complete answer to ``method url``, redirects followed, each attempt within
        ``timeout`` seconds as a whole. Error statuses are answers (see
        :func:`status_kind`); with ``retry`` (a :class:`~ragloom.core.retry.RetryPolicy`),
        408/429/5xx (or what ``retryable`` says), lost connections, broken answers and
        timeouts are retried first. ``headers``, ``params``, ``json`` and ``content``
        make the request as in httpx. Raises
        :class:`~ragloom.core.errors.EgressRefusedError` for a refused URL, address or
        redirect, :class:`HttpCallError` when no complete answer came."""
        steps = self._request_steps(method, url, timeout, options)
        return run_steps(steps, self._perform)[1]

    @contextmanager
    def stream(
        self, method: str, url: str, *, timeout: float, **options: Unpack[_StreamOptions]
    ) -> Iterator[HttpStream]:
        """:meth:`request` whose 2xx body is read as it arrives: ``timeout`` bounds each
        attempt up to the headers (retried as :meth:`request` does; an error status is
        read whole), then each chunk must come within ``idle_timeout`` (``timeout`` by
        default) and all of them within ``total_timeout`` (no limit by default); the body
        is capped at ``max_bytes``, each line at ``max_line_bytes``
        (:data:`DEFAULT_MAX_LINE_BYTES` by default). The connection is released when the
        block ends."""
        steps, budget = self._stream_steps(method, url, timeout, **options)
        hop, reply = run_steps(steps, self._perform)
        try:
            yield HttpStream(reply, hop.response, budget)
        finally:
            if hop.response is not None:
                hop.response.close()

    def _closer(self) -> Callable[[], None]:
        return self._client.close

    def _perform(self, step: _Step) -> Any:
        """One step of a call, on this thread."""
        if isinstance(step, Pause):
            step.policy.sleep(step.seconds)
            return None
        token = _DEADLINE.set(step.deadline)
        try:
            response = self._client.send(_timed(step.request, step.deadline), stream=True)
            following = self._following(response)
            if following is None and step.keep_open and response.is_success:
                return dataclasses.replace(_hop(response, None, b""), response=response)
            try:
                body = b""
                if following is None:
                    body = read_within(
                        response.iter_bytes(), deadline=step.deadline, max_bytes=self.max_bytes
                    )
            finally:
                response.close()
            return _hop(response, following, body)
        finally:
            _DEADLINE.reset(token)

    def close(self) -> None:
        """Release the pooled connections (not those of a ``client`` passed in)."""
        if self._release is not None:
            self._release()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class AsyncHttpClient(_Calls[httpx.AsyncClient]):
    """:class:`HttpClient` on asyncio: the same arguments (``client`` is an
    ``httpx.AsyncClient``), the same bounds; ``asyncio.timeout`` ends each attempt at its
    deadline. Its pooled connections belong to the event loop that first used it."""

    async def request(
        self, method: str, url: str, *, timeout: float, **options: Unpack[_CallOptions]
    ) -> HttpReply:
        """:meth:`HttpClient.request`, awaited."""
        steps = self._request_steps(method, url, timeout, options)
        return (await arun_steps(steps, self._perform))[1]

    @asynccontextmanager
    async def stream(
        self, method: str, url: str, *, timeout: float, **options: Unpack[_StreamOptions]
    ) -> AsyncIterator[AsyncHttpStream]:
        """:meth:`HttpClient.stream` for ``async with``."""
        steps, budget = self._stream_steps(method, url, timeout, **options)
        hop, reply = await arun_steps(steps, self._perform)
        try:
            yield AsyncHttpStream(reply, hop.response, budget)
        finally:
            if hop.response is not None:
                await hop.response.aclose()

    def _new_client(self, egress: EgressPolicy, verify: ssl.SSLContext | bool) -> httpx.AsyncClient:
        transport = _AsyncPinnedTransport(egress, verify)
        self._backend = transport.backend
        return httpx.AsyncClient(transport=transport, trust_env=False)

    def _closer(self) -> Callable[[], None]:
        # an await is not possible there: the loop closes its connections, or they close now
        return self._backend.abandon

    async def _perform(self, step: _Step) -> Any:
        """One step of a call, on the event loop."""
        if isinstance(step, Pause):
            await step.policy.async_sleep(step.seconds)
            return None
        async with asyncio.timeout(step.deadline - time.monotonic()):
            response = await self._client.send(_timed(step.request, step.deadline), stream=True)
            following = self._following(response)
            if following is None and step.keep_open and response.is_success:
                return dataclasses.replace(_hop(response, None, b""), response=response)
            try:
                body = b"" if following else await _aread_within(response, self.max_bytes)
            finally:
                await response.aclose()
            return _hop(response, following, body)

    async def aclose(self) -> None:
        """Release the pooled connections (not those of a ``client`` passed in)."""
        if self._release is not None and self._release.detach() is not None:
            await self._client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
