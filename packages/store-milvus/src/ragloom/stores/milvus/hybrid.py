"""MilvusHybridContentRetriever: dense + BM25 keyword search fused inside Milvus.

The same idea as core's :class:`~ragloom.core.retrievers.hybrid.HybridContentRetriever`
(reciprocal rank fusion of a dense and a keyword ranking), done by the engine in one
``hybrid_search`` call: an ``AnnSearchRequest`` on the dense ``vector`` field (cosine) and
one on the ``sparse`` field with the query text (metric ``BM25``), fused by
``RRFRanker(k)``, ``score = sum 1 / (k + rank)``.

Milvus computes the keyword side itself: the store's collection, created with
``full_text=True``, has a BM25 function turning the analyzed ``text`` field into a sparse
vector at insert time, and Milvus weighs query terms by IDF over the live collection at
search time. Nothing BM25-related is computed in Python.

A ``filter`` (a value or a function of the query) is compiled by the store's filter
compiler (values escaped or passed as expression parameters) and given to both requests,
so each ranking covers matching entries only; a filter Milvus cannot state exactly is
first resolved to the ids of the matching entries, and a stored value of the wrong type
raises ``InvalidFilterError`` as in the store. :meth:`remove_all` deletes whole rows, so
an entry's vector and its BM25 terms always go together.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pymilvus import AnnSearchRequest, RRFRanker  # type: ignore[import-untyped]

from ragloom.core.content import EMBEDDING_ID, SCORE, Content
from ragloom.core.document import TextSegment
from ragloom.core.embedding import EmbeddingModel
from ragloom.core.errors import EmbeddingStoreError, InvalidArgumentError
from ragloom.core.filters import Filter
from ragloom.core.metadata import Metadata
from ragloom.core.query import Query
from ragloom.core.retrievers.dynamic import Dynamic, resolve_dynamic
from ragloom.core.stores.validation import check_filter
from ragloom.stores.milvus.store import SPARSE_FIELD, MilvusEmbeddingStore

__all__ = ["MilvusHybridContentRetriever"]

_OUTPUT = ["id", "seq", "text", "has_text", "metadata", "kinds", "exact"]


class MilvusHybridContentRetriever:
    """Hybrid (dense + Milvus BM25, RRF-fused by Milvus) retrieval over a store's collection.

    ``store`` is a :class:`MilvusEmbeddingStore` whose collection has the BM25 function
    (``full_text=True``); fill it with :meth:`add_all` (segments are embedded with
    ``embedding_model``) or with an ingestor writing to ``store``. ``max_results`` cuts
    the fused list; ``candidates`` is how many each ranking contributes (default
    ``max(3 * max_results, 20)``); ``k`` is the RRF constant. Contents carry ``score``
    (the fused RRF score) and ``embedding_id``; entries stored without a segment are skipped.
    """

    def __init__(
        self,
        store: MilvusEmbeddingStore,
        embedding_model: EmbeddingModel,
        *,
        max_results: int = 10,
        candidates: int | None = None,
        k: int = 60,
        filter: Dynamic[Filter | None] = None,
    ) -> None:
        if not isinstance(store, MilvusEmbeddingStore):
            raise InvalidArgumentError(
                f"store must be a MilvusEmbeddingStore, got {type(store).__name__}"
            )
        if not store.full_text:
            raise EmbeddingStoreError(
                f"Milvus collection {store.collection!r} has no BM25 keyword index: "
                "create the store with MilvusEmbeddingStore(..., full_text=True) (for an "
                "existing dense-only collection, a new collection_name) to search it hybridly"
            )
        if type(max_results) is not int or max_results < 1:
            raise InvalidArgumentError(f"max_results must be a positive int, got {max_results!r}")
        if candidates is None:
            candidates = max(3 * max_results, 20)
        if type(candidates) is not int or not max_results <= candidates <= 16384:
            raise InvalidArgumentError(
                f"candidates must be an int from max_results to 16384, got {candidates!r}"
            )
        if type(k) is not int or not 0 < k < 16384:
            raise InvalidArgumentError(f"k must be an int in (0, 16384), got {k!r}")
        self.store = store
        self.embedding_model = embedding_model
        self.max_results = max_results
        self.candidates = candidates
        self.k = k
        self.filter = filter

    def __repr__(self) -> str:
        return (
            f"MilvusHybridContentRetriever(collection_name={self.store.collection!r}, "
            f"max_results={self.max_results}, candidates={self.candidates}, k={self.k})"
        )

    def add_all(
        self, segments: Sequence[TextSegment], ids: Sequence[str] | None = None
    ) -> list[str]:
        """Embed and store ``segments`` (replacing entries with the same ids); their ids."""
        segments = list(segments)
        if not all(isinstance(s, TextSegment) for s in segments):
            raise InvalidArgumentError("add_all takes a sequence of TextSegment")
        if not segments:
            return self.store.add_all([], [], ids=ids)
        embeddings = self.embedding_model.embed_all(segments).embeddings
        return self.store.add_all(embeddings, segments, ids=ids)

    def remove_all(self, ids: Iterable[str] | None = None, *, filter: Filter | None = None) -> None:
        """Remove the given ids, the entries matching ``filter``, or (neither) everything."""
        self.store.remove_all(ids, filter=filter)

    def retrieve(self, query: Query) -> list[Content]:
        """The RRF-fused dense and keyword matches of ``query``, best first."""
        if not isinstance(query, Query):
            raise InvalidArgumentError(f"retrieve takes a Query, got {type(query).__name__}")
        store = self.store
        condition = resolve_dynamic(self.filter, query)
        if store.dimension is None:  # nothing written yet
            if condition is not None:
                check_filter(condition)
            return []
        expr = store._run(store._filter_expr(condition))
        if expr is False:
            return []
        dense = self.embedding_model.embed(query.text).embedding.vector
        if dense.shape[0] != store.dimension:
            raise EmbeddingStoreError(
                f"Milvus collection {store.collection!r} has dimension {store.dimension}, "
                f"the embedding model gives {dense.shape[0]}"
            )
        where: dict[str, Any] = {}
        if expr is not None:
            rendered = store._render(expr)
            where = {"expr": rendered["filter"], "expr_params": rendered.get("filter_params")}
        requests = [
            AnnSearchRequest(
                [dense.tolist()],
                "vector",
                {"metric_type": "COSINE", "params": store._search_params},
                self.candidates,
                **where,
            ),
            AnnSearchRequest(
                [query.text], SPARSE_FIELD, {"metric_type": "BM25"}, self.candidates, **where
            ),
        ]
        found = store._call(
            "hybrid search",
            store.client.hybrid_search,
            store.collection,
            requests,
            RRFRanker(self.k),
            limit=self.max_results,
            output_fields=_OUTPUT,
            consistency_level="Strong",
        )
        hits = sorted(found[0] if found else [], key=lambda h: (-h["distance"], h["entity"]["seq"]))
        return [
            Content(
                TextSegment(hit["entity"]["text"], Metadata(store._metadata(hit["entity"]))),
                {SCORE: float(hit["distance"]), EMBEDDING_ID: hit["entity"]["id"]},
            )
            for hit in hits
            if hit["entity"]["has_text"]
        ]
