"""The server retrieves as ``ragloom query`` does: both build their hybrid with
``ragloom.easy_rag.defaults.index_hybrid_retriever``, so their configurations match
(fusion, weights, cut, each leg's candidates and filter, the min-score cut, the model)."""

from __future__ import annotations

from pathlib import Path

from ragloom.core import (
    BM25ContentRetriever,
    ContentRetriever,
    EmbeddingStoreContentRetriever,
    HybridContentRetriever,
)
from ragloom.easy_rag.cli import _open_for_mode, _retriever, build_parser
from ragloom.easy_rag.defaults import HYBRID_FUSION, MinScoreRetriever, hybrid_candidates
from ragloom.server import IndexService
from ragloom.server.service import Principal

FILTER = "file_name == 'filters.md'"


def _settings(retriever: ContentRetriever) -> tuple[object, ...]:
    """What makes Easy RAG's hybrid retrieve as it does, store and model by type."""
    assert isinstance(retriever, MinScoreRetriever)
    hybrid = retriever.retriever
    assert isinstance(hybrid, HybridContentRetriever)
    dense, keyword = hybrid.dense, hybrid.keyword
    assert isinstance(dense, EmbeddingStoreContentRetriever)
    assert isinstance(keyword, BM25ContentRetriever)
    return (
        retriever.min_score,
        hybrid.fusion,
        hybrid.k,
        hybrid.weights,
        hybrid.group_by,
        hybrid.max_results,
        dense.max_results,
        dense.min_score,
        dense.filter,
        type(dense.embedding_store),
        type(dense.embedding_model),
        keyword.max_results,
        keyword.filter,
    )


def test_the_server_and_ragloom_query_build_the_same_hybrid(
    service: IndexService, index_dir: Path
) -> None:
    for k, min_score in ((3, 0.0), (150, 0.4)):
        served = service.retriever(
            Principal("admin", None), max_results=k, min_score=min_score, filter=FILTER
        )
        command = ["query", "x", "--index", str(index_dir), "-k", str(k)]
        args = build_parser().parse_args(
            [*command, "--min-score", str(min_score), "--filter", FILTER]
        )
        assert args.mode == "hybrid"
        settings = _settings(served.retriever)  # type: ignore[attr-defined]
        index, model = _open_for_mode(args)
        try:
            assert settings == _settings(_retriever(args, index, model))
        finally:
            index.close()
        assert settings[:2] == (min_score, HYBRID_FUSION)
        assert settings[6] == hybrid_candidates(k) == max(k, 100)
        assert settings[8] is not None
