"""WebSearchEngineSuite: the contract every WebSearchEngine passes unchanged.

Web search engines are paid or remote services, so an engine is tested against a local
server speaking its wire format. The integration provides one fixture, ``harness``, a
:class:`WebSearchHarness` that serves given pages behind such a server, returns the
engine under test pointed at it, and makes the server fail the way the real API does::

    class TestMyEngine(WebSearchEngineSuite):
        @pytest.fixture
        def harness(self):
            with MyHarness() as harness:  # stops its servers on exit
                yield harness
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

import pytest

from ragloom.core.document import Document
from ragloom.core.web_search import (
    WebSearchEngine,
    WebSearchError,
    WebSearchRequest,
    WebSearchResults,
)
from ragloom.testkit.suite import ConformanceSuite, if_fails

__all__ = ["PAGES", "Failure", "WebSearchEngineSuite", "WebSearchHarness"]

Failure = Literal["refused", "rate_limited", "server_error", "malformed", "slow"]

PAGES: list[Document] = [
    Document(
        "Rust ownership rules: the borrow checker rejects dangling references.",
        {"url": "https://pages.test/rust", "title": "Rust ownership"},
    ),
    Document(
        "Python asyncio runs coroutines on an event loop.",
        {"url": "https://pages.test/asyncio", "title": "Python asyncio"},
    ),
    Document(
        "Sourdough bread needs a starter, flour, water and a long rise.",
        {"url": "https://pages.test/sourdough", "title": "Sourdough bread"},
    ),
    Document(
        "The borrow checker also checks lifetimes of references in Rust.",
        {"url": "https://pages.test/lifetimes", "title": "Rust lifetimes"},
    ),
]


class WebSearchHarness(Protocol):
    """Bridges the suite to one engine and its local wire-format server."""

    def engine(self, pages: Sequence[Document], *, timeout_seconds: float) -> WebSearchEngine:
        """The engine under test, searching ``pages`` (metadata ``url`` and ``title``)
        served by a local server speaking the engine's wire format."""

    def fail_next(self, failure: Failure) -> str:
        """Make the next request to the server fail as the real API does for ``failure``
        (``refused``: bad key or access denied; ``rate_limited``: quota or rate limit;
        ``server_error``: a 5xx; ``malformed``: a body that is not the documented JSON;
        ``slow``: an answer later than the engine's timeout). Returns a fragment the
        engine's :class:`WebSearchError` message must contain (e.g. the status code)."""


def _urls(results: WebSearchResults) -> list[str]:
    return [result.url for result in results.results]


class WebSearchEngineSuite(ConformanceSuite, standard=True):
    """Relevant results with title, URL and snippet; max_results; errors as WebSearchError."""

    integration_fixtures = frozenset({"harness"})

    @pytest.fixture
    def harness(self) -> WebSearchHarness:
        raise NotImplementedError("provide a `harness` fixture (a WebSearchHarness)")

    @pytest.fixture
    def engine(self, harness: WebSearchHarness) -> WebSearchEngine:
        return harness.engine(PAGES, timeout_seconds=5.0)

    @if_fails("the engine must implement the WebSearchEngine protocol (a search method)")
    def test_is_a_web_search_engine(self, engine: WebSearchEngine) -> None:
        assert isinstance(engine, WebSearchEngine)

    @if_fails("map the API's results in its order: title, url and snippet (or page content)")
    def test_results_carry_title_url_and_snippet(self, engine: WebSearchEngine) -> None:
        results = engine.search(WebSearchRequest("rust borrow checker references", 5))
        assert isinstance(results, WebSearchResults)
        assert _urls(results)[0] in {"https://pages.test/rust", "https://pages.test/lifetimes"}
        assert set(_urls(results)) >= {"https://pages.test/rust", "https://pages.test/lifetimes"}
        assert "https://pages.test/sourdough" not in _urls(results)
        by_url = {result.url: result for result in results.results}
        rust = by_url["https://pages.test/rust"]
        assert rust.title == "Rust ownership"
        assert "borrow checker" in (rust.snippet or rust.content or "")

    @if_fails("request as many results as asked, paging through the API when one page is short")
    def test_max_results_is_honoured_across_pages(self, harness: WebSearchHarness) -> None:
        pages = [
            Document(f"common page number {i}", {"url": f"https://many.test/{i}", "title": f"{i}"})
            for i in range(25)
        ]
        engine = harness.engine(pages, timeout_seconds=5.0)
        assert len(engine.search(WebSearchRequest("common page", 3)).results) == 3
        many = _urls(engine.search(WebSearchRequest("common page", 18)))
        assert len(many) == 18
        assert len(set(many)) == 18, "the same result came back twice (pages overlap)"

    @if_fails("no hits must give empty results (e.g. Google omits `items`), not an error")
    def test_no_match_gives_empty_results(self, engine: WebSearchEngine) -> None:
        assert engine.search(WebSearchRequest("zyxwvut qwertyuiop")).results == ()

    @pytest.mark.parametrize("failure", ["refused", "rate_limited", "server_error", "malformed"])
    @if_fails("every API failure must raise WebSearchError naming the status and the API's message")
    def test_failures_raise_web_search_error(
        self, harness: WebSearchHarness, failure: Failure
    ) -> None:
        engine = harness.engine(PAGES, timeout_seconds=5.0)
        fragment = harness.fail_next(failure)
        with pytest.raises(WebSearchError) as raised:
            engine.search(WebSearchRequest("rust"))
        assert fragment in str(raised.value)
        assert engine.search(WebSearchRequest("rust")).results, "the engine did not recover"

    @if_fails("a late answer must raise WebSearchError saying it timed out (honour the timeout)")
    def test_timeout_raises_web_search_error(self, harness: WebSearchHarness) -> None:
        engine = harness.engine(PAGES, timeout_seconds=0.3)
        fragment = harness.fail_next("slow")
        with pytest.raises(WebSearchError, match="timed out") as raised:
            engine.search(WebSearchRequest("rust"))
        assert fragment in str(raised.value)
