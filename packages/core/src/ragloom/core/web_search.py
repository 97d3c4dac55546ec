"""Web search: the WebSearchEngine protocol and its request and result types (spec names).

An engine (Tavily, Google Custom Search, SearXNG, ...) answers a :class:`WebSearchRequest`
with :class:`WebSearchResults`: the organic results in the engine's order, each with a
title, URL, snippet and, when the engine returns it, the page's content. Engines raise
:class:`WebSearchError` naming the engine and its own message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ragloom.core.errors import InvalidArgumentError, RetrievalError

__all__ = [
    "WebSearchEngine",
    "WebSearchError",
    "WebSearchInformationResult",
    "WebSearchOrganicResult",
    "WebSearchRequest",
    "WebSearchResults",
]


class WebSearchError(RetrievalError):
    """A web search engine failed: bad key, quota, timeout, malformed answer (names the engine)."""


@dataclass(frozen=True, slots=True)
class WebSearchRequest:
    """What to search for: the terms, how many results, and optional engine hints.

    ``additional_params`` are passed to the engine as they are (engine-specific options).
    """

    search_terms: str
    max_results: int | None = None
    language: str | None = None
    geo_location: str | None = None
    safe_search: bool | None = None
    additional_params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.search_terms, str) or not self.search_terms.strip():
            raise InvalidArgumentError(
                f"search_terms must be a non-blank str, got {self.search_terms!r}"
            )
        if self.max_results is not None and (
            isinstance(self.max_results, bool)
            or not isinstance(self.max_results, int)
            or self.max_results < 1
        ):
            raise InvalidArgumentError(f"max_results must be an int >= 1, got {self.max_results!r}")


@dataclass(frozen=True, slots=True)
class WebSearchOrganicResult:
    """One result: title, URL, snippet, the page content when the engine gives it, extras."""

    title: str
    url: str
    snippet: str | None = None
    content: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class WebSearchInformationResult:
    """About the whole search: total hits when known, page number, engine extras."""

    total_results: int | None = None
    page_number: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class WebSearchResults:
    """The organic results, in the engine's order, plus information about the search."""

    results: tuple[WebSearchOrganicResult, ...]
    information: WebSearchInformationResult = field(default_factory=WebSearchInformationResult)
    search_metadata: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class WebSearchEngine(Protocol):
    """Searches the web (the spec's ``WebSearchEngine``)."""

    def search(self, request: WebSearchRequest) -> WebSearchResults:
        """The results for ``request``, best first; at most ``request.max_results``."""
        ...
