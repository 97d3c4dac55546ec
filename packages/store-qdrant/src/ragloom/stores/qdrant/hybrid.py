"""QdrantHybridContentRetriever: dense + keyword search fused inside Qdrant.

The same idea as core's :class:`~ragloom.core.retrievers.hybrid.HybridContentRetriever`
(reciprocal rank fusion of a dense and a keyword ranking), done by the engine in one
Query API call: two ``Prefetch`` es (the dense vector ``"dense"``, the sparse vector
``"bm25"``) fused with ``FusionQuery(fusion=Fusion.RRF)``.

The sparse vectors are BM25 computed client-side with core's analyzer: a document's
terms (:class:`~ragloom.core.bm25.analyzer.StandardAnalyzer` by default) map to indices
(the first 4 bytes of each term's BLAKE2b hash) with BM25's saturated term frequency
``tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg_length))`` as values; a query
weighs each distinct term 1. The collection's sparse vector has ``Modifier.IDF``, so
Qdrant multiplies by each term's inverse document frequency over the live collection.
``avg_length`` is fixed (not the corpus mean, which changes as documents come and go),
as fastembed's ``Qdrant/bm25`` does.

The retriever owns its collection (one named dense vector, cosine, and the sparse one);
fill it with :meth:`add_all` (segments are embedded with ``embedding_model``). Contents
carry ``score`` (Qdrant's fused RRF score, ``sum 1 / (2 + rank)`` in Qdrant's formula)
and ``embedding_id``; qdrant-client's local mode supports all of this (tested).

A ``filter`` (a value or a function of the query) is compiled by the store's filter
compiler and applied inside both prefetches, so each ranking is over the matching
points only; a filter Qdrant cannot state exactly (a str ordering) is first resolved to
the ids of the matching points. :meth:`remove_all` deletes whole points, so the dense
and the sparse vector of an entry always go together.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from qdrant_client import QdrantClient, models

from ragloom.core.bm25.analyzer import Analyzer, StandardAnalyzer, analyze
from ragloom.core.content import SCORE, Content
from ragloom.core.document import TextSegment
from ragloom.core.embedding import EmbeddingModel
from ragloom.core.errors import EmbeddingStoreError, InvalidArgumentError, RagloomError
from ragloom.core.filters import Filter
from ragloom.core.kit.steps import run_steps
from ragloom.core.query import Query
from ragloom.core.retrievers.dynamic import Dynamic, resolve_dynamic
from ragloom.core.stores.validation import check_filter, generate_ids, validate_ids
from ragloom.stores.qdrant._filters import check_types, compile_filter
from ragloom.stores.qdrant._payload import decode_meta, point_id, point_payload

__all__ = ["DENSE_VECTOR", "SPARSE_VECTOR", "QdrantHybridContentRetriever"]

DENSE_VECTOR = "dense"
SPARSE_VECTOR = "bm25"
EMBEDDING_ID = "embedding_id"
_PAGE = 1000  # points per scroll page


def term_index(term: str) -> int:
    """The sparse index of ``term``: a stable 32-bit hash (Qdrant indices are uint32)."""
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest(), "big")


class QdrantHybridContentRetriever:
    """Hybrid (dense + BM25 sparse, RRF-fused by Qdrant) retrieval over one collection.

    ``client`` is any :class:`QdrantClient` (local mode, a server or a cluster).
    ``max_results`` cuts the fused list; ``candidates`` is how many each prefetch
    returns (default ``max(3 * max_results, 20)``). ``k1``/``b``/``avg_length`` are the
    BM25 document weighting; ``analyzer`` makes the terms (default StandardAnalyzer).
    ``filter`` restricts both rankings to matching entries (see the module docstring).
    """

    def __init__(
        self,
        client: QdrantClient,
        collection: str,
        embedding_model: EmbeddingModel,
        *,
        max_results: int = 10,
        candidates: int | None = None,
        analyzer: Analyzer | None = None,
        k1: float = 1.2,
        b: float = 0.75,
        avg_length: float = 256.0,
        filter: Dynamic[Filter | None] = None,
    ) -> None:
        if not isinstance(collection, str) or not collection:
            raise InvalidArgumentError(f"collection must be a non-empty str, got {collection!r}")
        if type(max_results) is not int or max_results < 1:
            raise InvalidArgumentError(f"max_results must be a positive int, got {max_results!r}")
        if candidates is None:
            candidates = max(3 * max_results, 20)
        if type(candidates) is not int or candidates < max_results:
            raise InvalidArgumentError(
                f"candidates must be an int >= max_results, got {candidates!r}"
            )
        for name, value in (("k1", k1), ("b", b), ("avg_length", avg_length)):
            if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
                raise InvalidArgumentError(f"{name} must be a number >= 0, got {value!r}")
        if not 0 <= b <= 1 or avg_length <= 0:
            raise InvalidArgumentError(
                f"need 0 <= b <= 1 and avg_length > 0, got {b}, {avg_length}"
            )
        self.client = client
        self.collection = collection
        self.embedding_model = embedding_model
        self.max_results = max_results
        self.candidates = candidates
        self.analyzer: Analyzer = analyzer if analyzer is not None else StandardAnalyzer()
        self.k1, self.b, self.avg_length = float(k1), float(b), float(avg_length)
        self.filter = filter
        self._ready = False

    def __repr__(self) -> str:
        return (
            f"QdrantHybridContentRetriever(collection={self.collection!r}, "
            f"max_results={self.max_results}, candidates={self.candidates})"
        )

    def _call(self, what: str, action: Any) -> Any:
        """Run a client call, wrapping client errors in EmbeddingStoreError."""
        try:
            return action()
        except RagloomError:
            raise
        except Exception as exc:  # the client raises many unrelated types
            raise EmbeddingStoreError(
                f"Qdrant collection {self.collection!r}: {what} failed: {exc}"
            ) from exc

    def _open(self, dimension: int) -> None:
        """Create the collection (dense + IDF sparse vector) or check the existing one."""
        if self._ready:
            return
        if not self._call("checking", lambda: self.client.collection_exists(self.collection)):
            self._call(
                "creating",
                lambda: self.client.create_collection(
                    self.collection,
                    vectors_config={
                        DENSE_VECTOR: models.VectorParams(
                            size=dimension, distance=models.Distance.COSINE
                        )
                    },
                    sparse_vectors_config={
                        SPARSE_VECTOR: models.SparseVectorParams(modifier=models.Modifier.IDF)
                    },
                ),
            )
        params = self._call("reading", lambda: self.client.get_collection(self.collection))
        vectors = params.config.params.vectors
        sparse = params.config.params.sparse_vectors or {}
        dense = vectors.get(DENSE_VECTOR) if isinstance(vectors, dict) else None
        if dense is None or SPARSE_VECTOR not in sparse:
            raise EmbeddingStoreError(
                f"Qdrant collection {self.collection!r} exists without the dense vector "
                f"{DENSE_VECTOR!r} and sparse vector {SPARSE_VECTOR!r} hybrid search needs"
            )
        if dense.size != dimension:
            raise EmbeddingStoreError(
                f"Qdrant collection {self.collection!r} has dimension {dense.size}, "
                f"the embedding model gives {dimension}"
            )
        self._ready = True

    def document_vector(self, text: str) -> models.SparseVector:
        """The BM25 sparse vector of a document (saturated term frequencies)."""
        terms = analyze(self.analyzer, text)
        norm = self.k1 * (1 - self.b + self.b * len(terms) / self.avg_length)
        weights: dict[int, float] = {}
        for term, tf in Counter(terms).items():
            index = term_index(term)
            weights[index] = weights.get(index, 0.0) + tf * (self.k1 + 1) / (tf + norm)
        return models.SparseVector(indices=list(weights), values=list(weights.values()))

    def query_vector(self, text: str) -> models.SparseVector:
        """The sparse vector of a query: weight 1 per distinct term (IDF comes from Qdrant)."""
        indices = sorted({term_index(term) for term in analyze(self.analyzer, text)})
        return models.SparseVector(indices=indices, values=[1.0] * len(indices))

    def add_all(
        self, segments: Sequence[TextSegment], ids: Sequence[str] | None = None
    ) -> list[str]:
        """Embed and index ``segments`` (replacing entries with the same ids); their ids."""
        segments = list(segments)
        if not all(isinstance(s, TextSegment) for s in segments):
            raise InvalidArgumentError("add_all takes a sequence of TextSegment")
        ids = generate_ids(len(segments)) if ids is None else validate_ids(ids, len(segments))
        if not segments:
            return ids
        embeddings = self.embedding_model.embed_all(segments).embeddings
        self._open(embeddings[0].dimension)
        points = [
            models.PointStruct(
                id=point_id(entry_id),
                vector={
                    DENSE_VECTOR: embedding.vector.tolist(),
                    SPARSE_VECTOR: self.document_vector(segment.text),
                },
                payload=point_payload(
                    entry_id, 0, embedding.vector, segment.text, segment.metadata
                ),
            )
            for entry_id, segment, embedding in zip(ids, segments, embeddings, strict=True)
        ]
        self._call("upserting", lambda: self.client.upsert(self.collection, points))
        return ids

    def retrieve(self, query: Query) -> list[Content]:
        """The RRF-fused dense and keyword matches of ``query``, best first."""
        text = query.text if isinstance(query, Query) else query
        if not isinstance(text, str):
            raise InvalidArgumentError(f"retrieve takes a Query, got {type(query).__name__}")
        condition = resolve_dynamic(self.filter, query) if isinstance(query, Query) else None
        dense = self.embedding_model.embed(text).embedding
        self._open(dense.dimension)
        native = self._native(condition)
        if native is False:
            return []
        prefetch = [
            models.Prefetch(
                query=dense.vector.tolist(),
                using=DENSE_VECTOR,
                filter=native,
                limit=self.candidates,
            )
        ]
        sparse = self.query_vector(text)
        if sparse.indices:
            prefetch.append(
                models.Prefetch(
                    query=sparse, using=SPARSE_VECTOR, filter=native, limit=self.candidates
                )
            )
        points = self._call(
            "hybrid query",
            lambda: (
                self.client.query_points(
                    self.collection,
                    prefetch=prefetch,
                    query=models.FusionQuery(fusion=models.Fusion.RRF),
                    limit=self.max_results,
                    with_payload=["rid", "text", "meta"],
                ).points
            ),
        )
        ordered = sorted(points, key=lambda p: (-p.score, str(p.payload["rid"])))
        return [
            Content(
                TextSegment(p.payload["text"], decode_meta(p.payload)),
                {SCORE: float(p.score), EMBEDDING_ID: p.payload["rid"]},
            )
            for p in ordered
        ]

    def _native(self, condition: Filter | None) -> models.Filter | Literal[False] | None:
        """The Qdrant filter of ``condition`` (None: everything, False: nothing).

        Raises core's InvalidFilterError when a stored value's type cannot meet the
        filter's, as the stores do; an inexact native form becomes the matching point ids.
        """
        if condition is None:
            return None
        compiled = compile_filter(check_filter(condition))
        run_steps(
            check_types(compiled, self.collection),
            lambda step: self._call(
                step.what, lambda: getattr(self.client, step.method)(*step.args, **step.kwargs)
            ),
        )
        if compiled.native.exact:
            return compiled.native.filter
        ids = self._matching(compiled.native.filter, condition)
        return models.Filter(must=[models.HasIdCondition(has_id=ids)]) if ids else False

    def _matching(
        self, superset: models.Filter | None, condition: Filter
    ) -> list[models.ExtendedPointId]:
        """The ids of the points in ``superset`` that pass ``condition`` (checked here)."""
        ids: list[models.ExtendedPointId] = []
        offset: models.ExtendedPointId | None = None
        while True:
            records, offset = self._call(
                "reading points",
                lambda offset=offset: self.client.scroll(
                    self.collection,
                    scroll_filter=superset,
                    limit=_PAGE,
                    offset=offset,
                    with_payload=["meta"],
                ),
            )
            ids += [r.id for r in records if condition.test(decode_meta(r.payload or {}))]
            if offset is None:
                return ids

    def remove_all(self, ids: Iterable[str] | None = None, *, filter: Filter | None = None) -> None:
        """Remove the given ids, the entries matching ``filter``, or (neither) everything.

        A point holds both vectors of an entry, so dense and keyword search stay in step.
        """
        if ids is not None and filter is not None:
            raise EmbeddingStoreError("remove_all takes ids or a filter, not both")
        if not self._call("checking", lambda: self.client.collection_exists(self.collection)):
            if filter is not None:
                check_filter(filter)
            return
        selector: models.PointIdsList | models.FilterSelector
        if ids is not None:
            points: list[models.ExtendedPointId] = [
                point_id(entry_id) for entry_id in validate_ids(ids, unique=False)
            ]
            if not points:
                return
            selector = models.PointIdsList(points=points)
        else:
            native = self._native(filter)
            if native is False:
                return
            selector = models.FilterSelector(
                filter=native if isinstance(native, models.Filter) else models.Filter()
            )
        self._call(
            "deleting points",
            lambda: self.client.delete(self.collection, points_selector=selector, wait=True),
        )
