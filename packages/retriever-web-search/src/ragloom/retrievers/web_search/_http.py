"""What the engines share: one call through core's bounded HTTP call (whole-call deadline
over connect, headers, redirects and body; byte cap), its failures as WebSearchError, and
the error and malformed-answer messages, each naming the engine and the URL.

An engine's endpoint comes from the user's configuration, so it is trusted
(``ALLOW_ALL``: an intranet SearXNG is fine); the deadline and the byte cap still hold.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any, TypeVar

import httpx

from ragloom.core.errors import EgressRefusedError
from ragloom.core.kit.egress import ALLOW_ALL
from ragloom.core.kit.http import HttpCallError, HttpClient, HttpErrorKind, HttpReply
from ragloom.core.web_search import WebSearchError

__all__ = ["endpoint_client", "extras", "fetch_json", "malformed", "refused"]

T = TypeVar("T")

_FAILURE = {HttpErrorKind.TIMEOUT: " timed out", HttpErrorKind.CONNECTION: " is unreachable"}


def endpoint_client(client: httpx.Client | None) -> HttpClient:
    """The bounded client for an engine's own (configured, trusted) endpoint; ``client``
    is an ``httpx.Client`` of the caller's to send through instead."""
    return HttpClient(egress=ALLOW_ALL, client=client)


def refused(engine: str, url: str, reply: HttpReply, what: str, message: str) -> WebSearchError:
    """The error for a non-200 answer: status, its meaning, the API's own message."""
    return WebSearchError(f"{engine} at {url} answered {reply.status} ({what}): {message}")


def malformed(engine: str, url: str, reply: HttpReply, exc: Exception) -> WebSearchError:
    """The error for a 200 answer that is not the documented JSON."""
    return WebSearchError(
        f"{engine} at {url} sent a malformed answer ({exc!r}): {reply.text[:200]!r}"
    )


def extras(item: Mapping[str, Any], skip: Collection[str]) -> dict[str, Any]:
    """The scalar fields of a result object other than ``skip`` (for its metadata)."""
    return {
        key: value
        for key, value in item.items()
        if key not in skip and isinstance(value, str | int | float | bool)
    }


def fetch_json(
    http: HttpClient,
    engine: str,
    method: str,
    url: str,
    *,
    explain: Callable[[HttpReply], tuple[str, str]],
    parse: Callable[[Any], T],
    timeout: float,
    **kwargs: Any,
) -> T:
    """``parse`` of the JSON answer of one call within ``timeout`` seconds as a whole.

    A timeout, a too large answer or an unreachable server raises WebSearchError (``url``
    is shown without its query string, which may hold a key). A non-200 raises with
    ``explain(reply)`` (what the status means, the API's message); a body that is not
    JSON (or nested past the parser's depth), or that ``parse`` rejects (ValueError,
    KeyError, TypeError, AttributeError), is reported as malformed."""
    try:
        reply = http.request(method, url, timeout=timeout, **kwargs)
    except HttpCallError as exc:
        raise WebSearchError(f"{engine} at {url}{_FAILURE.get(exc.kind, '')}: {exc}") from exc
    except EgressRefusedError as exc:
        raise WebSearchError(f"{engine} at {url}: {exc}") from exc
    if reply.status != 200:
        what, message = explain(reply)
        raise refused(engine, url, reply, what, message)
    try:
        return parse(reply.json())
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise malformed(engine, url, reply, exc) from exc
