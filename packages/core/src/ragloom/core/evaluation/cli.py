"""The evaluation command line (``python -m ragloom.core.evaluation``) and the retrievers
it builds over a data set: keyword (BM25), dense (the default embedding model) or hybrid."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Literal, cast, get_args

from ragloom.core import plugins
from ragloom.core.bm25.analyzer import StandardAnalyzer
from ragloom.core.embedding import EmbeddingModel
from ragloom.core.errors import InvalidArgumentError
from ragloom.core.evaluation.beir import BeirDataset, load_beir
from ragloom.core.evaluation.runner import evaluate
from ragloom.core.retrievers.base import ContentRetriever
from ragloom.core.retrievers.bm25 import BM25ContentRetriever
from ragloom.core.retrievers.embedding_store import EmbeddingStoreContentRetriever
from ragloom.core.retrievers.hybrid import HybridContentRetriever
from ragloom.core.stores.in_memory import InMemoryEmbeddingStore

__all__ = ["Mode", "build_retriever", "main"]

Mode = Literal["keyword", "dense", "hybrid"]
_BATCH = 64


def build_retriever(
    dataset: BeirDataset,
    mode: Mode,
    *,
    embedding_model: EmbeddingModel | None = None,
    max_results: int = 100,
    stemmer: str | None = "english",
) -> ContentRetriever:
    """A retriever over the whole documents of ``dataset``: BM25 (``keyword``), the
    embedding model in an in-memory store (``dense``; default: the discovered default
    model), or both fused with RRF (``hybrid``). Each returns ``max_results`` contents."""
    if mode not in get_args(Mode):
        raise InvalidArgumentError(f"mode must be one of {get_args(Mode)}, got {mode!r}")
    documents = dataset.documents()
    keyword = BM25ContentRetriever.from_documents(
        documents, analyzer=StandardAnalyzer(stemmer=stemmer), max_results=max_results
    )
    if mode == "keyword":
        return keyword
    model = embedding_model or cast(EmbeddingModel, plugins.load_default(plugins.EMBEDDING_MODELS))
    store = InMemoryEmbeddingStore()
    segments = [document.to_text_segment() for document in documents]
    for start in range(0, len(segments), _BATCH):
        batch = segments[start : start + _BATCH]
        store.add_all(model.embed_all(batch).embeddings, batch)
    dense = EmbeddingStoreContentRetriever(store, model, max_results=max_results)
    if mode == "dense":
        return dense
    return HybridContentRetriever(dense, keyword, max_results=max_results)


def main(argv: Sequence[str] | None = None) -> int:
    """Evaluate one or more modes on a BEIR directory; prints a summary (or JSON)."""
    parser = argparse.ArgumentParser(
        prog="python -m ragloom.core.evaluation",
        description="Evaluate retrieval on a BEIR-layout data set "
        "(corpus.jsonl, queries.jsonl, qrels/<split>.tsv).",
    )
    parser.add_argument("data", help="the data set directory")
    parser.add_argument("--split", default="test", help="qrels split (default: test)")
    parser.add_argument(
        "--mode",
        action="append",
        choices=get_args(Mode),
        help="retriever(s) to evaluate; repeatable (default: keyword)",
    )
    parser.add_argument("--max-results", type=int, default=100, help="contents per query")
    parser.add_argument(
        "--stemmer",
        default="english",
        help="Snowball language of the BM25 analyzer (default english; none: no stemming)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON reports")
    args = parser.parse_args(argv)
    dataset = load_beir(args.data, args.split)
    for mode in args.mode or ["keyword"]:
        retriever = build_retriever(
            dataset,
            mode,
            max_results=args.max_results,
            stemmer=None if args.stemmer == "none" else args.stemmer,
        )
        report = evaluate(retriever, dataset)
        print(report.to_json() if args.json else f"[{mode}] {report.format()}")
    return 0
