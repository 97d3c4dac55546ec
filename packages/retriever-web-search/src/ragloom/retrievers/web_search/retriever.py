"""WebSearchContentRetriever: the results of a WebSearchEngine as Contents (spec name).

Each organic result becomes one :class:`Content`, in the engine's order: the text is the
title and the page content (or the snippet when the engine returned no content); the
segment's metadata holds ``url``, ``title`` and the engine's scalar extras; the engine's
relevance score, when it gives one in [0, 1], is the Content's ``score``.

With ``fetch_pages=True`` each result's page is fetched with core's
:class:`~ragloom.core.loaders.url.UrlDocumentLoader` (``page_parser``), passed through
``page_transformer`` (e.g. the HTML-to-text transformer of ``ragloom-transformer-html``)
and becomes the result's content; a page that cannot be fetched keeps the engine's
text and says why under ``page_error``. A result's URL is chosen by the search engine
(and by whoever wrote the page it indexed), so pages are fetched under core's egress
policy: public addresses only, unless ``allow_private_addresses=True`` or ``egress``.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ragloom.core.content import SCORE, Content
from ragloom.core.document import Document, TextSegment
from ragloom.core.errors import InvalidArgumentError, RagloomError
from ragloom.core.kit.egress import ALLOW_ALL, DEFAULT_EGRESS_POLICY, EgressPolicy
from ragloom.core.loaders.url import UrlDocumentLoader
from ragloom.core.metadata import ALLOWED_TYPES
from ragloom.core.parsers.base import DocumentParser
from ragloom.core.query import Query
from ragloom.core.retrievers.base import ContentRetriever
from ragloom.core.retrievers.dynamic import Dynamic, resolve_dynamic
from ragloom.core.stores.validation import check_max_results
from ragloom.core.transformers import DocumentTransformer
from ragloom.core.web_search import WebSearchEngine, WebSearchOrganicResult, WebSearchRequest

__all__ = ["WebSearchContentRetriever", "to_content"]

PAGE_ERROR = "page_error"
_FETCH_THREADS = 8


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
    """Searches the web with ``engine``; ``max_results`` is a value or a function of the query.

    ``fetch_pages``: fetch every result's page (at most 8 at a time, each within
    ``page_timeout_seconds``) with ``page_parser`` (default: the discovered parser), then
    ``page_transformer`` when given, and use its text as the result's content.
    Pages are fetched under the egress policy (public addresses only, checked after DNS
    and on every redirect); ``allow_private_addresses=True`` reaches every address
    (intranet search), ``egress`` passes a policy of your own.
    """

    def __init__(
        self,
        engine: WebSearchEngine,
        *,
        max_results: Dynamic[int] = 5,
        fetch_pages: bool = False,
        page_parser: DocumentParser | None = None,
        page_transformer: DocumentTransformer | None = None,
        page_timeout_seconds: float = 10.0,
        allow_private_addresses: bool = False,
        egress: EgressPolicy | None = None,
    ) -> None:
        if not isinstance(engine, WebSearchEngine):
            raise InvalidArgumentError(
                f"engine must be a WebSearchEngine (with a search method), got "
                f"{type(engine).__name__}"
            )
        if not callable(max_results):
            check_max_results(max_results, error=InvalidArgumentError)
        if page_transformer is not None and not callable(
            getattr(page_transformer, "transform", None)
        ):
            raise InvalidArgumentError(
                "page_transformer must be a DocumentTransformer, got "
                f"{type(page_transformer).__name__}"
            )
        self.engine = engine
        self.max_results = max_results
        self.fetch_pages = fetch_pages
        self.page_parser = page_parser
        self.page_transformer = page_transformer
        self.page_timeout_seconds = page_timeout_seconds
        self.egress = egress or (ALLOW_ALL if allow_private_addresses else DEFAULT_EGRESS_POLICY)

    def retrieve(self, query: Query) -> list[Content]:
        """The engine's results for the query text, at most ``max_results``, in its order."""
        if not query.text.strip():
            return []
        max_results = resolve_dynamic(self.max_results, query)
        check_max_results(max_results, error=InvalidArgumentError)
        results = self.engine.search(WebSearchRequest(query.text, max_results=max_results))
        organic = list(results.results[:max_results])
        if self.fetch_pages and organic:
            with ThreadPoolExecutor(min(_FETCH_THREADS, len(organic))) as pool:
                organic = list(pool.map(self._with_page, organic))
        return [to_content(result) for result in organic]

    def _with_page(self, result: WebSearchOrganicResult) -> WebSearchOrganicResult:
        """``result`` with its fetched page as content, or with the reason it has none."""
        try:
            document: Document | None = UrlDocumentLoader.load(
                result.url, self.page_parser, timeout=self.page_timeout_seconds, egress=self.egress
            )
            if self.page_transformer is not None and document is not None:
                document = self.page_transformer.transform(document)
        except RagloomError as exc:
            error = str(exc)
        else:
            if document is not None and document.text.strip():
                return dataclasses.replace(result, content=document.text)
            error = f"{result.url}: the page has no text (or the transformer dropped it)"
        return dataclasses.replace(result, metadata={**result.metadata, PAGE_ERROR: error})
