"""SearxngWebSearchEngine against the local SearXNG JSON API wire-format server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ragloom.core.document import Document
from ragloom.core.errors import InvalidArgumentError
from ragloom.core.query import Query
from ragloom.core.web_search import WebSearchError, WebSearchRequest
from ragloom.retrievers.web_search import SearxngWebSearchEngine, WebSearchContentRetriever
from ragloom.retrievers.web_search.testing import SearxngTestServer

PAGES = [
    Document(f"shared word page {i}", {"url": f"https://s.test/{i}", "title": f"Page {i}"})
    for i in range(30)
] + [Document("Rust borrow checker", {"url": "https://s.test/rust", "title": "Rust"})]


@pytest.fixture
def server() -> Iterator[SearxngTestServer]:
    with SearxngTestServer(PAGES) as running:
        yield running


@pytest.fixture
def engine(server: SearxngTestServer) -> Iterator[SearxngWebSearchEngine]:
    engine = SearxngWebSearchEngine(server.url, categories="it", timeout_seconds=2)
    yield engine
    engine.close()


def test_results_map_to_results_and_contents(
    engine: SearxngWebSearchEngine, server: SearxngTestServer
) -> None:
    request = WebSearchRequest(
        "rust borrow", 3, language="en", safe_search=False, additional_params={"time_range": "year"}
    )
    [rust] = engine.search(request).results
    assert (rust.title, rust.url, rust.snippet) == (
        "Rust",
        "https://s.test/rust",
        "Rust borrow checker",
    )
    assert rust.metadata == {"engine": "duckduckgo", "category": "it", "searxng_score": 2.0}
    assert server.received[0].params == {
        "q": "rust borrow",
        "format": "json",
        "categories": "it",
        "language": "en",
        "safesearch": "0",
        "time_range": "year",
        "pageno": "1",
    }
    [content] = WebSearchContentRetriever(engine).retrieve(Query("rust borrow"))
    assert content.score is None  # SearXNG's merge score is not a relevance in [0, 1]
    assert content.text_segment.metadata["searxng_score"] == 2.0


def test_pages_until_enough_results(
    engine: SearxngWebSearchEngine, server: SearxngTestServer
) -> None:
    results = engine.search(WebSearchRequest("shared word", 25))
    assert [r.url for r in results.results] == [f"https://s.test/{i}" for i in range(25)]
    assert [r.params["pageno"] for r in server.received] == ["1", "2", "3"]


def test_paging_stops_at_an_empty_page_and_at_max_pages(server: SearxngTestServer) -> None:
    engine = SearxngWebSearchEngine(server.url, max_pages=2)
    assert len(engine.search(WebSearchRequest("shared word", 100)).results) == 20
    assert len(server.received) == 2
    server.received.clear()
    assert len(SearxngWebSearchEngine(server.url).search(WebSearchRequest("rust", 5)).results) == 1
    assert [r.params["pageno"] for r in server.received] == ["1", "2"]


def test_a_url_repeated_on_a_later_page_is_kept_once(
    engine: SearxngWebSearchEngine, server: SearxngTestServer
) -> None:
    first = server.search("shared word", 1, {})
    server.answer_next(200, first)
    server.answer_next(200, first)  # the instance's engines shifted: page 2 repeats page 1
    results = engine.search(WebSearchRequest("shared word", 15))
    urls = [r.url for r in results.results]
    assert len(urls) == len(set(urls)) == 15


def test_no_results(engine: SearxngWebSearchEngine) -> None:
    assert engine.search(WebSearchRequest("zyxwvut")).results == ()


def test_json_format_disabled_is_403(server: SearxngTestServer) -> None:
    server.json_enabled = False
    with pytest.raises(WebSearchError, match=r"403 \(forbidden: is the json format enabled"):
        SearxngWebSearchEngine(server.url).search(WebSearchRequest("rust"))


def test_limiter_429(engine: SearxngWebSearchEngine, server: SearxngTestServer) -> None:
    server.rate_limit = 1
    engine.search(WebSearchRequest("rust", 1))
    with pytest.raises(WebSearchError, match=r"429 \(too many requests .*Too Many Requests"):
        engine.search(WebSearchRequest("rust", 1))


@pytest.mark.parametrize(
    "payload",
    [b"<html>", {"results": "x"}, {"query": "q"}, {"results": [{"url": 1, "title": "t"}]}],
)
def test_malformed_answers(
    engine: SearxngWebSearchEngine, server: SearxngTestServer, payload: object
) -> None:
    server.answer_next(200, payload)
    with pytest.raises(WebSearchError, match="SearXNG .* malformed answer"):
        engine.search(WebSearchRequest("rust"))


def test_timeout(server: SearxngTestServer) -> None:
    server.delay_next(1.0)
    with pytest.raises(WebSearchError, match="SearXNG at .* timed out"):
        SearxngWebSearchEngine(server.url, timeout_seconds=0.3).search(WebSearchRequest("rust"))


def test_unreachable() -> None:
    engine = SearxngWebSearchEngine("http://127.0.0.1:9", timeout_seconds=1)
    with pytest.raises(WebSearchError, match="unreachable"):
        engine.search(WebSearchRequest("rust"))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"base_url": "localhost:8888"}, "base_url"),
        ({"base_url": "http://x", "max_pages": 0}, "max_pages"),
    ],
)
def test_settings_are_checked(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        SearxngWebSearchEngine(**kwargs)  # type: ignore[arg-type]
