"""TavilyWebSearchEngine: the Tavily Search API (``POST /search``) over httpx.

Results keep Tavily's order; ``content`` (Tavily's query-related extract) is the snippet,
``raw_content`` (with ``include_raw_content``) the page content, and ``score`` and every
other scalar field of a result go to its metadata. HTTP errors become
:class:`~ragloom.core.web_search.WebSearchError` with Tavily's own message: 401 bad key,
429 rate limit, 432/433 plan or spending limit, timeouts and malformed answers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import httpx

from ragloom.core.errors import InvalidArgumentError
from ragloom.core.kit.http import HttpReply
from ragloom.core.web_search import (
    WebSearchInformationResult,
    WebSearchOrganicResult,
    WebSearchRequest,
    WebSearchResults,
)
from ragloom.retrievers.web_search._http import endpoint_client, extras, fetch_json

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


def _error_text(response: HttpReply) -> str:
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
        self._http = endpoint_client(client)
        self._headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def close(self) -> None:
        """Close the HTTP connections (not those of a ``client`` passed in)."""
        self._http.close()

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
        return fetch_json(
            self._http,
            "Tavily",
            "POST",
            url,
            explain=lambda r: (_STATUS.get(r.status, "error"), _error_text(r)),
            parse=self._results,
            timeout=self.timeout_seconds,
            json=body,
            headers=self._headers,
        )

    def _results(self, data: dict[str, Any]) -> WebSearchResults:
        results = tuple(self._organic(item) for item in data["results"])
        about: dict[str, Any] = {
            k: data[k] for k in ("query", "answer", "response_time", "request_id") if k in data
        }
        return WebSearchResults(results, WebSearchInformationResult(metadata=about), about)

    @staticmethod
    def _organic(item: Mapping[str, Any]) -> WebSearchOrganicResult:
        title, url = item["title"], item["url"]
        if not isinstance(title, str) or not isinstance(url, str):
            raise TypeError(f"result title and url must be strings: {dict(item)!r}")
        return WebSearchOrganicResult(
            title=title,
            url=url,
            snippet=item.get("content"),
            content=item.get("raw_content"),
            metadata=extras(item, ("title", "url", "content", "raw_content")),
        )
