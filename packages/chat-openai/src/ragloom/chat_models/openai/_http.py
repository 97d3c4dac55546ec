"""The HTTP layer both models share: configuration, the calls, errors.

One :class:`ApiClient` per model holds the base URL, the headers (API key included) and
the retry policy, and calls through core's bounded call (:mod:`ragloom.core.kit.http`):
sync on one pooled :class:`~ragloom.core.kit.http.HttpClient` (shared by threads), async
on an :class:`~ragloom.core.kit.http.AsyncHttpClient` per call unless an
``httpx.AsyncClient`` is given (an async client is bound to the event loop that first
used it). The endpoint is the user's own configuration (every address allowed), but the
whole-call deadline and the byte cap apply. Retried: HTTP 408, 409, 429 and 5xx (or what
``x-should-retry`` says), and failures (refused, reset, timeout) before an answer.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from importlib.metadata import PackageNotFoundError, version
from types import TracebackType
from typing import Any, Self

import httpx

from ragloom.chat_models.openai.errors import OpenAiError
from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError
from ragloom.core.kit.egress import ALLOW_ALL
from ragloom.core.kit.http import (
    AsyncHttpClient,
    AsyncHttpStream,
    HttpCallError,
    HttpClient,
    HttpErrorKind,
    HttpReply,
    HttpStream,
    status_kind,
)
from ragloom.core.retry import RetryPolicy

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_TIMEOUT",
    "USER_AGENT",
    "ApiClient",
    "ApiModel",
    "RetryPolicy",
    "make_timeout",
    "normalize_base_url",
    "resolve_api_key",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_RESPONSE_BYTES = 100 * 1024 * 1024
"""The largest answer body read (a server sending more gets an error, not all your RAM)."""
_EXCERPT = 300

try:
    _VERSION = version("ragloom-chat-openai")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    _VERSION = "0"
USER_AGENT = f"ragloom-chat-openai/{_VERSION}"


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
    """An httpx timeout of ``timeout`` seconds (its ``read`` bounds each attempt as a whole)."""
    if isinstance(timeout, httpx.Timeout):
        return timeout
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or not timeout > 0:
        raise InvalidArgumentError(f"timeout must be a positive number of seconds, got {timeout!r}")
    return httpx.Timeout(float(timeout))


class ApiClient:
    """Posts JSON to one OpenAI-compatible server and opens SSE streams (internal).

    ``subject`` names the model in every error ("chat model 'gpt-4o-mini'"); every
    error is an ``error_type`` (the model's own error class).
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None,
        key_source: str,
        model_name: str,
        subject: str,
        error_type: type[OpenAiError],
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
        self._error_type = error_type
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
        self._own_client: HttpClient | None = None
        self._lock = threading.Lock()

    # -- clients -----------------------------------------------------------------------

    def _client(self) -> HttpClient:
        """The pooled sync client (opened again after :meth:`close`)."""
        with self._lock:
            if self._own_client is None:
                self._own_client = HttpClient(
                    egress=ALLOW_ALL,
                    max_bytes=self.max_response_bytes,
                    client=self._user_client,
                    follow_redirects=False,
                )
            return self._own_client

    def _async_client(self) -> AsyncHttpClient:
        """A client for this call's event loop (it closes only what it opened)."""
        return AsyncHttpClient(
            egress=ALLOW_ALL,
            max_bytes=self.max_response_bytes,
            client=self._user_async_client,
            follow_redirects=False,
        )

    def close(self) -> None:
        """Close the pooled connections this client opened (not a client passed in)."""
        with self._lock:
            client, self._own_client = self._own_client, None
        if client is not None:
            client.close()

    # -- requests ----------------------------------------------------------------------

    def url(self, path: str) -> str:
        return f"{self.base_url}/{path}"

    def _call(self, payload: Any, accept: str) -> dict[str, Any]:
        """The kit's call options for ``payload``: deadline, retries, headers."""
        return {
            "timeout": self.deadline(),
            "json": payload,
            "headers": {**self._headers, "Accept": accept},
            "retry": self.retry,
            "retryable": _should_retry,
        }

    def post(self, path: str, payload: Any) -> Any:
        """POST ``payload`` as JSON and return the decoded JSON answer (with retries)."""
        try:
            reply = self._client().request(
                "POST", self.url(path), **self._call(payload, "application/json")
            )
        except HttpCallError as exc:
            raise self.call_error(exc) from exc
        return self.answer(reply)

    async def apost(self, path: str, payload: Any) -> Any:
        """:meth:`post` for asyncio."""
        try:
            async with self._async_client() as http:
                reply = await http.request(
                    "POST", self.url(path), **self._call(payload, "application/json")
                )
        except HttpCallError as exc:
            raise self.call_error(exc) from exc
        return self.answer(reply)

    @contextmanager
    def stream(self, path: str, payload: Any) -> Iterator[HttpStream]:
        """POST and yield the 2xx answer with its body unread (retried until then).

        Only the wait for the status line is retried: once the caller reads the body,
        partial answers may have been handed out, so failures there are the caller's.
        The body must keep coming: each chunk within the timeout, all of it within
        ``max_response_bytes``.
        """
        try:
            with self._client().stream(
                "POST", self.url(path), **self._call(payload, "text/event-stream")
            ) as stream:
                self._check_open(stream.reply)
                yield stream
        except HttpCallError as exc:
            raise self.call_error(exc) from exc

    @asynccontextmanager
    async def astream(self, path: str, payload: Any) -> AsyncIterator[AsyncHttpStream]:
        """:meth:`stream` for asyncio."""
        try:
            async with (
                self._async_client() as http,
                http.stream(
                    "POST", self.url(path), **self._call(payload, "text/event-stream")
                ) as stream,
            ):
                self._check_open(stream.reply)
                yield stream
        except HttpCallError as exc:
            raise self.call_error(exc) from exc

    def _check_open(self, reply: HttpReply) -> None:
        if not reply.ok:
            raise self.status_error(reply)

    def deadline(self) -> float:
        """Seconds one attempt may take as a whole (the per-read ``timeout``; 120 s default)."""
        return float(self.timeout.read or DEFAULT_TIMEOUT)

    # -- decoding and errors -----------------------------------------------------------

    def error(
        self, kind: HttpErrorKind, message: str, url: str, status: int | None = None
    ) -> OpenAiError:
        """This model's error of ``kind`` about ``url``, key redacted."""
        return self._error_type(
            self.redact(f"{self.subject}: {message}"), url=url, status_code=status, kind=kind
        )

    def redact(self, text: str) -> str:
        """``text`` with the API key replaced by ``***`` (servers may echo it).

        Keys shorter than 8 characters (placeholders such as ``"ollama"``) are left
        alone: replacing them would garble model names and URLs in the message.
        """
        if self._api_key and len(self._api_key) >= 8 and self._api_key in text:
            text = text.replace(self._api_key, "***")
        return text

    def answer(self, reply: HttpReply) -> Any:
        """The JSON body of a 2xx ``reply``; the status error otherwise."""
        if not reply.ok:
            raise self.status_error(reply)
        return self.decode(reply)

    def decode(self, reply: HttpReply) -> Any:
        """The JSON body of a successful answer; a protocol error when it is not JSON."""
        try:
            return reply.json()
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise self.error(
                HttpErrorKind.PROTOCOL,
                f"{reply.url} answered HTTP {reply.status} with a body that "
                f"is not JSON ({_content_type(reply)}): {_excerpt(reply)}",
                reply.url,
                reply.status,
            ) from exc

    def status_error(self, reply: HttpReply) -> OpenAiError:
        """The error for an HTTP error status, with the server's own message."""
        status, url, note = reply.status, reply.url, reply.retry_note
        detail = server_message(reply)
        tried = f" after {reply.attempts} attempts" if reply.attempts > 1 else ""
        if status in (401, 403):
            what = "authentication failed" if status == 401 else "access denied"
            return self.error(
                HttpErrorKind.AUTHENTICATION,
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
                HttpErrorKind.STATUS,
                f"not found (HTTP 404) at {url}: {detail}. Check the model name "
                f"{self.model_name!r} and that base_url {self.base_url} is the API root{hint}.",
                url,
                status,
            )
        if status == 429:
            return self.error(
                HttpErrorKind.RATE_LIMIT,
                f"rate limited (HTTP 429) at {url}{tried}{note}: {detail}",
                url,
                status,
            )
        location = reply.headers.get("location")
        moved = f" (redirects to {location}; use that as base_url)" if location else ""
        reason = httpx.codes.get_reason_phrase(status)
        return self.error(
            status_kind(status),
            f"HTTP {status} {reason} from {url}{tried}{note}{moved}: {detail}",
            url,
            status,
        )

    def call_error(self, exc: HttpCallError, received: int | None = None) -> OpenAiError:
        """The error for a call (or, after ``received`` partial texts, a stream) that got
        no complete answer."""
        url = exc.url
        tried = f" ({exc.attempts} attempts)" if exc.attempts > 1 else ""
        cause = exc.__cause__
        reason = (str(cause) or type(cause).__name__) if cause is not None else str(exc)
        if exc.kind is HttpErrorKind.TOO_LARGE:
            return self.error(
                HttpErrorKind.TOO_LARGE,
                f"{url} answered with more than max_response_bytes="
                f"{self.max_response_bytes:,} bytes; refusing to read it all",
                url,
            )
        if exc.kind is HttpErrorKind.TIMEOUT and received is not None:
            return self.stalled(url, received)
        if exc.kind is HttpErrorKind.TIMEOUT and isinstance(cause, httpx.ConnectTimeout):
            return self.error(
                HttpErrorKind.TIMEOUT,
                f"could not connect to {self.base_url} within the timeout{tried}; "
                "is the server running and reachable?",
                url,
            )
        if exc.kind is HttpErrorKind.TIMEOUT:
            return self.error(
                HttpErrorKind.TIMEOUT,
                f"no complete answer from {url} within the timeout of {self.deadline():g} s"
                f"{tried} (the whole call: connect, headers and body); raise timeout= for "
                "slow models or use stream()",
                url,
            )
        if received is not None:
            return self.error(
                HttpErrorKind.CONNECTION,
                f"the stream from {url} broke off after {received} partial texts: {reason}",
                url,
            )
        if isinstance(cause, httpx.ConnectError):
            return self.error(
                HttpErrorKind.CONNECTION,
                f"cannot connect to {self.base_url}{tried}: {reason}; is the server running?",
                url,
            )
        return self.error(
            HttpErrorKind.CONNECTION, f"the connection to {url} failed{tried}: {reason}", url
        )

    def stalled(self, url: str, received: int) -> OpenAiError:
        """The error for a stream without content for longer than the timeout."""
        return self.error(
            HttpErrorKind.TIMEOUT,
            f"the stream from {url} stalled for more than {self.deadline():g} s after "
            f"{received} partial texts (keep-alive comments do not count)",
            url,
        )


def _should_retry(status: int, headers: Mapping[str, str]) -> bool:
    """OpenAI's rule: ``x-should-retry`` when the server sends it, else 408, 409, 429, 5xx."""
    should = headers.get("x-should-retry", "").strip().lower()
    if should in ("true", "false"):
        return should == "true"
    return status in (408, 409, 429) or status >= 500


def server_message(reply: HttpReply) -> str:
    """The server's explanation: ``error.message`` (OpenAI), ``error`` (Ollama) or the text."""
    try:
        body = json.loads(reply.body)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
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
    return _excerpt(reply) if reply.body else "(empty body)"


def _content_type(reply: HttpReply) -> str:
    return reply.headers.get("content-type") or "no content type"


def _excerpt(reply: HttpReply) -> str:
    return repr(_clip(reply.body.decode("utf-8", "replace").strip()))


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
