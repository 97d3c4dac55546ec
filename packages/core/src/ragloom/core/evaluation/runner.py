"""evaluate: run a ContentRetriever over a BEIR data set and average the ranking metrics."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from ragloom.core.errors import InvalidArgumentError
from ragloom.core.evaluation.beir import DOC_ID, BeirDataset, EvaluationDataError
from ragloom.core.evaluation.metrics import mrr_at_k, ndcg_at_k, recall_at_k
from ragloom.core.progress import ProgressCallback
from ragloom.core.query import Query
from ragloom.core.retrievers.base import ContentRetriever

__all__ = ["EvaluationReport", "QueryResult", "evaluate"]


@dataclass(frozen=True, slots=True)
class QueryResult:
    """One query's retrieved corpus ids (best first, each once) and its metrics."""

    query_id: str
    retrieved: list[str]
    metrics: dict[str, float]


@dataclass(frozen=True, slots=True)
class EvaluationReport:
    """Mean metrics over the judged queries, plus each query's result."""

    dataset: str
    retriever: str
    metrics: dict[str, float]
    queries: list[QueryResult] = field(repr=False)
    seconds: float

    def format(self) -> str:
        """A short human-readable summary."""
        lines = [f"{self.dataset}: {len(self.queries)} queries, retriever {self.retriever}"]
        lines += [f"  {name:<11} {value:.4f}" for name, value in self.metrics.items()]
        lines.append(f"  {'time':<11} {self.seconds:.2f} s")
        return "\n".join(lines)

    def to_json(self) -> str:
        """The report (mean metrics and per-query results) as JSON."""
        return json.dumps(
            {
                "dataset": self.dataset,
                "retriever": self.retriever,
                "metrics": self.metrics,
                "seconds": self.seconds,
                "queries": [
                    {"query_id": q.query_id, "retrieved": q.retrieved, "metrics": q.metrics}
                    for q in self.queries
                ],
            },
            indent=2,
        )


def evaluate(
    retriever: ContentRetriever,
    dataset: BeirDataset,
    *,
    k_values: Sequence[int] = (1, 5, 10, 100),
    doc_id_key: str = DOC_ID,
    on_progress: ProgressCallback | None = None,
) -> EvaluationReport:
    """Retrieve for every judged query of ``dataset`` and report ``recall@k`` for each k of
    ``k_values``, ``mrr@10`` and ``ndcg@10``, averaged over the queries.

    Each retrieved content must name its corpus document under ``doc_id_key`` in its
    segment's metadata (as :meth:`BeirDataset.documents` sets it, and splitters copy it);
    several segments of one document count once, at the best rank. The retriever's own
    ``max_results`` bounds what can be found: set it to at least the largest k.
    ``on_progress(queries_done, queries_total)`` is called after each query.
    """
    if not k_values or any(type(k) is not int or k < 1 for k in k_values):
        raise InvalidArgumentError(f"k_values must be positive ints, got {k_values!r}")
    judged = dataset.judged_queries()
    if not judged:
        raise EvaluationDataError(f"{dataset.name}: no query has a relevant document")
    results = []
    start = time.perf_counter()
    for query_id, text in judged.items():
        retrieved: dict[str, None] = {}
        for content in retriever.retrieve(Query(text)):
            doc_id = content.text_segment.metadata.get(doc_id_key)
            if doc_id is None:
                raise EvaluationDataError(
                    f"a content retrieved for query {query_id!r} has no {doc_id_key!r} metadata"
                )
            retrieved.setdefault(str(doc_id), None)
        ranking = list(retrieved)
        qrels = dataset.qrels[query_id]
        metrics = {f"recall@{k}": recall_at_k(ranking, qrels, k) for k in k_values}
        metrics["mrr@10"] = mrr_at_k(ranking, qrels, 10)
        metrics["ndcg@10"] = ndcg_at_k(ranking, qrels, 10)
        results.append(QueryResult(query_id, ranking, metrics))
        if on_progress is not None:
            on_progress(len(results), len(judged))
    seconds = time.perf_counter() - start
    means = {
        name: sum(r.metrics[name] for r in results) / len(results) for name in results[0].metrics
    }
    return EvaluationReport(dataset.name, type(retriever).__name__, means, results, seconds)
