"""What the engines share: one HTTP call with transport errors as WebSearchError, and
the error and malformed-answer messages, each naming the engine and the URL."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import httpx

from ragloom.core.web_search import WebSearchError

__all__ = ["call", "extras", "malformed", "refused"]


def call(client: httpx.Client, engine: str, method: str, url: str, **kwargs: Any) -> httpx.Response:
    """``client.request(method, url, ...)``; a timeout or an unreachable server raises
    WebSearchError (``url`` is shown without its query string, which may hold a key)."""
    try:
        return client.request(method, url, **kwargs)
    except httpx.TimeoutException as exc:
        raise WebSearchError(f"{engine} at {url} timed out: {exc!r}") from exc
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
