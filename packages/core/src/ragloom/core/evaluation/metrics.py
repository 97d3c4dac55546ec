"""Ranking metrics over one query: recall@k, MRR@k and nDCG@k (linear gain, as BEIR's
pytrec_eval computes them)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

__all__ = ["mrr_at_k", "ndcg_at_k", "recall_at_k"]


def recall_at_k(retrieved: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """Share of the relevant documents (grade > 0) among the first ``k`` retrieved."""
    relevant = {doc for doc, grade in qrels.items() if grade > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(retrieved[:k])) / len(relevant)


def mrr_at_k(retrieved: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """``1 / rank`` of the first relevant document within the first ``k``, else 0."""
    for rank, doc in enumerate(retrieved[:k], start=1):
        if qrels.get(doc, 0) > 0:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(retrieved: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """Normalized discounted cumulative gain: ``sum(grade / log2(rank + 1))`` over the first
    ``k``, divided by the same sum for the ideal order."""
    dcg = sum(
        max(qrels.get(doc, 0), 0) / math.log2(rank + 1)
        for rank, doc in enumerate(retrieved[:k], start=1)
    )
    ideal_grades = sorted((grade for grade in qrels.values() if grade > 0), reverse=True)[:k]
    ideal = sum(grade / math.log2(rank + 1) for rank, grade in enumerate(ideal_grades, start=1))
    return dcg / ideal if ideal else 0.0
