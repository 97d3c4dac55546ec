"""Local HTTP servers speaking the wire formats of the web search APIs, for tests.

None of these services can run here (paid APIs, or a metasearch engine that needs the
internet), so each server answers as the documented API does, over a fixed set of
documents ranked by word overlap (a document's ``url`` and ``title`` metadata name the
page; other scalar metadata is added to its results as the APIs add extra fields):

- :class:`TavilyTestServer`: ``POST /search`` of the Tavily Search API.
- :class:`GoogleCustomSearchTestServer`: ``GET /customsearch/v1`` of the Google Custom
  Search JSON API (``key``, ``cx``, ``q``, ``num`` 1-10, ``start``; the ``Search``
  resource with ``items`` left out when nothing matched; Google's error envelope).
- :class:`SearxngTestServer`: ``GET /search?format=json`` of a SearXNG instance (pages
  of ``results_per_page``, ``pageno``; 403 when the JSON format is not enabled; 429 from
  the limiter).

Each is the testkit's :class:`~ragloom.testkit.wire.WireServer` with the API's routes.
Every server records the requests it got in ``received`` (:class:`~ragloom.testkit.wire.
Recorded`: ``params`` holds the query parameters, last value winning, and a form body's
fields) and can play a one-shot answer instead of the normal one (``answer_next``: a
status and a JSON or raw body, optionally late), e.g. to send malformed JSON or to time
a client out::

    with GoogleCustomSearchTestServer(documents, api_key="k", cx="cx") as server:
        engine = GoogleCustomSearchEngine("k", "cx", base_url=server.url)
"""

from __future__ import annotations

import re
import time
import urllib.parse
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragloom.core.document import Document
from ragloom.testkit import wire
from ragloom.testkit.wire import Recorded, WireFake, WireServer

__all__ = [
    "DAILY_LIMIT_EXCEEDED",
    "GoogleCustomSearchTestServer",
    "QUOTA_EXCEEDED",
    "Reply",
    "SearxngTestServer",
    "TavilyTestServer",
    "google_error",
]

_WORDS = re.compile(r"\w+")
UNAUTHORIZED = "Unauthorized: missing or invalid API key."


@dataclass(frozen=True)
class Reply:
    """An answer: status, JSON-able payload (or ``bytes`` sent verbatim), content type."""

    status: int
    payload: Any
    content_type: str = "application/json"


def _ranked(documents: Sequence[Document], query: str) -> list[tuple[float, int, Document]]:
    """Documents sharing words with ``query``: (share of query words matched, index, doc),
    best first, ties in document order."""
    words = {w.lower() for w in _WORDS.findall(query)}
    scored = []
    for index, document in enumerate(documents):
        text_words = {w.lower() for w in _WORDS.findall(document.text)}
        score = len(words & text_words) / len(words) if words else 0.0
        if score > 0:
            scored.append((score, index, document))
    return sorted(scored, key=lambda item: (-item[0], item[1]))


def _page(index: int, document: Document) -> tuple[str, str, dict[str, Any]]:
    """The url, title and extra scalar metadata of a served document."""
    metadata = document.metadata.to_dict()
    url = str(metadata.pop("url", f"https://pages.example/{index}"))
    title = str(metadata.pop("title", " ".join(document.text.split()[:6])))
    extras = {k: v for k, v in metadata.items() if isinstance(v, str | int | float)}
    return url, title, extras


class _LocalServer(WireFake):
    """The testkit's WireServer (127.0.0.1, a free port) answering every path through
    :meth:`answer`; subclasses answer as their API does."""

    def __init__(self, documents: Sequence[Document]) -> None:
        self.documents = list(documents)
        self.wire = WireServer({"^/.*": self._route})

    @property
    def received(self) -> list[Recorded]:
        """The requests got, in order (clear it to start counting again)."""
        return self.wire.requests

    def answer_next(
        self,
        status: int,
        payload: Any,
        *,
        content_type: str = "application/json",
        delay_seconds: float = 0.0,
    ) -> None:
        """The next request gets this answer instead of the normal one (``payload``:
        JSON-able, or ``bytes`` sent as they are); ``delay_seconds`` makes it late."""
        answer = wire.status(status, payload, {"Content-Type": content_type})
        self.wire.script(wire.late(delay_seconds, answer))

    def delay_next(self, seconds: float) -> None:
        """The next request gets its normal answer, ``seconds`` late."""
        self.wire.script(wire.delay(seconds))

    def answer(self, request: Recorded) -> Reply:
        """The documented answer to ``request``."""
        raise NotImplementedError

    def _route(self, request: Recorded) -> tuple[int, Any, Mapping[str, str]]:
        reply = self.answer(request)
        return reply.status, reply.payload, {"Content-Type": reply.content_type}


