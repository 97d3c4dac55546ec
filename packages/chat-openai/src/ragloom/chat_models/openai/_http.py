"""The HTTP layer both models share: configuration, retries with backoff, errors.

One :class:`ApiClient` per model holds the base URL, the headers (API key included) and
the retry policy. It posts JSON and opens streams, sync (one pooled ``httpx.Client``,
shared by threads) and async (an ``httpx.AsyncClient`` per call unless one is given:
an async client is bound to the event loop that first used it). Retried: HTTP 408, 409,
429 and 5xx, and transport failures (refused, reset, timeout) before an answer arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import ssl
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from types import TracebackType
from typing import Any, Self

import httpx

from ragloom.chat_models.openai.errors import (
    OpenAiAuthenticationError,
    OpenAiConnectionError,
    OpenAiError,
    OpenAiNotFoundError,
    OpenAiRateLimitError,
    OpenAiResponseError,
    OpenAiStatusError,
    OpenAiTimeoutError,
    chat_variant,
)
from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError
from ragloom.core.retry import RetryPolicy, retry_delay

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_RESPONSE_BYTES = 100 * 1024 * 1024
"""The largest answer body read (a server sending more gets an error, not all your RAM)."""
_DROPPED_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})
_MAX_CONNECT_TIMEOUT = 10.0
_EXCERPT = 300

try:
    _VERSION = version("ragloom-chat-openai")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    _VERSION = "0"
USER_AGENT = f"ragloom-chat-openai/{_VERSION}"


@cache
def _ssl_context() -> ssl.SSLContext:
    """The default verifying SSL context, built once (loading the CA bundle takes ~0.2 s).

    Shared by every client this package creates, so an async call, which opens a client
    of its own, does not pay for it each time.
    """
    return httpx.create_ssl_context()


def resolve_api_key(api_key: str | None, env_vars: tuple[str, ...]) -> tuple[str | None, str]:
    """The API key and where it came from (for error messages; never the key itself).

    ``None`` looks the key up in ``env_vars`` (first set one wins); ``""`` means no key.
    Surrounding whitespace (a newline from a key file) is dropped; a key that cannot be
    sent in an HTTP header is a ValueError naming where it came from.
    """
    if api_key is not None:
        if not isinstance(api_key, str):
            raise InvalidArgumentTypeError(
                f"api_key must be str or None, got {type(api_key).__name__}"
            )
        key = api_key.strip()
        if not key:
            return None, "no API key (api_key='')"
        return _checked_key(key, "the api_key argument"), "the api_key argument"
    for name in env_vars:
        value = os.environ.get(name, "").strip()
        if value:
            return _checked_key(value, f"${name}"), f"${name}"
    return None, "no API key (api_key argument, " + ", ".join(f"${n}" for n in env_vars) + ")"


def _checked_key(key: str, source: str) -> str:
    if not (key.isascii() and key.isprintable()) or any(c.isspace() for c in key):
        raise InvalidArgumentError(
            f"the API key from {source} contains whitespace or non-ASCII characters and "
            "cannot be sent in an HTTP header; check it for a copy-and-paste error"
        )
    return key


def normalize_base_url(base_url: str) -> str:
    """``base_url`` without trailing slashes; ValueError unless it is an http(s) URL."""
    if not isinstance(base_url, str):
        raise InvalidArgumentTypeError(f"base_url must be str, got {type(base_url).__name__}")
    url = base_url.strip().rstrip("/")
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise InvalidArgumentError(f"base_url {base_url!r} is not a valid URL: {exc}") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise InvalidArgumentError(
            f"base_url must be an http:// or https:// URL such as http://localhost:8000/v1, "
            f"got {base_url!r}"
        )
    return url


def make_timeout(timeout: float | httpx.Timeout) -> httpx.Timeout:
    """An httpx timeout: ``timeout`` seconds per read/write, connecting at most 10 s."""
    if isinstance(timeout, httpx.Timeout):
        return timeout
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or not timeout > 0:
        raise InvalidArgumentError(f"timeout must be a positive number of seconds, got {timeout!r}")
    return httpx.Timeout(float(timeout), connect=min(float(timeout), _MAX_CONNECT_TIMEOUT))


class ApiClient:
    """Posts JSON to one OpenAI-compatible server and opens SSE streams (internal).

    ``subject`` names the model in every error ("chat model 'gpt-4o-mini'"); ``chat``
    makes the errors the chat variants (also :class:`ChatModelError`).
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None,
        key_source: str,
        model_name: str,
        subject: str,
        chat: bool,
        timeout: httpx.Timeout,
        retry: RetryPolicy,
        organization: str | None,
        headers: Mapping[str, str] | None,
        http_client: httpx.Client | None,
        async_http_client: httpx.AsyncClient | None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        if (
            isinstance(max_response_bytes, bool)
            or not isinstance(max_response_bytes, int)
            or max_response_bytes <= 0
        ):
            raise InvalidArgumentError(
                f"max_response_bytes must be a positive int, got {max_response_bytes!r}"
            )
        self.max_response_bytes = max_response_bytes
        self.base_url = base_url
        self.model_name = model_name
        self.subject = subject
        self.timeout = timeout
        self.retry = retry
        self._api_key = api_key
        self._key_source = key_source
        self._chat = chat
        self._headers: dict[str, str] = {"User-Agent": USER_AGENT}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        if organization:
            self._headers["OpenAI-Organization"] = organization
        for name, value in (headers or {}).items():
            if not isinstance(name, str) or not isinstance(value, str):
                raise InvalidArgumentTypeError(
                    f"headers must map str to str, got {name!r}: {value!r}"
                )
            self._headers[name] = value
        self._user_client = http_client
        self._user_async_client = async_http_client
        self._own_client: httpx.Client | None = None
        self._lock = threading.Lock()

    # -- clients -----------------------------------------------------------------------

    def _client(self) -> httpx.Client:
        if self._user_client is not None:
            return self._user_client
        client = self._own_client
        if client is None:
            with self._lock:
                if self._own_client is None:
                    self._own_client = httpx.Client(timeout=self.timeout, verify=_ssl_context())
                client = self._own_client
        return client

    @asynccontextmanager
    async def _async_client(self) -> AsyncIterator[httpx.AsyncClient]:
        if self._user_async_client is not None:
            yield self._user_async_client
            return
        async with httpx.AsyncClient(timeout=self.timeout, verify=_ssl_context()) as client:
            yield client

    def close(self) -> None:
        """Close the pooled connections this client opened (not a client passed in)."""
        with self._lock:
            client, self._own_client = self._own_client, None
        if client is not None:
            client.close()

    # -- requests ----------------------------------------------------------------------

    def url(self, path: str) -> str:
        return f"{self.base_url}/{path}"

    def _request(
        self, client: httpx.Client | httpx.AsyncClient, path: str, payload: Any, accept: str
    ) -> httpx.Request:
        headers = {**self._headers, "Accept": accept}
        return client.build_request(
            "POST", self.url(path), json=payload, headers=headers, timeout=self.timeout
        )

    def post(self, path: str, payload: Any) -> Any:
        """POST ``payload`` as JSON and return the decoded JSON answer (with retries)."""
        client = self._client()
        retries = 0
        while True:
            request = self._request(client, path, payload, "application/json")
            try:
                response = self.read_whole(client.send(request, stream=True))
            except httpx.TransportError as exc:
                if retries < self.retry.max_retries:
                    self.retry.sleep(self.retry.backoff(retries))
                    retries += 1
                    continue
                raise self.transport_error(exc, request, retries + 1) from exc
            if response.is_success:
                return self.decode(response)
            delay, note = self._retry_delay(response, retries)
            if delay is None:
                raise self.status_error(response, retries + 1, note)
            self.retry.sleep(delay)
            retries += 1

    async def apost(self, path: str, payload: Any) -> Any:
        """:meth:`post` for asyncio."""
        async with self._async_client() as client:
            retries = 0
            while True:
                request = self._request(client, path, payload, "application/json")
                try:
                    async with asyncio.timeout(self.deadline()):
                        response = await self.aread_whole(await client.send(request, stream=True))
                except TimeoutError as exc:
                    raise self.deadline_error(str(request.url)) from exc
                except httpx.TransportError as exc:
                    if retries < self.retry.max_retries:
                        await self.retry.async_sleep(self.retry.backoff(retries))
                        retries += 1
                        continue
                    raise self.transport_error(exc, request, retries + 1) from exc
                if response.is_success:
                    return self.decode(response)
                delay, note = self._retry_delay(response, retries)
                if delay is None:
                    raise self.status_error(response, retries + 1, note)
                await self.retry.async_sleep(delay)
                retries += 1

    @contextmanager
    def stream(self, path: str, payload: Any) -> Iterator[httpx.Response]:
        """POST and yield the response with its body unread; retries until it succeeds.

        Only the wait for the status line is retried: once the caller reads the body,
        partial answers may have been handed out, so failures there are the caller's.
        """
        client = self._client()
        retries = 0
        while True:
            request = self._request(client, path, payload, "text/event-stream")
            try:
                response = client.send(request, stream=True)
            except httpx.TransportError as exc:
                if retries < self.retry.max_retries:
                    self.retry.sleep(self.retry.backoff(retries))
                    retries += 1
                    continue
                raise self.transport_error(exc, request, retries + 1) from exc
            if response.is_success:
                break
            with contextlib.suppress(httpx.HTTPError, OpenAiError):  # the status matters most
                response = self.read_whole(response)
            delay, note = self._retry_delay(response, retries)
            if delay is None:
                raise self.status_error(response, retries + 1, note)
            self.retry.sleep(delay)
            retries += 1
        try:
            yield response
        finally:
            response.close()

    @asynccontextmanager
    async def astream(self, path: str, payload: Any) -> AsyncIterator[httpx.Response]:
        """:meth:`stream` for asyncio."""
        async with self._async_client() as client:
            retries = 0
            while True:
                request = self._request(client, path, payload, "text/event-stream")
                try:
                    response = await client.send(request, stream=True)
                except httpx.TransportError as exc:
                    if retries < self.retry.max_retries:
                        await self.retry.async_sleep(self.retry.backoff(retries))
                        retries += 1
                        continue
                    raise self.transport_error(exc, request, retries + 1) from exc
                if response.is_success:
                    break
                try:
                    async with asyncio.timeout(self.deadline()):
                        response = await self.aread_whole(response)
                except (httpx.HTTPError, OpenAiError, TimeoutError):
                    pass  # the status is what matters; the body is only for the message
                delay, note = self._retry_delay(response, retries)
                if delay is None:
                    raise self.status_error(response, retries + 1, note)
                await self.retry.async_sleep(delay)
                retries += 1
            try:
                yield response
            finally:
                await response.aclose()

    # -- bounded reading ---------------------------------------------------------------

    def deadline(self) -> float:
        """Seconds one attempt may take as a whole (the per-read ``timeout``; 120 s default)."""
        return float(self.timeout.read or DEFAULT_TIMEOUT)

    def check_size(self, response: httpx.Response, size: int) -> None:
        if size > self.max_response_bytes:
            url = str(response.request.url)
            raise self.error(
                OpenAiResponseError,
                f"{url} answered with more than max_response_bytes={self.max_response_bytes:,} "
                "bytes; refusing to read it all",
                url,
                response.status_code,
            )

    def _whole(self, response: httpx.Response, chunks: list[bytes]) -> httpx.Response:
        """A read response holding ``chunks`` (already decoded) as its body."""
        headers = [(k, v) for k, v in response.headers.multi_items() if k not in _DROPPED_HEADERS]
        return httpx.Response(
            response.status_code,
            headers=headers,
            content=b"".join(chunks),
            request=response.request,
        )

    def read_whole(self, response: httpx.Response) -> httpx.Response:
        """Read a streamed response's body within the deadline and ``max_response_bytes``.

        httpx's timeout bounds each read, so a server dripping a byte at a time could hold
        a call forever; the deadline bounds the attempt as a whole.
        """
        deadline = time.monotonic() + self.deadline()
        chunks: list[bytes] = []
        size = 0
        try:
            self.check_size(response, int(response.headers.get("content-length") or 0))
            for chunk in response.iter_bytes():
                size += len(chunk)
                self.check_size(response, size)
                chunks.append(chunk)
                if time.monotonic() > deadline:
                    raise self.deadline_error(str(response.request.url))
        finally:
            response.close()
        return self._whole(response, chunks)

    async def aread_whole(self, response: httpx.Response) -> httpx.Response:
        """:meth:`read_whole` for asyncio (the caller bounds the time)."""
        chunks: list[bytes] = []
        size = 0
        try:
            self.check_size(response, int(response.headers.get("content-length") or 0))
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                self.check_size(response, size)
                chunks.append(chunk)
        finally:
            await response.aclose()
        return self._whole(response, chunks)

    def deadline_error(self, url: str) -> OpenAiError:
        """The error for an answer not complete within the deadline."""
        return self.error(
            OpenAiTimeoutError,
            f"no complete answer from {url} within the timeout of {self.deadline():g} s "
            "(the server is sending too slowly); raise timeout= for slow models or use stream()",
            url,
        )

    # -- retries -----------------------------------------------------------------------

    def _retry_delay(self, response: httpx.Response, retries: int) -> tuple[float | None, str]:
        """How long to wait before retrying ``response``; ``None`` (and why) for no retry."""
        should = response.headers.get("x-should-retry", "").strip().lower()
        status = response.status_code
        retryable = status in (408, 409, 429) or status >= 500
        if should in ("true", "false"):
            retryable = should == "true"
        return retry_delay(self.retry, status, response.headers, retries, retryable=retryable)

    # -- decoding and errors -----------------------------------------------------------

    def error(
        self, kind: type[OpenAiError], message: str, url: str, status: int | None = None
    ) -> OpenAiError:
        """An error of ``kind`` (its chat variant for the chat model), key redacted."""
        cls = chat_variant(kind) if self._chat else kind
        return cls(self.redact(f"{self.subject}: {message}"), url=url, status_code=status)

    def redact(self, text: str) -> str:
        """``text`` with the API key replaced by ``***`` (servers may echo it).

        Keys shorter than 8 characters (placeholders such as ``"ollama"``) are left
        alone: replacing them would garble model names and URLs in the message.
        """
        if self._api_key and len(self._api_key) >= 8 and self._api_key in text:
            text = text.replace(self._api_key, "***")
        return text

    def decode(self, response: httpx.Response) -> Any:
        """The JSON body of a successful response; OpenAiResponseError when it is not JSON."""
        try:
            return json.loads(response.content)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            raise self.error(
                OpenAiResponseError,
                f"{response.request.url} answered HTTP {response.status_code} with a body that "
                f"is not JSON ({_content_type(response)}): {_excerpt(response)}",
                str(response.request.url),
                response.status_code,
            ) from exc

    def status_error(self, response: httpx.Response, attempts: int, note: str = "") -> OpenAiError:
        """The error for an HTTP error status, with the server's own message."""
        status = response.status_code
        url = str(response.request.url)
        detail = server_message(response)
        tried = f" after {attempts} attempts" if attempts > 1 else ""
        if status in (401, 403):
            what = "authentication failed" if status == 401 else "access denied"
            return self.error(
                OpenAiAuthenticationError,
                f"{what} (HTTP {status}) at {self.base_url}: {detail}. "
                f"API key used: {self._key_source}.",
                url,
                status,
            )
        if status == 404:
            hint = ""
            if not self.base_url.endswith("/v1"):
                hint = " (base_url does not end in /v1; most servers serve the API under /v1)"
            return self.error(
                OpenAiNotFoundError,
                f"not found (HTTP 404) at {url}: {detail}. Check the model name "
                f"{self.model_name!r} and that base_url {self.base_url} is the API root{hint}.",
                url,
                status,
            )
        if status == 429:
            return self.error(
                OpenAiRateLimitError,
                f"rate limited (HTTP 429) at {url}{tried}{note}: {detail}",
                url,
                status,
            )
        location = response.headers.get("location")
        moved = f" (redirects to {location}; use that as base_url)" if location else ""
        return self.error(
            OpenAiStatusError,
            f"HTTP {status} {response.reason_phrase} from {url}{tried}{note}{moved}: {detail}",
            url,
            status,
        )

    def transport_error(
        self, exc: httpx.TransportError, request: httpx.Request, attempts: int
    ) -> OpenAiError:
        """The error for a failure to reach the server or to receive its answer."""
        url = str(request.url)
        tried = f" ({attempts} attempts)" if attempts > 1 else ""
        reason = str(exc) or type(exc).__name__
        if isinstance(exc, httpx.ConnectTimeout):
            return self.error(
                OpenAiTimeoutError,
                f"could not connect to {self.base_url} within the timeout{tried}; "
                "is the server running and reachable?",
                url,
            )
        if isinstance(exc, httpx.TimeoutException):
            return self.error(
                OpenAiTimeoutError,
                f"no answer from {url} within the timeout of {self.timeout.read} s{tried}; "
                "raise timeout= for slow models or use stream()",
                url,
            )
        if isinstance(exc, httpx.ConnectError):
            return self.error(
                OpenAiConnectionError,
                f"cannot connect to {self.base_url}{tried}: {reason}; is the server running?",
                url,
            )
        return self.error(
            OpenAiConnectionError, f"the connection to {url} failed{tried}: {reason}", url
        )

    def stalled(self, url: str, received: int) -> OpenAiError:
        """The error for a stream without content for longer than the timeout."""
        return self.error(
            OpenAiTimeoutError,
            f"the stream from {url} stalled for more than {self.deadline():g} s after "
            f"{received} partial texts (keep-alive comments do not count)",
            url,
        )

    def stream_error(self, exc: httpx.HTTPError, url: str, received: int) -> OpenAiError:
        """The error for a stream that broke off after ``received`` partial texts."""
        if isinstance(exc, httpx.TimeoutException):
            return self.stalled(url, received)
        return self.error(
            OpenAiConnectionError,
            f"the stream from {url} broke off after {received} partial texts: "
            f"{str(exc) or type(exc).__name__}",
            url,
        )


