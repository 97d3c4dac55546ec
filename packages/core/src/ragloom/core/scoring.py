"""The ScoringModel protocol: relevance scores of texts for a query, for re-ranking.

A scoring (re-ranking) model, e.g. a cross-encoder or a hosted re-ranker, reads the
query and each text together, which ranks better than comparing embeddings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ragloom.core.document import TextSegment
from ragloom.core.embedding import TokenUsage
from ragloom.core.errors import RetrievalError

__all__ = [
    "ScoringResult",
    "ScoringModel",
]


@dataclass(frozen=True, slots=True)
class ScoringResult:
    """One score per input text, in input order, plus the tokens the model used."""

    scores: list[float]
    token_usage: TokenUsage | None = None


@runtime_checkable
class ScoringModel(Protocol):
    """Scores how relevant texts are to a query: higher is more relevant.

    The scale is the model's own (probabilities, logits). Implementations define
    :meth:`score_all`; subclassing explicitly inherits :meth:`score`.
    """

    def score_all(self, segments: Sequence[str | TextSegment], query: str) -> ScoringResult:
        """The score of every segment for ``query``, in order."""
        ...

    def score(self, segment: str | TextSegment, query: str) -> float:
        """The score of one segment for ``query``."""
        scores = self.score_all([segment], query).scores
        if len(scores) != 1:
            raise RetrievalError(
                f"{type(self).__name__}.score_all returned {len(scores)} scores for 1 segment"
            )
        return scores[0]