class TavilyTestServer(_LocalServer):
    """Serves the Tavily ``/search`` endpoint over ``documents``.

    Bearer or ``api_key`` authentication, the documented request body and answer
    (``query``, ``answer``, ``images``, ``results[{title, url, content, score,
    raw_content}]``, ``response_time``, ``request_id``), ``{"detail": {"error": ...}}``
    errors with the documented status codes (400, 401, 429, 432, 433).
    ``fail_with = (status, message)`` makes every request fail that way;
    ``delay_seconds`` delays every answer; ``answer_override`` replaces every successful
    answer.
    """

    def __init__(self, documents: Sequence[Document], *, api_key: str = "tvly-test") -> None:
        super().__init__(documents)
        self.api_key = api_key
        self.fail_with: tuple[int, str] | None = None
        self.delay_seconds = 0.0
        self.answer_override: dict[str, Any] | None = None

    @property
    def requests(self) -> list[Any]:
        """The JSON bodies received, in order."""
        return [request.body for request in self.received]

    def answer(self, request: Recorded) -> Reply:
        if request.method != "POST" or request.path != "/search":
            return Reply(404, {"detail": "Not Found"})
        body = request.body if request.body is not None else {}
        if not isinstance(body, dict):
            return Reply(400, {"detail": {"error": "Invalid JSON body."}})
        if self.delay_seconds:
            time.sleep(self.delay_seconds)
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if self.api_key not in (bearer, body.get("api_key")):
            return Reply(401, {"detail": {"error": UNAUTHORIZED}})
        if self.fail_with is not None:
            status, message = self.fail_with
            return Reply(status, {"detail": {"error": message}})
        if self.answer_override is not None:
            return Reply(200, self.answer_override)
        return Reply(*self.search(body))

    def search(self, body: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        """The status and JSON answer for one request body (authentication already checked)."""
        query = body.get("query")
        if not isinstance(query, str) or not query.strip():
            return 400, {"detail": {"error": "Query is missing or empty."}}
        max_results = body.get("max_results", 5)
        if isinstance(max_results, bool) or not isinstance(max_results, int):
            return 400, {"detail": {"error": "max_results must be an integer."}}
        if not 0 <= max_results <= 20:
            return 400, {"detail": {"error": "max_results must be between 0 and 20."}}
        results = []
        for score, index, document in _ranked(self.documents, query)[:max_results]:
            url, title, extras = _page(index, document)
            result: dict[str, Any] = {
                "url": url,
                "title": title,
                "content": document.text[:300],
                "score": round(score, 6),
                "raw_content": document.text if body.get("include_raw_content") else None,
            }
            result.update(extras)
            results.append(result)
        return 200, {
            "query": query,
            "follow_up_questions": None,
            "answer": None,
            "images": [],
            "results": results,
            "response_time": 0.01,
            "request_id": str(uuid.uuid4()),
        }


def google_error(
    status: int, grpc_status: str, reason: str, message: str, *, domain: str = "global"
) -> dict[str, Any]:
    """Google's JSON error envelope (``{"error": {code, message, errors, status}}``)."""
    return {
        "error": {
            "code": status,
            "message": message,
            "errors": [{"message": message, "domain": domain, "reason": reason}],
            "status": grpc_status,
        }
    }


#: The daily quota of the Custom Search JSON API used up (today's answer: 429).
QUOTA_EXCEEDED = google_error(
    429,
    "RESOURCE_EXHAUSTED",
    "rateLimitExceeded",
    "Quota exceeded for quota metric 'Queries' and limit 'Queries per day' of service "
    "'customsearch.googleapis.com' for consumer 'project_number:000000000000'.",
)
#: The same, in the older ``usageLimits`` form (403 ``dailyLimitExceeded``).
DAILY_LIMIT_EXCEEDED = google_error(
    403, "PERMISSION_DENIED", "dailyLimitExceeded", "Daily Limit Exceeded", domain="usageLimits"
)
_KEY_INVALID = google_error(
    400,
    "INVALID_ARGUMENT",
    "keyInvalid",
    "API key not valid. Please pass a valid API key.",
    domain="usageLimits",
)
_NO_KEY = google_error(
    403,
    "PERMISSION_DENIED",
    "forbidden",
    "Method doesn't allow unregistered callers (callers without established identity). "
    "Please use API Key or other form of API consumer identity to call this API.",
)
_INVALID_ARGUMENT = google_error(
    400, "INVALID_ARGUMENT", "badRequest", "Request contains an invalid argument."
)


class GoogleCustomSearchTestServer(_LocalServer):
    """Serves ``GET /customsearch/v1`` of the Google Custom Search JSON API.

    Requests need ``key`` (else 403; a wrong one: 400 ``keyInvalid``), the search
    engine id ``cx`` and ``q`` (else 400 invalid argument); ``num`` must be 1-10 and
    ``start + num - 1`` at most 100, as documented. ``queries_per_day`` (None:
    unlimited) makes requests past the quota fail with 429 ``rateLimitExceeded``.
    """

    def __init__(
        self,
        documents: Sequence[Document],
        *,
        api_key: str = "google-test-key",
        cx: str = "test-cx",
        queries_per_day: int | None = None,
    ) -> None:
        super().__init__(documents)
        self.api_key = api_key
        self.cx = cx
        self.queries_per_day = queries_per_day
        self._queries = 0

    def answer(self, request: Recorded) -> Reply:
        if request.method != "GET" or request.path != "/customsearch/v1":
            return Reply(404, google_error(404, "NOT_FOUND", "notFound", "Not Found"))
        params = request.params
        if "key" not in params:
            return Reply(403, _NO_KEY)
        if params["key"] != self.api_key:
            return Reply(400, _KEY_INVALID)
        self._queries += 1
        if self.queries_per_day is not None and self._queries > self.queries_per_day:
            return Reply(429, QUOTA_EXCEEDED)
        try:
            num = int(params.get("num", "10"))
            start = int(params.get("start", "1"))
        except ValueError:
            return Reply(400, _INVALID_ARGUMENT)
        query = params.get("q", "")
        if params.get("cx") != self.cx or not query or not 1 <= num <= 10:
            return Reply(400, _INVALID_ARGUMENT)
        if start < 1 or start + num - 1 > 100:
            return Reply(400, _INVALID_ARGUMENT)
        return Reply(200, self.search(query, start, num, params))

    def search(self, query: str, start: int, num: int, params: Mapping[str, str]) -> dict[str, Any]:
        """The ``Search`` resource for one page of results."""
        ranked = _ranked(self.documents, query)
        items = []
        for _, index, document in ranked[start - 1 : start - 1 + num]:
            url, title, extras = _page(index, document)
            host = urllib.parse.urlsplit(url).netloc
            snippet = document.text[:160]
            items.append(
                {
                    "kind": "customsearch#result",
                    "title": title,
                    "htmlTitle": title,
                    "link": url,
                    "displayLink": host,
                    "snippet": snippet,
                    "htmlSnippet": snippet,
                    "formattedUrl": url,
                    "htmlFormattedUrl": url,
                    **extras,
                }
            )
        total = str(len(ranked))
        page = {
            "title": f"Google Custom Search - {query}",
            "totalResults": total,
            "searchTerms": query,
            "count": num,
            "startIndex": start,
            "inputEncoding": "utf8",
            "outputEncoding": "utf8",
            "safe": params.get("safe", "off"),
            "cx": self.cx,
        }
        queries: dict[str, Any] = {"request": [page]}
        if start + num <= min(len(ranked), 100):
            queries["nextPage"] = [{**page, "startIndex": start + num}]
        if start > 1:
            queries["previousPage"] = [{**page, "startIndex": max(1, start - num)}]
        answer: dict[str, Any] = {
            "kind": "customsearch#search",
            "url": {
                "type": "application/json",
                "template": "https://www.googleapis.com/customsearch/v1?q={searchTerms}&"
                "num={count?}&start={startIndex?}&cx={cx?}&key={key?}&alt=json",
            },
            "queries": queries,
            "context": {"title": "ragloom test engine"},
            "searchInformation": {
                "searchTime": 0.01,
                "formattedSearchTime": "0.01",
                "totalResults": total,
                "formattedTotalResults": f"{len(ranked):,}",
            },
        }
        if items:  # Google leaves `items` out when there is no result
            answer["items"] = items
        return answer


_FORBIDDEN_HTML = (
    b"<!doctype html><html><head><title>403 Forbidden</title></head>"
    b"<body><h1>Forbidden</h1></body></html>"
)


class SearxngTestServer(_LocalServer):
    """Serves a SearXNG instance's search API (``GET``/``POST`` on ``/search`` and ``/``).

    ``q`` is required (400 otherwise); ``format=json`` answers the documented JSON
    (``query``, ``number_of_results``, ``results[{url, title, content, engine, engines,
    positions, score, category, parsed_url, template, publishedDate}]``, ``answers``,
    ``corrections``, ``infoboxes``, ``suggestions``, ``unresponsive_engines``) one page
    (``pageno``, ``results_per_page`` results) at a time; when ``json_enabled`` is false
    (SearXNG's default ``search.formats`` is html only) it answers 403 as SearXNG does.
    ``rate_limit`` (None: unlimited) lets that many requests through, then the limiter
    answers 429 ``Too Many Requests``.
    """

    def __init__(
        self,
        documents: Sequence[Document],
        *,
        json_enabled: bool = True,
        results_per_page: int = 10,
        rate_limit: int | None = None,
    ) -> None:
        super().__init__(documents)
        self.json_enabled = json_enabled
        self.results_per_page = results_per_page
        self.rate_limit = rate_limit
        self._served = 0

    def answer(self, request: Recorded) -> Reply:
        if request.path not in ("/", "/search"):
            return Reply(404, b"Not Found", "text/plain")
        self._served += 1
        if self.rate_limit is not None and self._served > self.rate_limit:
            return Reply(429, b"Too Many Requests", "text/plain")
        params = request.params
        if params.get("format", "html") != "json" or not self.json_enabled:
            return Reply(403, _FORBIDDEN_HTML, "text/html; charset=utf-8")
        query = params.get("q", "").strip()
        if not query:
            return Reply(400, b"Bad Request", "text/plain")
        try:
            page = int(params.get("pageno", "1"))
        except ValueError:
            return Reply(400, b"Bad Request", "text/plain")
        return Reply(200, self.search(query, max(page, 1), params))

    def search(self, query: str, page: int, params: Mapping[str, str]) -> dict[str, Any]:
        """The JSON output for one page of results."""
        size = self.results_per_page
        ranked = _ranked(self.documents, query)
        results = []
        for position, (score, index, document) in enumerate(
            ranked[(page - 1) * size : page * size], start=(page - 1) * size + 1
        ):
            url, title, extras = _page(index, document)
            parts = urllib.parse.urlsplit(url)
            results.append(
                {
                    "url": url,
                    "title": title,
                    "content": document.text[:300],
                    "engine": "duckduckgo",
                    "parsed_url": [parts.scheme, parts.netloc, parts.path, "", parts.query, ""],
                    "template": "default.html",
                    "engines": ["duckduckgo"],
                    "positions": [position],
                    "score": round(score / position * 2, 6),
                    "category": params.get("categories", "general").split(",")[0],
                    "publishedDate": None,
                    "thumbnail": "",
                    "priority": "",
                    **extras,
                }
            )
        return {
            "query": query,
            "number_of_results": 0,  # SearXNG reports 0 when engines give no estimate
            "results": results,
            "answers": [],
            "corrections": [],
            "infoboxes": [],
            "suggestions": [],
            "unresponsive_engines": [],
        }