def server_message(response: httpx.Response) -> str:
    """The server's explanation: ``error.message`` (OpenAI), ``error`` (Ollama) or the text."""
    try:
        body = json.loads(response.content)
    except (json.JSONDecodeError, UnicodeDecodeError, httpx.ResponseNotRead):
        body = None
    if isinstance(body, dict):
        error = body.get("error", body.get("detail", body.get("message")))
        if isinstance(error, dict):
            message = error.get("message")
            if isinstance(message, str) and message:
                code = error.get("code") or error.get("type")
                return _clip(f"{message} [{code}]" if isinstance(code, str) else message)
        elif isinstance(error, str) and error:
            return _clip(error)
    return _excerpt(response) if _has_body(response) else "(empty body)"


def _has_body(response: httpx.Response) -> bool:
    try:
        return bool(response.content)
    except httpx.ResponseNotRead:
        return False


def _content_type(response: httpx.Response) -> str:
    return response.headers.get("content-type") or "no content type"


def _excerpt(response: httpx.Response) -> str:
    try:
        text = response.content.decode("utf-8", "replace")
    except httpx.ResponseNotRead:
        return "(body not read)"
    return repr(_clip(text.strip()))


def _clip(text: str) -> str:
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "..."


class ApiModel:
    """What the chat and embedding models share: one :class:`ApiClient` and its lifetime."""

    _api: ApiClient

    @property
    def model_name(self) -> str:
        """The model requested from the server."""
        return self._api.model_name

    @property
    def base_url(self) -> str:
        """The API root, without a trailing slash."""
        return self._api.base_url

    def close(self) -> None:
        """Release the pooled connections (not those of an ``http_client`` passed in)."""
        self._api.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
