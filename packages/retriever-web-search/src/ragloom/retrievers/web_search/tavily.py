"""TavilyWebSearchEngine: the Tavily Search API (``POST /search``) over httpx.

Results keep Tavily's order; ``content`` (Tavily's query-related extract) is the snippet,
``raw_content`` (with ``include_raw_content``) the page content, and ``score`` and every
other scalar field of a result go to its metadata. HTTP errors become
:class:`~ragloom.core.web_search.WebSearchError` with Tavily's own message: 401 bad key,
429 rate limit, 432/433 plan or spending limit, timeouts and malformed answers.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

import httpx

from ragloom.core.bounded_read import (
    DEFAULT_MAX_RESPONSE_BYTES,
    ResponseTooLargeError,
    read_within,
)
from ragloom.core.errors import InvalidArgumentError
from ragloom.core.web_search import (
    WebSearchError,
    WebSearchInformationResult,
    WebSearchOrganicResult,
    WebSearchRequest,
    WebSearchResults,
)

__all__ = ["DEFAULT_BASE_URL", "TavilyWebSearchEngine"]

DEFAULT_BASE_URL = "https://api.tavily.com"
MAX_RESULTS = 20  # Tavily's documented upper bound for max_results
_STATUS = {
    400: "bad request",
    401: "invalid or missing API key",
    403: "forbidden",
    429: "rate limit exceeded",
    432: "plan usage limit exceeded",
    433: "pay-as-you-go spending limit exceeded",
}


def _error_text(response: httpx.Response) -> str:
    """Tavily's message: ``{"detail": {"error": ...}}`` (or the body's start)."""
    try:
        body = response.json()
    except (ValueError, RecursionError):
        return response.text[:200]
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, dict) and "error" in detail:
        return str(detail["error"])
    return str(detail if detail is not None else body)[:200]


class TavilyWebSearchEngine:
    """Searches with Tavily; ``api_key`` defaults to ``$TAVILY_API_KEY``.

    ``search_depth`` (``basic``/``advanced``), ``topic`` (``general``/``news``/...) and
    ``include_raw_content`` are sent with every request; a request's
    ``additional_params`` are added to the JSON body as they are.
    """

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str = DEFAULT_BASE_URL,
        search_depth: str = "basic",
        topic: str = "general",
        include_raw_content: bool = False,
        timeout_seconds: float = 30.0,
        client: httpx.Client | None = None,
    ) -> None:
        key = api_key if api_key is not None else os.environ.get("TAVILY_API_KEY")
        if not key:
            raise InvalidArgumentError(
                "Tavily needs an API key: pass api_key or set TAVILY_API_KEY"
            )
        self.base_url = base_url.rstrip("/")
        self.search_depth = search_depth
        self.topic = topic
        self.include_raw_content = include_raw_content
        self.timeout_seconds = float(timeout_seconds)
        self._client = client or httpx.Client(timeout=timeout_seconds)
        self._headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()

    def search(self, request: WebSearchRequest) -> WebSearchResults:
        """Tavily's results for ``request`` (at most 20, Tavily's limit)."""
        body: dict[str, Any] = {
            "query": request.search_terms,
            "search_depth": self.search_depth,
            "topic": self.topic,
            "include_raw_content": self.include_raw_content,
            "max_results": min(request.max_results or 5, MAX_RESULTS),
        }
        if request.geo_location:
            body["country"] = request.geo_location
        body.update(request.additional_params)
        url = f"{self.base_url}/search"
        deadline = time.monotonic() + self.timeout_seconds  # bounds the call as a whole
        try:
            with self._client.stream("POST", url, json=body, headers=self._headers) as streamed:
                content = read_within(
                    streamed.iter_bytes(), deadline=deadline, max_bytes=DEFAULT_MAX_RESPONSE_BYTES
                )
            response = httpx.Response(streamed.status_code, content=content)
        except (httpx.TimeoutException, TimeoutError) as exc:
            raise WebSearchError(f"Tavily at {url} timed out: {exc!r}") from exc
        except ResponseTooLargeError as exc:
            raise WebSearchError(f"Tavily at {url}: {exc}") from exc
        except httpx.HTTPError as exc:
            raise WebSearchError(f"Tavily at {url} is unreachable: {exc!r}") from exc
        if response.status_code != 200:
            what = _STATUS.get(response.status_code, "error")
            raise WebSearchError(
                f"Tavily at {url} answered {response.status_code} ({what}): {_error_text(response)}"
            )
        return self._results(url, response)

    def _results(self, url: str, response: httpx.Response) -> WebSearchResults:
        try:
            data = response.json()
            items = data["results"]
            results = tuple(self._organic(item) for item in items)
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise WebSearchError(
                f"Tavily at {url} sent a malformed answer ({exc!r}): {response.text[:200]!r}"
            ) from exc
        extras = {
            k: data[k] for k in ("query", "answer", "response_time", "request_id") if k in data
        }
        return WebSearchResults(results, WebSearchInformationResult(metadata=extras), extras)

    @staticmethod
    def _organic(item: Mapping[str, Any]) -> WebSearchOrganicResult:
        title, url = item["title"], item["url"]
        if not isinstance(title, str) or not isinstance(url, str):
            raise TypeError(f"result title and url must be strings: {dict(item)!r}")
        extras = {
            key: value
            for key, value in item.items()
            if key not in ("title", "url", "content", "raw_content")
            and isinstance(value, str | int | float | bool)
        }
        return WebSearchOrganicResult(
            title=title,
            url=url,
            snippet=item.get("content"),
            content=item.get("raw_content"),
            metadata=extras,
        )
