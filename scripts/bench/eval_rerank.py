"""Re-ranking measured end to end (issue 21): nDCG@10 and added latency per query of
hybrid retrieval alone, + MMR, + a scoring model, on a BEIR-layout set.

The scoring model is the testkit's deterministic word-overlap ``FakeScoringModel``: no
cross-encoder runs here, so this proves the plumbing and its cost, not a quality gain.

    .venv/bin/python scripts/bench/eval_rerank.py [DATA] [--candidates 30]

DATA defaults to the shipped kestrel-support set (packages/core/tests/data).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from ragloom.core import Content, Query
from ragloom.core.content_aggregators import ContentAggregator, ReRankingContentAggregator
from ragloom.core.evaluation import evaluate, load_beir
from ragloom.core.evaluation.cli import build_retriever
from ragloom.core.mmr import MmrContentAggregator
from ragloom.core.plugins import EMBEDDING_MODELS, load_default
from ragloom.core.retrievers.base import ContentRetriever
from ragloom.testkit import FakeScoringModel

DATA = Path(__file__).resolve().parents[2] / "packages/core/tests/data/kestrel-support"


class Aggregated:
    """A retriever followed by an aggregator, timed per query (what the augmentor does)."""

    def __init__(self, retriever: ContentRetriever, aggregator: ContentAggregator | None):
        self.retriever, self.aggregator = retriever, aggregator
        self.seconds: list[float] = []

    def retrieve(self, query: Query) -> list[Content]:
        contents = self.retriever.retrieve(query)
        start = time.perf_counter()
        if self.aggregator is not None:
            contents = self.aggregator.aggregate({query: [contents]})
        self.seconds.append(time.perf_counter() - start)
        return contents


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="?", type=Path, default=DATA)
    parser.add_argument("--candidates", type=int, default=30)
    args = parser.parse_args()
    dataset = load_beir(args.data)
    model = load_default(EMBEDDING_MODELS)
    hybrid = build_retriever(dataset, "hybrid", embedding_model=model, max_results=args.candidates)
    setups: dict[str, Callable[[], ContentAggregator | None]] = {
        "hybrid": lambda: None,
        "hybrid + MMR (lambda 0.7)": lambda: MmrContentAggregator(model, lambda_=0.7),
        "hybrid + scoring model": lambda: ReRankingContentAggregator(FakeScoringModel()),
    }
    print(f"{args.data.name}: {len(dataset.queries)} queries, {args.candidates} candidates")
    print(f"{'configuration':<28} {'nDCG@10':>8} {'added ms/query (median)':>24}")
    for name, make in setups.items():
        retriever = Aggregated(hybrid, make())
        report = evaluate(retriever, dataset, k_values=(1, 5, 10))
        added = statistics.median(retriever.seconds) * 1000
        print(f"{name:<28} {report.metrics['ndcg@10']:>8.4f} {added:>24.2f}")


if __name__ == "__main__":
    main()
