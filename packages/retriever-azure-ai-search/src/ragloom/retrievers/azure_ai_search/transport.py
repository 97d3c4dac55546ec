"""azure-core transports on core's bounded HTTP client (:mod:`ragloom.core.kit.http`).

azure-core's own transports (requests, aiohttp) bound each socket read, not a call, and
read any body whole: a server dribbling its answer holds them for as long as it likes.
:class:`BoundedTransport` and :class:`AsyncBoundedTransport` send every request of the
Azure clients through :class:`~ragloom.core.kit.http.HttpClient` /
:class:`~ragloom.core.kit.http.AsyncHttpClient` instead (httpx; no aiohttp needed), so:

- **a whole-call deadline**: inside :func:`within` (the store wraps each client call in
  it), every request and every retry pause of azure-core's retry policy gets only the time
  left before the deadline; outside it, each request gets the transport's ``timeout``;
- **a byte cap**: a body past ``max_bytes`` fails while it arrives.

A failed call becomes the azure-core error its transports raise (a timeout
``ServiceResponseTimeoutError``, a lost connection ``ServiceRequestError``, anything else
``ServiceResponseError``), so the clients' retry policy and the callers' error handling
see what they always saw. The endpoint is the caller's own configuration: any address is
allowed (``ALLOW_ALL``); redirects are not followed (Azure AI Search sends none).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

from azure.core.credentials import AzureKeyCredential
from azure.core.exceptions import (
    AzureError,
    ServiceRequestError,
    ServiceResponseError,
    ServiceResponseTimeoutError,
)
from azure.core.pipeline.transport import AsyncHttpTransport, HttpTransport
from azure.core.rest import HttpRequest
from azure.core.rest._http_response_impl import HttpResponseImpl
from azure.core.rest._http_response_impl_async import AsyncHttpResponseImpl
from azure.core.utils import CaseInsensitiveDict

from ragloom.core.errors import InvalidArgumentError
from ragloom.core.kit.egress import ALLOW_ALL
from ragloom.core.kit.http import (
    DEFAULT_MAX_RESPONSE_BYTES,
    AsyncHttpClient,
    HttpCallError,
    HttpClient,
    HttpErrorKind,
    HttpReply,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "AsyncBoundedTransport",
    "BoundedTransport",
    "Bounds",
    "has_async_form",
    "within",
]

DEFAULT_TIMEOUT = 60.0
"""Seconds one client call may take as a whole (retries and pages included)."""

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "ragloom_azure_search_deadline", default=None
)


def _checked_timeout(value: object, what: str = "timeout") -> float:
    """``value`` as seconds: a finite number > 0; else an InvalidArgumentError naming it."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e9:
        raise InvalidArgumentError(f"{what} must be a number of seconds > 0, got {value!r}")
    return float(value)


def has_async_form(credential: object) -> bool:
    """Whether an ``aio`` client can use ``credential``: a key, or an async token
    credential (a sync token credential's ``get_token`` cannot be awaited)."""
    return isinstance(credential, AzureKeyCredential) or inspect.iscoroutinefunction(
        getattr(credential, "get_token", None)
    )


