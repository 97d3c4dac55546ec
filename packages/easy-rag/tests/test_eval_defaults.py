"""`ragloom eval` without options evaluates what `ragloom query` retrieves with: the
settings it reports are compared with Easy RAG's own splitter and hybrid retriever."""

import json
from pathlib import Path
from typing import cast

import pytest

from ragloom.core import Document, plugins
from ragloom.core.bm25.index import BM25Index
from ragloom.core.evaluation.beir import load_beir
from ragloom.core.evaluation.cli import Configuration, EvaluationIndexes, retriever_for
from ragloom.core.retrievers.base import ContentRetriever
from ragloom.core.retrievers.bm25 import BM25ContentRetriever
from ragloom.core.retrievers.embedding_store import EmbeddingStoreContentRetriever
from ragloom.core.retrievers.hybrid import HybridContentRetriever
from ragloom.core.splitters.base import DocumentSplitter
from ragloom.core.stores.in_memory import InMemoryEmbeddingStore
from ragloom.easy_rag.cli import build_parser, main
from ragloom.easy_rag.defaults import (
    default_document_splitter,
    hybrid_candidates,
    index_hybrid_retriever,
)
from ragloom.testkit import FakeEmbeddingModel

DATA = Path(__file__).resolve().parents[2] / "core" / "tests" / "data" / "kestrel-support"


def _settings(retriever: ContentRetriever) -> tuple[object, ...]:
    """What makes a hybrid retrieve as it does: fusion, weights, grouping, cut, legs."""
    assert isinstance(retriever, HybridContentRetriever)
    dense, keyword = retriever.dense, retriever.keyword
    assert isinstance(dense, EmbeddingStoreContentRetriever)
    assert isinstance(keyword, BM25ContentRetriever)
    return (
        retriever.fusion,
        retriever.k,
        retriever.weights,
        retriever.group_by,
        retriever.max_results,
        dense.max_results,
        keyword.max_results,
    )


def test_eval_defaults_are_easy_rags_retrieval(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", str(DATA), "--json", "--quiet", "--max-results", "10"]) == 0
    document = json.loads(capsys.readouterr().out)
    settings = document["settings"]
    [result] = document["results"]
    k = settings["max_results"]

    # The mode `ragloom query` uses without --mode.
    assert result["mode"] == build_parser().parse_args(["query", "x"]).mode == "hybrid"

    # The same hybrid: eval's retriever for what it reports, beside `ragloom query`'s
    # (index_hybrid_retriever: legs of hybrid_candidates(k), then default_hybrid_retriever),
    # over one stand-in index.
    model = FakeEmbeddingModel(8)
    store, keywords = InMemoryEmbeddingStore(), BM25Index()
    indexes = EvaluationIndexes([], keywords, store=store, embedding_model=model)
    configuration = Configuration(result["mode"], result["fusion"], result["group"])
    evaluated = retriever_for(
        indexes, configuration, max_results=k, candidates=settings["candidates"]
    )
    legs = hybrid_candidates(k)
    easy_rag = index_hybrid_retriever(store, keywords, model, k)
    assert easy_rag.min_score == 0.0
    assert _settings(evaluated) == _settings(easy_rag.retriever)
    assert settings["candidates"] == legs == 100

    # The segments of Easy RAG's default splitter.
    splitter = default_document_splitter()
    segments = sum(len(splitter.split(d)) for d in load_beir(str(DATA)).documents())
    assert settings["segments"] is True
    assert settings["indexed_segments"] == segments
    # ... the splitter eval loads (the plugin default) splits a long text as Easy RAG's
    long = Document(" ".join(f"word{i} is here." for i in range(1000)))
    loaded = cast(DocumentSplitter, plugins.load_default(plugins.DOCUMENT_SPLITTERS))
    expected = [segment.text for segment in splitter.split(long)]
    assert [segment.text for segment in loaded.split(long)] == expected
    assert len(expected) > 1
