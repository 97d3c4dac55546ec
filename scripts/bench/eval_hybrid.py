"""Dense vs keyword vs hybrid retrieval on the kestrel-support evaluation set.

    .venv/bin/python scripts/bench/eval_hybrid.py [DATA_DIR]

Dense is all-MiniLM-L6-v2 (int8 ONNX, from ragloom-embedding-onnx); keyword is BM25
(StandardAnalyzer, with and without English stemming); hybrid fuses both with RRF (k=60)
and with weighted min-max fusion. Prints nDCG@10, MRR@10 and recall@10 overall and per
query group: identifiers (codes, model numbers), own words (paraphrases), both.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ragloom.core.evaluation import evaluate, load_beir
from ragloom.core.evaluation.cli import build_retriever
from ragloom.core.retrievers.hybrid import HybridContentRetriever
from ragloom.embeddings.onnx import AllMiniLmL6V2QuantizedEmbeddingModel

DEFAULT = Path(__file__).parents[2] / "packages/core/tests/data/kestrel-support"
GROUPS = {
    "identifiers": range(1, 18),
    "own words": range(18, 33),
    "both": range(33, 41),
}


def main() -> None:
    dataset = load_beir(sys.argv[1] if len(sys.argv) > 1 else DEFAULT)
    model = AllMiniLmL6V2QuantizedEmbeddingModel()
    dense = build_retriever(dataset, "dense", embedding_model=model)
    keyword = build_retriever(dataset, "keyword", stemmer=None)
    stemmed = build_retriever(dataset, "keyword")  # the default analyzer stems English
    retrievers = {
        "dense (MiniLM)": dense,
        "keyword (BM25)": keyword,
        "keyword (BM25, stemmed)": stemmed,
        "hybrid RRF": HybridContentRetriever(dense, keyword),
        "hybrid RRF, stemmed": HybridContentRetriever(dense, stemmed),
        "hybrid weighted": HybridContentRetriever(dense, keyword, fusion="weighted"),
    }
    print(f"{dataset.name}: {len(dataset.corpus)} documents, {len(dataset.queries)} queries")
    header = f"{'retriever':<26}{'nDCG@10':>9}{'MRR@10':>8}{'R@10':>7}"
    header += "".join(f"{'nDCG ' + name:>18}" for name in GROUPS)
    print(header)
    for name, retriever in retrievers.items():
        report = evaluate(retriever, dataset, k_values=(10,))
        line = f"{name:<26}{report.metrics['ndcg@10']:>9.4f}{report.metrics['mrr@10']:>8.4f}"
        line += f"{report.metrics['recall@10']:>7.4f}"
        for numbers in GROUPS.values():
            ids = {f"q{n:02d}" for n in numbers}
            values = [q.metrics["ndcg@10"] for q in report.queries if q.query_id in ids]
            line += f"{sum(values) / len(values):>18.4f}"
        print(line)


if __name__ == "__main__":
    main()
