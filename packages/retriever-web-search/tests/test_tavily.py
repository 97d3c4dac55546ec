"""The Tavily engine and the retriever against the local Tavily wire-format server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ragloom.core.document import Document
from ragloom.core.errors import InvalidArgumentError
from ragloom.core.query import Query
from ragloom.core.web_search import (
    WebSearchError,
    WebSearchOrganicResult,
    WebSearchRequest,
    WebSearchResults,
)
from ragloom.retrievers.web_search import TavilyWebSearchEngine, WebSearchContentRetriever
from ragloom.retrievers.web_search.testing import TavilyTestServer

PAGES = [
    Document(
        "Rust ownership rules and the borrow checker.",
        {"url": "https://a.test/rust", "title": "Rust"},
    ),
    Document(
        "Python asyncio event loop and tasks.", {"url": "https://a.test/py", "title": "Python"}
    ),
    Document(
        "The borrow checker rejects dangling references.",
        {"url": "https://a.test/borrow", "title": "Borrowing"},
    ),
]


@pytest.fixture
def server() -> Iterator[TavilyTestServer]:
    with TavilyTestServer(PAGES, api_key="tvly-good") as running:
        yield running


@pytest.fixture
def engine(server: TavilyTestServer) -> Iterator[TavilyWebSearchEngine]:
    engine = TavilyWebSearchEngine("tvly-good", base_url=server.url, timeout_seconds=2)
    yield engine
    engine.close()


def test_results_map_to_contents_with_url_title_and_score(
    engine: TavilyWebSearchEngine, server: TavilyTestServer
) -> None:
    contents = WebSearchContentRetriever(engine, max_results=2).retrieve(
        Query("borrow checker rules")
    )
    assert [c.text_segment.metadata["url"] for c in contents] == [
        "https://a.test/rust",
        "https://a.test/borrow",
    ]
    first = contents[0]
    assert first.text == "Rust\nRust ownership rules and the borrow checker."
    assert first.text_segment.metadata["title"] == "Rust"
    assert first.score == 1.0
    assert contents[1].score == pytest.approx(2 / 3, abs=1e-6)
    assert server.requests[-1] == {
        "query": "borrow checker rules",
        "search_depth": "basic",
        "topic": "general",
        "include_raw_content": False,
        "max_results": 2,
    }


def test_raw_content_becomes_the_page_content(server: TavilyTestServer) -> None:
    engine = TavilyWebSearchEngine("tvly-good", base_url=server.url, include_raw_content=True)
    results = engine.search(
        WebSearchRequest("asyncio", max_results=1, additional_params={"time_range": "week"})
    )
    [result] = results.results
    assert result.content == "Python asyncio event loop and tasks."
    assert result.snippet == "Python asyncio event loop and tasks."
    assert server.requests[-1]["time_range"] == "week"
    assert results.search_metadata["query"] == "asyncio"


def test_empty_results(engine: TavilyWebSearchEngine) -> None:
    assert WebSearchContentRetriever(engine).retrieve(Query("zyxwvut")) == []
    assert WebSearchContentRetriever(engine).retrieve(Query("   ")) == []


def test_max_results_is_capped_at_tavilys_limit(
    engine: TavilyWebSearchEngine, server: TavilyTestServer
) -> None:
    WebSearchContentRetriever(engine, max_results=lambda q: 50).retrieve(Query("rust"))
    assert server.requests[-1]["max_results"] == 20


def test_bad_key_is_named(server: TavilyTestServer) -> None:
    engine = TavilyWebSearchEngine("tvly-wrong", base_url=server.url)
    with pytest.raises(WebSearchError, match=r"401 \(invalid or missing API key\): Unauthorized"):
        engine.search(WebSearchRequest("rust"))


@pytest.mark.parametrize(
    ("status", "message", "reason"),
    [
        (432, "This request exceeds your plan's set usage limit.", "plan usage limit exceeded"),
        (
            433,
            "This request exceeds the pay-as-you-go limit.",
            "pay-as-you-go spending limit exceeded",
        ),
        (429, "Rate limit exceeded.", "rate limit exceeded"),
        (500, "Internal error", "error"),
    ],
)
def test_quota_and_server_errors_carry_tavilys_message(
    engine: TavilyWebSearchEngine, server: TavilyTestServer, status: int, message: str, reason: str
) -> None:
    server.fail_with = (status, message)
    with pytest.raises(WebSearchError, match=rf"{status} \({reason}\): {message}"):
        engine.search(WebSearchRequest("rust"))


def test_timeout(server: TavilyTestServer) -> None:
    server.delay_seconds = 1.0
    engine = TavilyWebSearchEngine("tvly-good", base_url=server.url, timeout_seconds=0.2)
    with pytest.raises(WebSearchError, match="timed out"):
        engine.search(WebSearchRequest("rust"))


def test_unreachable_server() -> None:
    engine = TavilyWebSearchEngine("k", base_url="http://127.0.0.1:9", timeout_seconds=1)
    with pytest.raises(WebSearchError, match="unreachable"):
        engine.search(WebSearchRequest("rust"))


@pytest.mark.parametrize("answer", [{"results": [{"url": "https://x.test"}]}, {"detail": "?"}])
def test_malformed_answer_is_reported(
    engine: TavilyWebSearchEngine, server: TavilyTestServer, answer: dict[str, object]
) -> None:
    server.answer_override = answer
    with pytest.raises(WebSearchError, match="malformed answer"):
        engine.search(WebSearchRequest("rust"))


def test_settings_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    with pytest.raises(InvalidArgumentError, match="TAVILY_API_KEY"):
        TavilyWebSearchEngine()
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-env")
    engine = TavilyWebSearchEngine()
    with pytest.raises(InvalidArgumentError, match="WebSearchEngine"):
        WebSearchContentRetriever(object())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="max_results"):
        WebSearchContentRetriever(engine, max_results=0)
    with pytest.raises(InvalidArgumentError, match="max_results"):
        WebSearchContentRetriever(engine, max_results=lambda q: 0).retrieve(Query("x"))


def test_any_engine_works_and_scores_outside_0_1_are_dropped() -> None:
    class Engine:
        def search(self, request: WebSearchRequest) -> WebSearchResults:
            return WebSearchResults(
                (
                    WebSearchOrganicResult(
                        "A", "https://a.test", "snippet a", metadata={"score": 7, "rank": 1}
                    ),
                    WebSearchOrganicResult("B", "https://b.test", None, metadata={"tags": ["x"]}),
                )
            )

    a, b = WebSearchContentRetriever(Engine()).retrieve(Query("q"))
    assert a.text == "A\nsnippet a"
    assert a.score is None
    assert a.text_segment.metadata.to_dict() == {
        "score": 7,
        "rank": 1,
        "url": "https://a.test",
        "title": "A",
    }
    assert b.text == "B"
    assert "tags" not in b.text_segment.metadata
