"""The web search request checks its settings; an engine satisfies the protocol by shape."""

from __future__ import annotations

import pytest

from ragloom.core.errors import InvalidArgumentError, RetrievalError
from ragloom.core.web_search import (
    WebSearchEngine,
    WebSearchError,
    WebSearchOrganicResult,
    WebSearchRequest,
    WebSearchResults,
)


@pytest.mark.parametrize("terms", ["", "   ", None, 3])
def test_request_needs_search_terms(terms: object) -> None:
    with pytest.raises(InvalidArgumentError, match="search_terms"):
        WebSearchRequest(terms)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [0, -1, True, 2.5])
def test_request_max_results_is_checked(value: object) -> None:
    with pytest.raises(InvalidArgumentError, match="max_results"):
        WebSearchRequest("q", max_results=value)  # type: ignore[arg-type]


def test_an_engine_is_recognised_by_its_search_method() -> None:
    class Engine:
        def search(self, request: WebSearchRequest) -> WebSearchResults:
            return WebSearchResults((WebSearchOrganicResult("t", "https://x.test"),))

    assert isinstance(Engine(), WebSearchEngine)
    assert not isinstance(object(), WebSearchEngine)
    assert issubclass(WebSearchError, RetrievalError)
