"""Maximal marginal relevance (MMR): re-rank for relevance *and* diversity.

Near-duplicate chunks crowd the top of a ranked list and waste the prompt. MMR (Carbonell
and Goldstein, 1998) picks greedily the content that maximizes

    lambda_ * relevance(c) - (1 - lambda_) * max(similarity(c, s) for s already picked)

so ``lambda_ = 1`` is plain relevance order and ``lambda_ = 0`` pure diversity.
Similarities are cosines of the segments' embeddings. :func:`maximal_marginal_relevance`
is the vectorized selection; :class:`MmrContentAggregator` is the content aggregator step
(after fusion or re-ranking).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt

from ragloom.core.content import RERANKED_SCORE, Content
from ragloom.core.content_aggregators import (
    ContentAggregator,
    DefaultContentAggregator,
    QuerySelector,
    QueryToContents,
)
from ragloom.core.embedding import EmbeddingModel
from ragloom.core.errors import InvalidArgumentError, RetrievalError
from ragloom.core.query import Query

__all__ = ["MmrContentAggregator", "maximal_marginal_relevance"]


def _cosines(
    matrix: npt.NDArray[np.float64], norms: npt.NDArray[np.float64], vector: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Cosines of the rows of ``matrix`` (with ``norms``) with ``vector``: dot products
    first, divided after, so orthogonal vectors give exactly 0 (0 for zero vectors)."""
    scale = norms * float(np.linalg.norm(vector))
    cosines: npt.NDArray[np.float64] = np.divide(
        matrix @ vector, scale, out=np.zeros(len(matrix)), where=scale > 0
    )
    return cosines


def _check_lambda(lambda_: float) -> float:
    if isinstance(lambda_, bool) or not isinstance(lambda_, int | float) or not 0 <= lambda_ <= 1:
        raise InvalidArgumentError(f"lambda_ must be a number from 0 to 1, got {lambda_!r}")
    return float(lambda_)


def _check_max_results(max_results: int | None) -> int | None:
    if max_results is not None and (type(max_results) is not int or max_results < 1):
        raise InvalidArgumentError(
            f"max_results must be a positive int or None, got {max_results!r}"
        )
    return max_results


def maximal_marginal_relevance(
    query_embedding: npt.ArrayLike,
    embeddings: npt.ArrayLike,
    *,
    lambda_: float = 0.5,
    max_results: int | None = None,
    relevance: npt.ArrayLike | None = None,
) -> list[int]:
    """The indexes of ``embeddings`` in MMR order (at most ``max_results``).

    Relevance is the cosine of each embedding with ``query_embedding`` unless
    ``relevance`` gives one score per embedding (e.g. a re-ranker's). Ties go to the
    lower index, so ``lambda_=1`` returns the stable relevance order. Cost: one
    ``(n, d)`` matrix-vector product per pick, no ``n x n`` matrix.
    """
    lam = _check_lambda(lambda_)
    limit = _check_max_results(max_results)
    vectors = np.asarray(embeddings, dtype=np.float64)
    if vectors.ndim != 2:
        raise InvalidArgumentError(
            f"embeddings must be a 2-D array (one row per item), got shape {vectors.shape}"
        )
    count = vectors.shape[0]
    if count == 0:
        return []
    norms = np.linalg.norm(vectors, axis=1)
    if relevance is None:
        query = np.asarray(query_embedding, dtype=np.float64)
        if query.shape != (vectors.shape[1],):
            raise InvalidArgumentError(
                f"query_embedding must have shape ({vectors.shape[1]},) like the embeddings, "
                f"got {query.shape}"
            )
        scores = _cosines(vectors, norms, query)
    else:
        scores = np.asarray(relevance, dtype=np.float64)
        if scores.shape != (count,):
            raise InvalidArgumentError(
                f"relevance must have one score per embedding ({count}), got shape {scores.shape}"
            )
    if not np.all(np.isfinite(scores)) or not np.all(np.isfinite(norms)):
        raise InvalidArgumentError("embeddings and relevance must be finite numbers")
    wanted = count if limit is None else min(limit, count)
    weighted = lam * scores
    penalty = np.zeros(count)
    available = np.ones(count, dtype=bool)
    chosen: list[int] = []
    for step in range(wanted):
        marginal = np.where(available, weighted - (1.0 - lam) * penalty, -np.inf)
        pick = int(np.argmax(marginal))
        chosen.append(pick)
        available[pick] = False
        similarity = _cosines(vectors, norms, vectors[pick])
        penalty = similarity if step == 0 else np.maximum(penalty, similarity)
    return chosen


