"""WebSearchContentRetriever: the results of a WebSearchEngine as Contents (spec name).

Each organic result becomes one :class:`Content`, in the engine's order: the text is the
title and the page content (or the snippet when the engine returned no content); the
segment's metadata holds ``url``, ``title`` and the engine's scalar extras; the engine's
relevance score, when it gives one in [0, 1], is the Content's ``score``.
"""

from __future__ import annotations

from typing import Any

from ragloom.core.content import SCORE, Content
from ragloom.core.document import TextSegment
from ragloom.core.errors import InvalidArgumentError
from ragloom.core.metadata import ALLOWED_TYPES
from ragloom.core.query import Query
from ragloom.core.retrievers.base import ContentRetriever
from ragloom.core.retrievers.dynamic import Dynamic, resolve_dynamic
from ragloom.core.stores.validation import check_max_results
from ragloom.core.web_search import WebSearchEngine, WebSearchOrganicResult, WebSearchRequest

__all__ = ["WebSearchContentRetriever", "to_content"]


def to_content(result: WebSearchOrganicResult) -> Content:
    """One organic result as a Content: title + content/snippet, url and title as metadata."""
    body = result.content or result.snippet or ""
    text = f"{result.title}\n{body}".strip()
    extras = {
        key: value
        for key, value in result.metadata.items()
        if isinstance(value, ALLOWED_TYPES) and key not in ("url", "title")
    }
    segment = TextSegment(text, {**extras, "url": result.url, "title": result.title})
    score: Any = result.metadata.get("score")
    retrieval = (
        {SCORE: float(score)}
        if isinstance(score, int | float) and not isinstance(score, bool) and 0 <= score <= 1
        else {}
    )
    return Content(segment, retrieval)


class WebSearchContentRetriever(ContentRetriever):
    """Searches the web with ``engine``; ``max_results`` is a value or a function of the query."""

    def __init__(self, engine: WebSearchEngine, *, max_results: Dynamic[int] = 5) -> None:
        if not isinstance(engine, WebSearchEngine):
            raise InvalidArgumentError(
                f"engine must be a WebSearchEngine (with a search method), got "
                f"{type(engine).__name__}"
            )
        if not callable(max_results):
            check_max_results(max_results, error=InvalidArgumentError)
        self.engine = engine
        self.max_results = max_results

    def retrieve(self, query: Query) -> list[Content]:
        """The engine's results for the query text, at most ``max_results``, in its order."""
        if not query.text.strip():
            return []
        max_results = resolve_dynamic(self.max_results, query)
        check_max_results(max_results, error=InvalidArgumentError)
        results = self.engine.search(WebSearchRequest(query.text, max_results=max_results))
        return [to_content(result) for result in results.results[:max_results]]
