"""GoogleCustomSearchEngine: the Google Custom Search JSON API (``GET /customsearch/v1``).

The API returns at most 10 results per request (``num``) and 100 per query
(``start + num - 1 <= 100``), so larger ``max_results`` are fetched page by page until
Google has no next page. A page without ``items`` means no (more) results. Each item's
``snippet`` is the snippet; ``displayLink``, ``formattedUrl`` and the other scalar fields
go to its metadata (Google gives no relevance score). Errors carry Google's status,
reason (``keyInvalid``, ``rateLimitExceeded``, ``dailyLimitExceeded``, ...) and message.
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

__all__ = ["GoogleCustomSearchEngine"]

DEFAULT_BASE_URL = "https://customsearch.googleapis.com"
PAGE_SIZE = 10  # the API's maximum `num`
MAX_RESULTS = 100  # the API's maximum `start + num - 1`
_SKIP = ("kind", "title", "htmlTitle", "link", "snippet", "htmlSnippet", "htmlFormattedUrl")


def _google_error(response: HttpReply) -> tuple[str, str]:
    """The reason and message of Google's ``{"error": {...}}`` envelope (or the body)."""
    try:
        error = response.json()["error"]
        reasons = [e.get("reason") for e in error.get("errors") or []]
        reasons += [d.get("reason") for d in error.get("details") or []]
        reason = next((r for r in reasons if isinstance(r, str) and r), error.get("status"))
        return str(reason or "error"), str(error.get("message", ""))
    except (ValueError, KeyError, TypeError, AttributeError):
        return "error", response.text[:200]


class GoogleCustomSearchEngine:
    """Searches a Programmable Search Engine; ``api_key`` defaults to ``$GOOGLE_API_KEY``
    and ``search_engine_id`` (the ``cx``) to ``$GOOGLE_CSE_ID``.

    A request's ``language`` is sent as ``lr=lang_<language>`` and ``hl``,
    ``geo_location`` as ``gl``, ``safe_search`` as ``safe=active``/``off``;
    ``additional_params`` (e.g. ``siteSearch``, ``dateRestrict``) are added as they are.
    """

    def __init__(
        self,
        api_key: str | None = None,
        search_engine_id: str | None = None,
        *,
        base_url: str = DEFAULT_BASE_URL,
        timeout_seconds: float = 30.0,
        client: httpx.Client | None = None,
    ) -> None:
        key = api_key if api_key is not None else os.environ.get("GOOGLE_API_KEY")
        cx = search_engine_id if search_engine_id is not None else os.environ.get("GOOGLE_CSE_ID")
        if not key or not cx:
            raise InvalidArgumentError(
                "Google Custom Search needs an API key and a search engine id: pass api_key "
                "and search_engine_id or set GOOGLE_API_KEY and GOOGLE_CSE_ID"
            )
        self.base_url = base_url.rstrip("/")
        self._key = key
        self.search_engine_id = cx
        self.timeout_seconds = float(timeout_seconds)
        self._http = endpoint_client(client)

    def close(self) -> None:
        """Close the HTTP connections (not those of a ``client`` passed in)."""
        self._http.close()

    def search(self, request: WebSearchRequest) -> WebSearchResults:
        """Google's results for ``request``, fetched 10 a page (at most 100, Google's limit)."""
        wanted = min(request.max_results or PAGE_SIZE, MAX_RESULTS)
        params = self._params(request)
        results: list[WebSearchOrganicResult] = []
        information = WebSearchInformationResult()
        start = 1
        while len(results) < wanted:
            num = min(PAGE_SIZE, wanted - len(results), MAX_RESULTS - start + 1)
            data, items = self._page({**params, "start": str(start), "num": str(num)})
            if start == 1:
                information = self._information(data)
            results.extend(items)
            start += len(items)
            queries = data.get("queries")
            has_next = isinstance(queries, dict) and bool(queries.get("nextPage"))
            if not items or not has_next or start > MAX_RESULTS:
                break
        return WebSearchResults(tuple(results[:wanted]), information, information.metadata)

    def _params(self, request: WebSearchRequest) -> dict[str, str]:
        params = {"key": self._key, "cx": self.search_engine_id, "q": request.search_terms}
        if request.language:
            params["lr"] = f"lang_{request.language}"
            params["hl"] = request.language
        if request.geo_location:
            params["gl"] = request.geo_location
        if request.safe_search is not None:
            params["safe"] = "active" if request.safe_search else "off"
        params.update({k: str(v) for k, v in request.additional_params.items()})
        return params

    def _page(
        self, params: Mapping[str, str]
    ) -> tuple[dict[str, Any], list[WebSearchOrganicResult]]:
        """One page: the Search object and its results."""
        return fetch_json(
            self._http,
            "Google Custom Search",
            "GET",
            f"{self.base_url}/customsearch/v1",
            explain=_google_error,
            parse=self._parse,
            timeout=self.timeout_seconds,
            params=params,
        )

    def _parse(self, data: Any) -> tuple[dict[str, Any], list[WebSearchOrganicResult]]:
        if not isinstance(data, dict) or not isinstance(data.get("items", []), list):
            raise TypeError("expected a Search object with an `items` list")
        return data, [self._organic(item) for item in data.get("items", [])]

    @staticmethod
    def _information(data: Mapping[str, Any]) -> WebSearchInformationResult:
        info = data.get("searchInformation") or {}
        total = info.get("totalResults")
        about = {k: v for k, v in info.items() if isinstance(v, str | int | float)}
        return WebSearchInformationResult(
            total_results=int(total) if isinstance(total, str) and total.isdigit() else None,
            page_number=1,
            metadata=about,
        )

    @staticmethod
    def _organic(item: Mapping[str, Any]) -> WebSearchOrganicResult:
        title, link = item["title"], item["link"]
        if not isinstance(title, str) or not isinstance(link, str):
            raise TypeError(f"item title and link must be strings: {dict(item)!r}")
        snippet = item.get("snippet")
        return WebSearchOrganicResult(
            title=title,
            url=link,
            snippet=snippet if isinstance(snippet, str) else None,
            metadata=extras(item, _SKIP),
        )
