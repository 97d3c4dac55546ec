"""BM25ContentRetriever: keyword (full-text) retrieval from a :class:`BM25Index`."""

from __future__ import annotations

from collections.abc import Iterable

from ragloom.core.bm25.analyzer import Analyzer
from ragloom.core.bm25.feedback import RM3
from ragloom.core.bm25.index import BM25Index
from ragloom.core.bm25.scoring import BM25Variant
from ragloom.core.content import SCORE, SEGMENT_ID, Content
from ragloom.core.document import Document, TextSegment
from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError
from ragloom.core.filters import Filter
from ragloom.core.query import Query
from ragloom.core.retrievers.dynamic import Dynamic, resolve_dynamic
from ragloom.core.splitters.base import DocumentSplitter

__all__ = ["SEGMENT_ID", "BM25ContentRetriever"]

"""Content metadata key: the id of the matched segment in the keyword index."""


class BM25ContentRetriever:
    """Searches a :class:`BM25Index` with the query text; finds exact words, names and codes.

    ``max_results``, ``min_score`` and ``filter`` may each be a value or a function of the
    :class:`Query`, as for the embedding-store retriever. ``min_score`` is in raw BM25 units
    (unbounded, corpus-dependent); ``None`` keeps every segment that holds a query term.
    Each :class:`Content` carries ``score`` and ``segment_id`` in its metadata.
    ``expansion=RM3()`` expands each query with the words of its first hits (pseudo-
    relevance feedback, see :mod:`ragloom.core.bm25.feedback`): better for keyword
    retrieval alone, not inside a hybrid.
    """

    def __init__(
        self,
        index: BM25Index,
        *,
        max_results: Dynamic[int] = 3,
        min_score: Dynamic[float | None] = None,
        filter: Dynamic[Filter | None] = None,
        display_name: str = "bm25",
        expansion: RM3 | None = None,
    ) -> None:
        if not isinstance(index, BM25Index):
            raise InvalidArgumentTypeError(f"index must be a BM25Index, got {type(index).__name__}")
        if not callable(max_results) and (type(max_results) is not int or max_results < 1):
            raise InvalidArgumentError(f"max_results must be a positive int, got {max_results!r}")
        if expansion is not None and not isinstance(expansion, RM3):
            raise InvalidArgumentTypeError(
                f"expansion must be an RM3 or None, got {type(expansion).__name__}"
            )
        self.index = index
        self.expansion = expansion
        self.max_results = max_results
        self.min_score = min_score
        self.filter = filter
        self.display_name = display_name

    @classmethod
    def from_documents(
        cls,
        documents: Iterable[Document],
        *,
        document_splitter: DocumentSplitter | None = None,
        analyzer: Analyzer | None = None,
        k1: float = 1.5,
        b: float = 0.75,
        variant: BM25Variant = "lucene",
        max_results: Dynamic[int] = 3,
        min_score: Dynamic[float | None] = None,
        filter: Dynamic[Filter | None] = None,
        expansion: RM3 | None = None,
    ) -> BM25ContentRetriever:
        """Index ``documents`` (split by ``document_splitter``, else whole) and retrieve them."""
        segments: list[TextSegment] = []
        for document in documents:
            if document_splitter is None:
                segments.append(document.to_text_segment())
            else:
                segments.extend(document_splitter.split(document))
        index = BM25Index(analyzer, k1=k1, b=b, variant=variant)
        index.add_all(segments)
        return cls(
            index, max_results=max_results, min_score=min_score, filter=filter, expansion=expansion
        )

    def retrieve(self, query: Query) -> list[Content]:
        """The best-scoring segments holding a query term, best first."""
        filter = resolve_dynamic(self.filter, query)
        search: str | dict[str, float] = query.text
        if self.expansion is not None:
            first = self.index.search(
                query.text, max_results=self.expansion.documents, filter=filter
            )
            search = self.expansion.expand(self.index, query.text, first)
            if not search:
                return []
        matches = self.index.search(
            search,
            max_results=resolve_dynamic(self.max_results, query),
            min_score=resolve_dynamic(self.min_score, query),
            filter=filter,
        )
        return [Content(m.segment, {SCORE: m.score, SEGMENT_ID: m.id}) for m in matches]

    def __repr__(self) -> str:
        return f"BM25ContentRetriever({self.display_name!r}, {self.index!r})"
