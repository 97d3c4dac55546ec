"""SearxngWebSearchEngine: a SearXNG instance's search API (``GET /search?format=json``).

SearXNG has no result-count parameter: it answers a page (``pageno``) of about 10-20
merged results, so the engine reads pages until it has ``max_results`` results, a page
comes back empty, or ``max_pages`` pages were read; a URL already seen on an earlier
page is not repeated. SearXNG's ``score`` is an unbounded merge weight, not a relevance
in [0, 1], so it goes to the metadata as ``searxng_score`` with ``engine``,
``category`` and ``publishedDate``. The instance must enable the JSON format
(``search: formats: [html, json]`` in settings.yml); otherwise it answers 403, which is
reported as such.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from ragloom.core.errors import InvalidArgumentError
from ragloom.core.web_search import (
    WebSearchInformationResult,
    WebSearchOrganicResult,
    WebSearchRequest,
    WebSearchResults,
)
from ragloom.retrievers.web_search._http import endpoint_client, extras, fetch_json

__all__ = ["SearxngWebSearchEngine"]

_STATUS = {
    400: "bad request",
    401: "unauthorized",
    403: "forbidden: is the json format enabled in the instance's settings.yml?",
    429: "too many requests (the instance's limiter)",
}
_SKIP = ("title", "url", "content", "score", "template", "priority", "thumbnail")


class SearxngWebSearchEngine:
    """Searches the SearXNG instance at ``base_url`` (e.g. ``http://localhost:8888``).

    ``categories`` and ``engines`` (comma-separated lists, or None for the instance's
    defaults) and ``time_range`` (``day``/``month``/``year``) go with every request;
    ``headers`` are sent as they are (e.g. the credentials of a proxy in front of the
    instance). A request's ``language`` is sent as ``language``, ``safe_search`` as
    ``safesearch`` (2 strict / 0 off); ``additional_params`` are added as they are.
    """

    def __init__(
        self,
        base_url: str,
        *,
        categories: str | None = None,
        engines: str | None = None,
        time_range: str | None = None,
        max_pages: int = 5,
        headers: Mapping[str, str] | None = None,
        timeout_seconds: float = 30.0,
        client: httpx.Client | None = None,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise InvalidArgumentError(f"base_url must be an http(s) URL, got {base_url!r}")
        if isinstance(max_pages, bool) or not isinstance(max_pages, int) or max_pages < 1:
            raise InvalidArgumentError(f"max_pages must be an int >= 1, got {max_pages!r}")
        self.base_url = base_url.rstrip("/")
        self.categories = categories
        self.engines = engines
        self.time_range = time_range
        self.max_pages = max_pages
        self._headers = dict(headers or {})
        self.timeout_seconds = float(timeout_seconds)
        self._http = endpoint_client(client)

    def close(self) -> None:
        """Close the HTTP connections (not those of a ``client`` passed in)."""
        self._http.close()

    def search(self, request: WebSearchRequest) -> WebSearchResults:
        """SearXNG's results for ``request``, page after page up to ``max_results``."""
        wanted = request.max_results or 10
        params = self._params(request)
        results: dict[str, WebSearchOrganicResult] = {}
        about: dict[str, Any] = {}
        for page in range(1, self.max_pages + 1):
            data, items = self._page({**params, "pageno": str(page)})
            if page == 1:
                about = {
                    "query": data.get("query"),
                    "number_of_results": data.get("number_of_results"),
                    "suggestions": list(data.get("suggestions") or []),
                    "unresponsive_engines": [
                        list(e) for e in data.get("unresponsive_engines") or []
                    ],
                }
            for result in items:
                results.setdefault(result.url, result)
            if not items or len(results) >= wanted:
                break
        total = about.get("number_of_results")
        information = WebSearchInformationResult(
            total_results=total if isinstance(total, int) and total > 0 else None,
            page_number=1,
            metadata=about,
        )
        return WebSearchResults(tuple(results.values())[:wanted], information, about)

    def _params(self, request: WebSearchRequest) -> dict[str, str]:
        params = {"q": request.search_terms, "format": "json"}
        for name, value in (
            ("categories", self.categories),
            ("engines", self.engines),
            ("time_range", self.time_range),
            ("language", request.language),
        ):
            if value:
                params[name] = value
        if request.safe_search is not None:
            params["safesearch"] = "2" if request.safe_search else "0"
        params.update({k: str(v) for k, v in request.additional_params.items()})
        return params

    def _page(
        self, params: Mapping[str, str]
    ) -> tuple[dict[str, Any], list[WebSearchOrganicResult]]:
        """One page: the JSON output and its results."""
        return fetch_json(
            self._http,
            "SearXNG",
            "GET",
            f"{self.base_url}/search",
            explain=lambda r: (_STATUS.get(r.status, "error"), r.text[:200]),
            parse=self._parse,
            timeout=self.timeout_seconds,
            params=params,
            headers=self._headers,
        )

    def _parse(self, data: Any) -> tuple[dict[str, Any], list[WebSearchOrganicResult]]:
        if not isinstance(data, dict) or not isinstance(data["results"], list):
            raise TypeError("expected an object with a `results` list")
        return data, [self._organic(item) for item in data["results"]]

    @staticmethod
    def _organic(item: Mapping[str, Any]) -> WebSearchOrganicResult:
        title, url = item["title"], item["url"]
        if not isinstance(title, str) or not isinstance(url, str):
            raise TypeError(f"result title and url must be strings: {dict(item)!r}")
        content = item.get("content")
        metadata = extras(item, _SKIP)
        score = item.get("score")
        if isinstance(score, int | float) and not isinstance(score, bool):
            metadata["searxng_score"] = float(score)
        return WebSearchOrganicResult(
            title=title,
            url=url,
            snippet=content if isinstance(content, str) and content else None,
            metadata=metadata,
        )
