"""What the engines share: one HTTP call bounded as a whole by its timeout and in size
(a dripping or huge answer is cut off), transport errors as WebSearchError, and the
error and malformed-answer messages, each naming the engine and the URL."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from typing import Any, TypeVar

import httpx

from ragloom.core.bounded_read import DEFAULT_MAX_RESPONSE_BYTES, ResponseTooLargeError, read_within
from ragloom.core.web_search import WebSearchError

__all__ = ["call", "extras", "fetch_json", "malformed", "refused"]

T = TypeVar("T")


def call(
    client: httpx.Client, engine: str, method: str, url: str, *, timeout: float, **kwargs: Any
) -> httpx.Response:
    """``client.request(method, url, ...)`` read whole within ``timeout`` seconds and
    ``DEFAULT_MAX_RESPONSE_BYTES``; a timeout, a too large answer or an unreachable server
    raises WebSearchError (``url`` is shown without its query string, which may hold a key)."""
    deadline = time.monotonic() + timeout
    try:
        with client.stream(method, url, **kwargs) as streamed:
            content = read_within(
                streamed.iter_bytes(), deadline=deadline, max_bytes=DEFAULT_MAX_RESPONSE_BYTES
            )
        return httpx.Response(streamed.status_code, headers=streamed.headers, content=content)
    except (httpx.TimeoutException, TimeoutError) as exc:
        raise WebSearchError(f"{engine} at {url} timed out: {exc!r}") from exc
    except ResponseTooLargeError as exc:
        raise WebSearchError(f"{engine} at {url}: {exc}") from exc
    except httpx.HTTPError as exc:
        raise WebSearchError(f"{engine} at {url} is unreachable: {exc!r}") from exc


def refused(
    engine: str, url: str, response: httpx.Response, what: str, message: str
) -> WebSearchError:
    """The error for a non-200 answer: status, its meaning, the API's own message."""
    return WebSearchError(f"{engine} at {url} answered {response.status_code} ({what}): {message}")


def malformed(engine: str, url: str, response: httpx.Response, exc: Exception) -> WebSearchError:
    """The error for a 200 answer that is not the documented JSON."""
    return WebSearchError(
        f"{engine} at {url} sent a malformed answer ({exc!r}): {response.text[:200]!r}"
    )


def extras(item: Mapping[str, Any], skip: Collection[str]) -> dict[str, Any]:
    """The scalar fields of a result object other than ``skip`` (for its metadata)."""
    return {
        key: value
        for key, value in item.items()
        if key not in skip and isinstance(value, str | int | float | bool)
    }


def fetch_json(
    client: httpx.Client,
    engine: str,
    method: str,
    url: str,
    *,
    explain: Callable[[httpx.Response], tuple[str, str]],
    parse: Callable[[Any], T],
    timeout: float,
    **kwargs: Any,
) -> T:
    """``parse`` of the JSON answer of one call. A non-200 raises with
    ``explain(response)`` (what the status means, the API's message); a body that is not
    JSON (or nested past the parser's depth), or that ``parse`` rejects (ValueError,
    KeyError, TypeError, AttributeError), is reported as malformed."""
    response = call(client, engine, method, url, timeout=timeout, **kwargs)
    if response.status_code != 200:
        what, message = explain(response)
        raise refused(engine, url, response, what, message)
    try:
        return parse(response.json())
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise malformed(engine, url, response, exc) from exc
