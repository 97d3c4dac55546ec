"""Content aggregators: merge the ranked lists of several queries and retrievers into one.

:class:`DefaultContentAggregator` performs two-stage reciprocal rank fusion;
:class:`ReRankingContentAggregator` fuses the same way, then re-ranks with a
:class:`~ragloom.core.scoring.ScoringModel`. The fusion itself lives in
:mod:`ragloom.core.fusion` (shared with the hybrid retriever).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, TypeAlias, cast, runtime_checkable

from ragloom.core import plugins
from ragloom.core.content import RERANKED_SCORE, Content
from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError, RetrievalError
from ragloom.core.fusion import reciprocal_rank_fusion
from ragloom.core.query import Query
from ragloom.core.scoring import ScoringModel

__all__ = [
    "QueryToContents",
    "QuerySelector",
    "ContentAggregator",
    "DefaultContentAggregator",
    "ReRankingContentAggregator",
]

QueryToContents: TypeAlias = Mapping[Query, Sequence[Sequence[Content]]]
"""Each query with the ranked list of every retriever it was routed to."""
QuerySelector: TypeAlias = Callable[[QueryToContents], Query]
"""Picks the query that re-ranking scores against."""


def _fuse_two_stages(query_to_contents: QueryToContents) -> list[Content]:
    per_query = [reciprocal_rank_fusion(lists) for lists in query_to_contents.values()]
    return reciprocal_rank_fusion(per_query)


@runtime_checkable
class ContentAggregator(Protocol):
    """Combines every query's retrieved lists into one ranked list of contents."""

    def aggregate(self, query_to_contents: QueryToContents) -> list[Content]:
        """The final contents, most relevant first."""
        ...


class DefaultContentAggregator(ContentAggregator):
    """Two-stage reciprocal rank fusion (k=60), the augmentor's default.

    Stage one fuses, per query, the lists of the retrievers it was routed to; stage two
    fuses those per-query lists. Fusing per query first keeps a query that reached many
    retrievers from outweighing the others.
    """

    def aggregate(self, query_to_contents: QueryToContents) -> list[Content]:
        return _fuse_two_stages(query_to_contents)


def _only_query(query_to_contents: QueryToContents) -> Query:
    if len(query_to_contents) != 1:
        raise RetrievalError(
            f"re-ranking got {len(query_to_contents)} queries, so which one to score against "
            "is ambiguous; give ReRankingContentAggregator a query_selector, e.g. "
            "query_selector=lambda query_to_contents: next(iter(query_to_contents))"
        )
    return next(iter(query_to_contents))


class ReRankingContentAggregator(ContentAggregator):
    """Fuses like :class:`DefaultContentAggregator`, then re-ranks with ``scoring_model``.

    Every content is scored against one query: the only one, or the one
    ``query_selector`` picks (required when there are several, e.g. after expansion).
    Contents scoring below ``min_score`` are dropped, at most ``max_results`` are kept,
    and each carries its score in ``metadata[RERANKED_SCORE]``. Without
    ``scoring_model`` the installed ``ragloom.scoring_models`` plugin is used.
    """

    def __init__(
        self,
        scoring_model: ScoringModel | None = None,
        *,
        query_selector: QuerySelector | None = None,
        min_score: float | None = None,
        max_results: int | None = None,
    ) -> None:
        if max_results is not None and (type(max_results) is not int or max_results < 1):
            raise InvalidArgumentError(
                f"max_results must be a positive int or None, got {max_results!r}"
            )
        if min_score is not None and not isinstance(min_score, int | float):
            raise InvalidArgumentTypeError(f"min_score must be a number or None, got {min_score!r}")
        self.scoring_model = scoring_model or cast(
            ScoringModel, plugins.load_default(plugins.SCORING_MODELS)
        )
        self.query_selector: QuerySelector = query_selector or _only_query
        self.min_score = min_score
        self.max_results = max_results

    def aggregate(self, query_to_contents: QueryToContents) -> list[Content]:
        if not query_to_contents:
            return []
        query = self.query_selector(query_to_contents)
        fused = _fuse_two_stages(query_to_contents)
        if not fused:
            return []
        scores = self.scoring_model.score_all([c.text_segment for c in fused], query.text).scores
        if len(scores) != len(fused):
            raise RetrievalError(
                f"scoring model returned {len(scores)} scores for {len(fused)} contents"
            )
        if not all(isinstance(s, int | float) and math.isfinite(s) for s in scores):
            raise RetrievalError(
                f"scoring model returned non-finite or non-numeric scores: {scores}"
            )
        ranked = sorted(zip(fused, scores, strict=True), key=lambda pair: -pair[1])
        if self.min_score is not None:
            ranked = [(content, score) for content, score in ranked if score >= self.min_score]
        return [
            Content(content.text_segment, {**content.metadata, RERANKED_SCORE: score})
            for content, score in ranked[: self.max_results]
        ]
