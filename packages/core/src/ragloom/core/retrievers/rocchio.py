"""Rocchio pseudo-relevance feedback for dense retrieval: move the query vector towards
the vectors of its best hits, then search again.

``q' = q / |q| + weight * mean(d / |d| for the first documents hits)``. No new
embedding is computed: the store returns the hits' vectors with the matches.

Measured (``docs/evaluation.md``; all-MiniLM-L6-v2, 3 documents, weight 0.5): as the
dense leg of a weighted hybrid over whole documents +0.006 nDCG@10 on CISI and +0.011 on
kestrel-support, over CISI's segments grouped by document -0.002 (noise); dense alone
+0.007 on CISI but -0.013 on kestrel-support. Mixed, so it is offered and off by
default.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragloom.core.embedding import Embedding
from ragloom.core.errors import InvalidArgumentError

__all__ = ["Rocchio"]


@dataclass(frozen=True, slots=True)
class Rocchio:
    """Rocchio query update: the first ``documents`` hits, mean vector times ``weight``."""

    documents: int = 3
    weight: float = 0.5

    def __post_init__(self) -> None:
        if type(self.documents) is not int or self.documents < 1:
            raise InvalidArgumentError(f"documents must be a positive int, got {self.documents!r}")
        weight = self.weight
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not weight > 0:
            raise InvalidArgumentError(f"weight must be a number > 0, got {weight!r}")

    def update(self, query: Embedding, hits: Sequence[Embedding]) -> Embedding:
        """``query`` moved towards the mean of the unit vectors of ``hits`` (the first
        :attr:`documents` of them; zero vectors ignored); ``query`` when there are none."""
        vectors = [np.asarray(hit.vector, dtype=np.float64) for hit in hits[: self.documents]]
        units = [v / norm for v in vectors if (norm := float(np.linalg.norm(v))) > 0]
        if not units:
            return query
        q = np.asarray(query.vector, dtype=np.float64)
        norm = float(np.linalg.norm(q))
        start = q / norm if norm > 0 else q
        return Embedding((start + self.weight * np.mean(units, axis=0)).astype(np.float32))
