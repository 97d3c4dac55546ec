"""Hybrid retrieval beats dense-only and keyword-only on nDCG@10 on the kestrel-support set,
with the real default embedding model (all-MiniLM-L6-v2, int8 ONNX) as the dense side."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom.core.evaluation import evaluate, load_beir
from ragloom.core.evaluation.cli import build_retriever
from ragloom.core.retrievers.hybrid import HybridContentRetriever
from ragloom.embeddings.onnx import AllMiniLmL6V2QuantizedEmbeddingModel

DATA = Path(__file__).parents[1] / "packages/core/tests/data/kestrel-support"


@pytest.fixture(scope="module")
def ndcg() -> dict[str, float]:
    dataset = load_beir(DATA)
    model = AllMiniLmL6V2QuantizedEmbeddingModel()
    dense = build_retriever(dataset, "dense", embedding_model=model)
    keyword = build_retriever(dataset, "keyword", stemmer=None)
    stemmed = build_retriever(dataset, "keyword")  # stems English by default
    retrievers = {
        "dense": dense,
        "keyword": keyword,
        "keyword-stemmed": stemmed,
        "hybrid-rrf": HybridContentRetriever(dense, keyword),
        "hybrid-rrf-stemmed": HybridContentRetriever(dense, stemmed),
        "hybrid-weighted": HybridContentRetriever(dense, keyword, fusion="weighted"),
    }
    return {
        name: evaluate(retriever, dataset).metrics["ndcg@10"]
        for name, retriever in retrievers.items()
    }


@pytest.mark.parametrize("hybrid", ["hybrid-rrf", "hybrid-rrf-stemmed", "hybrid-weighted"])
def test_hybrid_beats_dense_and_keyword(ndcg: dict[str, float], hybrid: str) -> None:
    assert ndcg[hybrid] > ndcg["dense"]
    assert ndcg[hybrid] > ndcg["keyword"]


def test_stemmed_hybrid_beats_every_single_retriever(ndcg: dict[str, float]) -> None:
    single = max(ndcg["dense"], ndcg["keyword"], ndcg["keyword-stemmed"])
    assert ndcg["hybrid-rrf-stemmed"] > single + 0.02
