"""AzureAiSearchContentRetriever: contents relevant to a query, most relevant first.

``max_results``, ``min_score`` and ``filter`` are each a value or a function of the
:class:`Query`, as in core's EmbeddingStoreContentRetriever. Each Content carries its
score (in [0, 1], higher is better) under ``score`` in its metadata. The public methods
below are complete; the private ones talk to the server.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragloom.core.content import SCORE, Content
from ragloom.core.document import Document, TextSegment
from ragloom.core.filters import Filter
from ragloom.core.query import Query
from ragloom.core.retrievers.base import ContentRetriever
from ragloom.core.retrievers.dynamic import Dynamic, resolve_dynamic
from ragloom.core.stores.validation import check_max_results, check_min_score


class AzureAiSearchContentRetriever(ContentRetriever):
    """Searches the azure-ai-search server at ``url``."""

    def __init__(
        self,
        url: str,
        *,
        max_results: Dynamic[int] = 3,
        min_score: Dynamic[float] = 0.0,
        filter: Dynamic[Filter | None] = None,
    ) -> None:
        if not callable(max_results):  # static settings are checked now, not at the first query
            check_max_results(max_results)
        if not callable(min_score):
            check_min_score(min_score)
        self.url = url
        self.max_results = max_results
        self.min_score = min_score
        self.filter = filter

    def add_documents(self, documents: Sequence[Document]) -> None:
        """Index ``documents`` (text and metadata) so that queries can find them."""
        raise NotImplementedError(
            f"implement me: index {len(documents)} documents (text, metadata) at {self.url} "
            "with azure-search-documents>=11.6, in one request when the server allows it"
        )

    def retrieve(self, query: Query) -> list[Content]:
        """The best ``max_results`` contents scoring at least ``min_score``."""
        max_results = resolve_dynamic(self.max_results, query)
        min_score = resolve_dynamic(self.min_score, query)
        check_max_results(max_results)  # a function of the query may return anything
        check_min_score(min_score)
        hits = self._search(query.text, max_results, resolve_dynamic(self.filter, query))
        return [Content(segment, {SCORE: score}) for segment, score in hits if score >= min_score]

    def _search(
        self, text: str, max_results: int, filter: Filter | None
    ) -> list[tuple[TextSegment, float]]:
        raise NotImplementedError(
            f"implement me: the {max_results} best segments for {text!r} from {self.url}, "
            "with their scores normalized to [0, 1], best first, ties in a stable order; translate "
            "`filter` with a ragloom.core.filter_compiler.FilterCompiler subclass"
        )