@contextlib.contextmanager
def within(seconds: float) -> Iterator[None]:
    """Every request sent by a bounded transport in this block (this thread, this task)
    ends ``seconds`` from now at the latest (an enclosing, earlier deadline stays)."""
    end = time.monotonic() + seconds
    outer = _DEADLINE.get()
    token = _DEADLINE.set(end if outer is None else min(outer, end))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _time_left(default: float, url: str) -> float:
    """The seconds a request may take: up to the deadline of :func:`within`, else
    ``default``; a ``ServiceResponseTimeoutError`` once the deadline has passed."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return default
    left = deadline - time.monotonic()
    if left <= 0:
        raise ServiceResponseTimeoutError(f"{url}: the call's deadline has passed")
    return left


def _pause(seconds: float) -> float:
    """A retry pause cut to the time left before the deadline (the next request then
    fails at once): a ``Retry-After`` of a day does not hold the call."""
    deadline = _DEADLINE.get()
    return seconds if deadline is None else max(0.0, min(seconds, deadline - time.monotonic()))


def _request_args(request: Any) -> tuple[str, str, dict[str, str], bytes | None]:
    """Method, URL, headers and body of an azure-core request."""
    if not isinstance(request, HttpRequest):
        raise InvalidArgumentError(
            f"the bounded transport sends azure.core.rest.HttpRequest, got {type(request).__name__}"
        )
    body = request.content
    if isinstance(body, str):
        body = body.encode("utf-8")
    elif body is not None and not isinstance(body, bytes):
        raise InvalidArgumentError(
            f"the bounded transport sends str or bytes bodies, got {type(body).__name__}"
        )
    return request.method, request.url, dict(request.headers), body


def _azure_error(exc: HttpCallError) -> AzureError:
    """A failed call as the azure-core error its own transports raise."""
    if exc.kind is HttpErrorKind.TIMEOUT:
        return ServiceResponseTimeoutError(str(exc), error=exc)
    if exc.kind is HttpErrorKind.CONNECTION:
        return ServiceRequestError(str(exc), error=exc)
    return ServiceResponseError(str(exc), error=exc)


def _response_args(request: HttpRequest, reply: HttpReply) -> dict[str, Any]:
    """The keyword arguments of an azure-core response to ``request`` (the body already
    read and decoded, so its content-encoding is dropped)."""
    headers = {k: v for k, v in reply.headers.items() if k.lower() != "content-encoding"}
    return {
        "request": request,
        "internal_response": reply,
        "status_code": reply.status,
        "reason": "",
        "headers": CaseInsensitiveDict(headers),
        "content_type": reply.headers.get("content-type"),
        "stream_download_generator": None,
    }


class _Response(HttpResponseImpl):
    """A complete answer (the body read within the bounds) as an azure-core response."""

    def __init__(self, request: HttpRequest, reply: HttpReply) -> None:
        super().__init__(**_response_args(request, reply))
        self._content = reply.body

    def close(self) -> None:
        self._is_closed = True  # nothing held: the body is in memory


class _AsyncResponse(AsyncHttpResponseImpl):
    """:class:`_Response` for the async clients."""

    def __init__(self, request: HttpRequest, reply: HttpReply) -> None:
        super().__init__(**_response_args(request, reply))
        self._content = reply.body

    async def close(self) -> None:
        self._is_closed = True


class BoundedTransport(HttpTransport):  # type: ignore[type-arg]
    """The sync Azure clients' transport (see the module docstring)."""

    def __init__(
        self, *, timeout: float = DEFAULT_TIMEOUT, max_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    ) -> None:
        self.timeout = _checked_timeout(timeout)
        self._http = HttpClient(egress=ALLOW_ALL, max_bytes=max_bytes, follow_redirects=False)

    def send(self, request: HttpRequest, **kwargs: Any) -> _Response:
        method, url, headers, body = _request_args(request)
        try:
            reply = self._http.request(
                method, url, timeout=_time_left(self.timeout, url), headers=headers, content=body
            )
        except HttpCallError as exc:
            raise _azure_error(exc) from exc
        return _Response(request, reply)

    def sleep(self, duration: float) -> None:
        time.sleep(_pause(duration))

    def open(self) -> None:
        """Nothing to open: the pool connects on the first request."""

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> BoundedTransport:
        return self

    def __exit__(self, *exc_info: object) -> None:
        """The client's ``close`` ends here: the pool is released."""
        self.close()


class AsyncBoundedTransport(AsyncHttpTransport):  # type: ignore[type-arg]
    """:class:`BoundedTransport` for the async Azure clients (``azure.search.documents.aio``);
    its pool belongs to the event loop that first used it."""

    def __init__(
        self, *, timeout: float = DEFAULT_TIMEOUT, max_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    ) -> None:
        self.timeout = _checked_timeout(timeout)
        self._http = AsyncHttpClient(egress=ALLOW_ALL, max_bytes=max_bytes, follow_redirects=False)

    async def send(self, request: HttpRequest, **kwargs: Any) -> _AsyncResponse:
        method, url, headers, body = _request_args(request)
        try:
            reply = await self._http.request(
                method, url, timeout=_time_left(self.timeout, url), headers=headers, content=body
            )
        except HttpCallError as exc:
            raise _azure_error(exc) from exc
        return _AsyncResponse(request, reply)

    async def sleep(self, duration: float) -> None:
        await asyncio.sleep(_pause(duration))

    async def open(self) -> None:
        """Nothing to open: the pool connects on the first request."""

    async def close(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncBoundedTransport:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """The client's ``close`` ends here: the pool is released."""
        await self.close()


@dataclass(frozen=True)
class Bounds:
    """The bounds of a component's Azure calls: each call within ``timeout`` seconds as a
    whole, each answer's body within ``max_bytes`` (checked here, named as the store's
    and the retriever's options)."""

    timeout: float = DEFAULT_TIMEOUT
    max_bytes: int = DEFAULT_MAX_RESPONSE_BYTES

    def __post_init__(self) -> None:
        object.__setattr__(self, "timeout", _checked_timeout(self.timeout))
        if type(self.max_bytes) is not int or self.max_bytes < 1:
            raise InvalidArgumentError(
                f"max_response_bytes must be an int >= 1, got {self.max_bytes!r}"
            )

    def transport(self) -> BoundedTransport:
        """A new transport for a sync client."""
        return BoundedTransport(timeout=self.timeout, max_bytes=self.max_bytes)

    def async_transport(self) -> AsyncBoundedTransport:
        """A new transport for an ``aio`` client (of the loop that first uses it)."""
        return AsyncBoundedTransport(timeout=self.timeout, max_bytes=self.max_bytes)

    @contextlib.contextmanager
    def call(self) -> Iterator[None]:
        """One sync call: its requests and retry pauses end at the deadline."""
        with within(self.timeout):
            yield

    @contextlib.asynccontextmanager
    async def acall(self) -> AsyncIterator[None]:
        """One async call: the transport's deadline, and ``asyncio.timeout`` for any wait
        outside a request."""
        with within(self.timeout):
            async with asyncio.timeout(self.timeout):
                yield

    def reason(self, exc: Exception) -> str:
        """What went wrong, for an error message (``asyncio.timeout``'s error has no text)."""
        if isinstance(exc, TimeoutError):
            return f"no answer within the timeout of {self.timeout:g} s"
        return str(exc)
