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
- **retries** (optional): 408/429/5xx and lost connections by a
  :class:`~ragloom.core.retry.RetryPolicy`, honouring ``Retry-After``
  (:func:`~ragloom.core.retry.retry_delay`);
- **error kinds**: :func:`status_kind` maps an HTTP status to an :class:`HttpErrorKind`,
  the failures of the call itself raise :class:`HttpCallError` with its kind, and
  refusals raise :class:`~ragloom.core.errors.EgressRefusedError`.

httpx keeps the pooling and the HTTP parsing; environment proxies are not used (a proxy
would hide the address the egress policy checks).
"""

from __future__ import annotations

import contextvars
import dataclasses
import email.message
import enum
import functools
import json
import math
import select
import socket
import ssl
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

import httpcore
import httpx

from ragloom.core.bounded_read import (
    DEFAULT_MAX_RESPONSE_BYTES,
    ResponseTooLargeError,
    read_within,
)
from ragloom.core.errors import EgressRefusedError, InvalidArgumentError, RagloomError
from ragloom.core.kit.egress import DEFAULT_EGRESS_POLICY, EgressPolicy
from ragloom.core.retry import RetryPolicy, retry_delay

__all__ = [
    "DEFAULT_MAX_REDIRECTS",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "HttpCallError",
    "HttpClient",
    "HttpErrorKind",
    "HttpReply",
    "status_kind",
]

DEFAULT_MAX_REDIRECTS = 10
"""Redirect hops followed by one call before it fails."""

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

    ``kind`` says which; ``url`` is the URL asked for. Callers wrap it in their own error
    (``DocumentLoadError``, ``WebSearchError``, ...) with ``from``."""

    def __init__(self, message: str, *, kind: HttpErrorKind, url: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.url = url


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
            for option in socket_options or ():
                sock.setsockopt(*option)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return _DeadlineStream(sock)


class _PinnedTransport(httpx.HTTPTransport):
    """httpx's transport (pooling, HTTP/1.1) whose connections come from
    :class:`_PinnedBackend` (httpx takes no network backend, so the pool is replaced)."""

    def __init__(self, egress: EgressPolicy, verify: ssl.SSLContext | bool) -> None:
        context = httpx.create_ssl_context(verify=verify, trust_env=False)
        super().__init__(verify=context, trust_env=False)
        self._pool = httpcore.ConnectionPool(
            ssl_context=context, network_backend=_PinnedBackend(egress)
        )


class HttpClient:
    """Bounded HTTP calls (see the module doc) through one pooled httpx client.

    ``egress``: where calls may go (:data:`DEFAULT_EGRESS_POLICY`, public addresses only,
    for URLs from documents, search results or models; ``ALLOW_ALL`` for an endpoint of
    the caller's own configuration). ``max_redirects``: hops followed per call.
    ``max_bytes``: the cap on one body. ``verify``: TLS verification (``True``, ``False``
    or an ``ssl.SSLContext``). ``client``: an ``httpx.Client`` of the caller's to send
    through instead (only with a policy that allows every address, since its transport
    cannot be pinned; the deadline then bounds what httpx's own timeouts and the body
    read can bound); it stays the caller's to close.
    """

    def __init__(
        self,
        *,
        egress: EgressPolicy = DEFAULT_EGRESS_POLICY,
        max_redirects: int = DEFAULT_MAX_REDIRECTS,
        max_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        verify: ssl.SSLContext | bool = True,
        client: httpx.Client | None = None,
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
        self._own_client = client is None
        self._client = client or httpx.Client(
            transport=_PinnedTransport(egress, verify), trust_env=False
        )

    def request(
        self,
        method: str,
        url: str,
        *,
        timeout: float,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        content: bytes | None = None,
        retry: RetryPolicy | None = None,
    ) -> HttpReply:
        """The complete answer to ``method url``, redirects followed, each attempt within
        ``timeout`` seconds as a whole. Error statuses are answers (see
        :func:`status_kind`); with ``retry``, 408/429/5xx and lost connections are retried
        first. Raises :class:`~ragloom.core.errors.EgressRefusedError` for a refused URL,
        address or redirect, :class:`HttpCallError` when no complete answer came."""
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise InvalidArgumentError(f"timeout must be a number > 0, got {timeout!r}")
        if math.isinf(timeout):
            raise InvalidArgumentError("timeout must be finite: it bounds the whole call")
        self.egress.check_url(url)
        build = functools.partial(  # a fresh request for every attempt
            self._client.build_request,
            method,
            url,
            headers=headers,
            params=params,
            json=json,
            content=content,
        )
        policy = retry or RetryPolicy(max_retries=0)
        attempts = 0
        while True:
            attempts += 1
            try:
                reply = self._attempt(build(), url, float(timeout))
            except HttpCallError as exc:
                if exc.kind not in (HttpErrorKind.CONNECTION, HttpErrorKind.TIMEOUT) or (
                    attempts > policy.max_retries
                ):
                    raise
                policy.sleep(policy.backoff(attempts - 1))
                continue
            delay, note = retry_delay(policy, reply.status, reply.headers, attempts - 1)
            if delay is None:
                return dataclasses.replace(reply, attempts=attempts, retry_note=note)
            policy.sleep(delay)

    def _attempt(self, request: httpx.Request, url: str, timeout: float) -> HttpReply:
        """One attempt: the request and its redirects, all within one deadline."""
        deadline = time.monotonic() + timeout
        token = _DEADLINE.set(deadline)
        redirects = 0
        try:
            while True:
                left = max(deadline - time.monotonic(), 1e-3)
                request.extensions["timeout"] = httpx.Timeout(left).as_dict()
                response = self._client.send(request, stream=True)
                try:
                    following = response.next_request
                    if following is None:
                        body = read_within(
                            response.iter_bytes(), deadline=deadline, max_bytes=self.max_bytes
                        )
                        return HttpReply(
                            response.status_code,
                            response.headers,
                            body,
                            str(request.url),
                            redirects,
                        )
                finally:
                    response.close()
                if redirects >= self.max_redirects:
                    raise HttpCallError(
                        f"{url}: more than max_redirects={self.max_redirects} redirects "
                        f"(the last to {_shown(following.url)})",
                        kind=HttpErrorKind.TOO_MANY_REDIRECTS,
                        url=url,
                    )
                source, request, redirects = request, following, redirects + 1
                self.egress.check_redirect(str(source.url), str(request.url))
        except (httpx.TimeoutException, TimeoutError) as exc:
            hops = f", {redirects} redirect(s) followed" if redirects else ""
            raise HttpCallError(
                f"{url}: timed out: no complete answer within {timeout:g} s (the whole call: "
                f"connect, headers, redirects and body{hops})",
                kind=HttpErrorKind.TIMEOUT,
                url=url,
            ) from exc
        except EgressRefusedError as exc:
            if not redirects:
                raise
            raise EgressRefusedError(
                f"{url}: redirect {redirects} to {_shown(request.url)} refused: {exc}"
            ) from exc
        except ResponseTooLargeError as exc:
            raise HttpCallError(f"{url}: {exc}", kind=HttpErrorKind.TOO_LARGE, url=url) from exc
        except (httpx.ProtocolError, httpx.DecodingError, httpx.UnsupportedProtocol) as exc:
            raise HttpCallError(
                f"{url}: broken answer: {exc!r}", kind=HttpErrorKind.PROTOCOL, url=url
            ) from exc
        except (httpx.TransportError, OSError) as exc:
            raise HttpCallError(
                f"{url}: cannot fetch: {exc!r}", kind=HttpErrorKind.CONNECTION, url=url
            ) from exc
        finally:
            _DEADLINE.reset(token)

    def close(self) -> None:
        """Release the pooled connections (not those of a ``client`` passed in)."""
        if self._own_client:
            self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
