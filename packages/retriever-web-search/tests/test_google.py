"""GoogleCustomSearchEngine against the local Custom Search JSON API wire-format server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ragloom.core.document import Document
from ragloom.core.errors import InvalidArgumentError
from ragloom.core.query import Query
from ragloom.core.web_search import WebSearchError, WebSearchRequest
from ragloom.retrievers.web_search import GoogleCustomSearchEngine, WebSearchContentRetriever
from ragloom.retrievers.web_search.testing import (
    DAILY_LIMIT_EXCEEDED,
    GoogleCustomSearchTestServer,
)

PAGES = [
    Document(f"shared word page {i}", {"url": f"https://g.test/{i}", "title": f"Page {i}"})
    for i in range(120)
] + [Document("Rust borrow checker", {"url": "https://g.test/rust", "title": "Rust", "mime": "x"})]


@pytest.fixture
def server() -> Iterator[GoogleCustomSearchTestServer]:
    with GoogleCustomSearchTestServer(PAGES, api_key="k", cx="cx1") as running:
        yield running


@pytest.fixture
def engine(server: GoogleCustomSearchTestServer) -> Iterator[GoogleCustomSearchEngine]:
    engine = GoogleCustomSearchEngine("k", "cx1", base_url=server.url, timeout_seconds=2)
    yield engine
    engine.close()


def test_items_map_to_results_and_contents(
    engine: GoogleCustomSearchEngine, server: GoogleCustomSearchTestServer
) -> None:
    results = engine.search(
        WebSearchRequest(
            "rust borrow",
            3,
            language="de",
            geo_location="ch",
            safe_search=True,
            additional_params={"siteSearch": "g.test"},
        )
    )
    [rust] = results.results
    assert (rust.title, rust.url, rust.snippet) == (
        "Rust",
        "https://g.test/rust",
        "Rust borrow checker",
    )
    assert rust.metadata == {
        "displayLink": "g.test",
        "formattedUrl": "https://g.test/rust",
        "mime": "x",
    }
    assert results.information.total_results == 1
    params = server.received[-1].params
    assert params == {
        "key": "k",
        "cx": "cx1",
        "q": "rust borrow",
        "lr": "lang_de",
        "hl": "de",
        "gl": "ch",
        "safe": "active",
        "siteSearch": "g.test",
        "start": "1",
        "num": "3",
    }
    [content] = WebSearchContentRetriever(engine).retrieve(Query("rust borrow"))
    assert content.text == "Rust\nRust borrow checker"
    assert content.score is None  # Google gives no relevance score
    assert content.text_segment.metadata["url"] == "https://g.test/rust"


def test_pages_of_ten_up_to_googles_limit_of_100(
    engine: GoogleCustomSearchEngine, server: GoogleCustomSearchTestServer
) -> None:
    results = engine.search(WebSearchRequest("shared word", 25))
    assert [r.url for r in results.results] == [f"https://g.test/{i}" for i in range(25)]
    assert [(r.params["start"], r.params["num"]) for r in server.received] == [
        ("1", "10"),
        ("11", "10"),
        ("21", "5"),
    ]
    server.received.clear()
    assert len(engine.search(WebSearchRequest("shared word", 500)).results) == 100
    assert server.received[-1].params["start"] == "91"  # never past start + num - 1 = 100


def test_short_last_page_stops_paging(
    engine: GoogleCustomSearchEngine, server: GoogleCustomSearchTestServer
) -> None:
    assert [r.url for r in engine.search(WebSearchRequest("rust", 30)).results] == [
        "https://g.test/rust"
    ]
    assert len(server.received) == 1


def test_no_items_means_no_results(
    engine: GoogleCustomSearchEngine, server: GoogleCustomSearchTestServer
) -> None:
    results = engine.search(WebSearchRequest("zyxwvut"))
    assert results.results == ()
    assert results.information.total_results == 0


def test_bad_key_is_keyinvalid(server: GoogleCustomSearchTestServer) -> None:
    engine = GoogleCustomSearchEngine("wrong", "cx1", base_url=server.url)
    with pytest.raises(WebSearchError) as raised:
        engine.search(WebSearchRequest("rust"))
    message = str(raised.value)
    assert "400 (keyInvalid): API key not valid" in message
    assert "wrong" not in message  # the key is not leaked into the error


def test_wrong_search_engine_id_is_an_invalid_argument(
    server: GoogleCustomSearchTestServer,
) -> None:
    engine = GoogleCustomSearchEngine("k", "other", base_url=server.url)
    with pytest.raises(WebSearchError, match=r"400 \(badRequest\): Request contains an invalid"):
        engine.search(WebSearchRequest("rust"))


def test_daily_quota_exceeded_429(
    engine: GoogleCustomSearchEngine, server: GoogleCustomSearchTestServer
) -> None:
    server.queries_per_day = 2
    engine.search(WebSearchRequest("shared word", 20))  # two requests: the whole quota
    with pytest.raises(WebSearchError, match=r"429 \(rateLimitExceeded\): Quota exceeded"):
        engine.search(WebSearchRequest("rust"))


def test_legacy_daily_limit_exceeded_403(
    engine: GoogleCustomSearchEngine, server: GoogleCustomSearchTestServer
) -> None:
    server.answer_next(403, DAILY_LIMIT_EXCEEDED)
    with pytest.raises(WebSearchError, match=r"403 \(dailyLimitExceeded\): Daily Limit Exceeded"):
        engine.search(WebSearchRequest("rust"))


@pytest.mark.parametrize(
    "payload",
    [b"{not json", {"items": {"title": "x"}}, {"items": [{"title": "no link"}]}, [1, 2]],
)
def test_malformed_answers(
    engine: GoogleCustomSearchEngine, server: GoogleCustomSearchTestServer, payload: object
) -> None:
    server.answer_next(200, payload)
    with pytest.raises(WebSearchError, match="Google Custom Search .* malformed answer"):
        engine.search(WebSearchRequest("rust"))


def test_timeout_on_a_later_page(server: GoogleCustomSearchTestServer) -> None:
    engine = GoogleCustomSearchEngine("k", "cx1", base_url=server.url, timeout_seconds=0.3)
    server.answer_next(*_first_page(server))
    server.delay_next(1.0)
    with pytest.raises(WebSearchError, match="timed out"):
        engine.search(WebSearchRequest("shared word", 20))


def _first_page(server: GoogleCustomSearchTestServer) -> tuple[int, object]:
    return 200, server.search("shared word", 1, 10, {})


def test_settings_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_CSE_ID", "cx-env")
    with pytest.raises(InvalidArgumentError, match="GOOGLE_API_KEY"):
        GoogleCustomSearchEngine()
    monkeypatch.setenv("GOOGLE_API_KEY", "k-env")
    assert GoogleCustomSearchEngine().search_engine_id == "cx-env"