class MmrContentAggregator(ContentAggregator):
    """Aggregates with ``aggregator`` (default: reciprocal rank fusion), then MMR-orders.

    ``embedding_model`` embeds the selected query and the contents' segments in one call.
    ``relevance="embedding"`` (default) scores relevance as the cosine with the query;
    ``"reranked"`` uses each content's ``metadata[RERANKED_SCORE]`` (put ``aggregator``
    = a :class:`~ragloom.core.content_aggregators.ReRankingContentAggregator` first; best
    when its scores are on a 0-1 scale like the cosines they are weighed against).
    ``query_selector`` picks the query when there are several. Contents keep their
    metadata; at most ``max_results`` are returned.
    """

    def __init__(
        self,
        embedding_model: EmbeddingModel,
        *,
        lambda_: float = 0.5,
        max_results: int | None = None,
        aggregator: ContentAggregator | None = None,
        query_selector: QuerySelector | None = None,
        relevance: Literal["embedding", "reranked"] = "embedding",
    ) -> None:
        if relevance not in ("embedding", "reranked"):
            raise InvalidArgumentError(
                f"relevance must be 'embedding' or 'reranked', got {relevance!r}"
            )
        self.embedding_model = embedding_model
        self.lambda_ = _check_lambda(lambda_)
        self.max_results = _check_max_results(max_results)
        self.aggregator = aggregator or DefaultContentAggregator()
        self.query_selector = query_selector
        self.relevance = relevance

    def _query(self, query_to_contents: QueryToContents) -> Query:
        if self.query_selector is not None:
            return self.query_selector(query_to_contents)
        if len(query_to_contents) != 1:
            raise RetrievalError(
                f"MMR got {len(query_to_contents)} queries, so which one to measure relevance "
                "against is ambiguous; give MmrContentAggregator a query_selector"
            )
        return next(iter(query_to_contents))

    def aggregate(self, query_to_contents: QueryToContents) -> list[Content]:
        if not query_to_contents:
            return []
        query = self._query(query_to_contents)
        contents = self.aggregator.aggregate(query_to_contents)
        if not contents:
            return []
        relevance = self._relevance(contents)
        texts: Sequence[str] = [query.text, *(c.text for c in contents)]
        embedded = self.embedding_model.embed_all(texts).embeddings
        if len(embedded) != len(texts):
            raise RetrievalError(
                f"embedding model returned {len(embedded)} embeddings for {len(texts)} texts"
            )
        vectors = np.stack([np.asarray(e) for e in embedded])
        order = maximal_marginal_relevance(
            vectors[0],
            vectors[1:],
            lambda_=self.lambda_,
            max_results=self.max_results,
            relevance=relevance,
        )
        return [contents[i] for i in order]

    def _relevance(self, contents: list[Content]) -> list[float] | None:
        if self.relevance == "embedding":
            return None
        scores = [c.metadata.get(RERANKED_SCORE) for c in contents]
        bad = [
            i
            for i, s in enumerate(scores)
            if isinstance(s, bool) or not isinstance(s, int | float) or not math.isfinite(s)
        ]
        if bad:
            raise RetrievalError(
                f"relevance='reranked' needs metadata[{RERANKED_SCORE!r}] on every content; "
                f"content {bad[0]} has {scores[bad[0]]!r} (use a ReRankingContentAggregator "
                "as aggregator)"
            )
        return [float(s) for s in scores]  # type: ignore[arg-type]
