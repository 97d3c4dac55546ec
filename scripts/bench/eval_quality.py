"""Retrieval quality on a BEIR data set: analyzers, feedback, fusion, document aggregation.

    .venv/bin/python scripts/bench/eval_quality.py [DATA_DIR] [--cache FILE] [--rss]

Reproduces the results table of docs/evaluation.md (default DATA_DIR: the CISI set,
../shared/eval-data/cisi). Dense is all-MiniLM-L6-v2 (int8 ONNX); every text (document,
segment, query) is embedded once and kept in ``--cache`` (an .npz plus a .json list of
the texts), so later runs only rescore. Each row prints nDCG@10, MRR@10, recall@100 and,
against the reference row (RRF of dense and stemmed BM25 with Lucene's stopwords, the
earlier hybrid), the change and how many queries got better / worse.

The row marked "not shipped" (summing a document's segments) is measured here only:
it lost to the maximum. ``--rss`` also measures peak RSS and time of embedding the corpus
with onnxruntime's CPU memory arena on and off (one subprocess each).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ragloom.core import Content, Query
from ragloom.core.bm25 import LUCENE_STOPWORDS, RM3, BM25Index, StandardAnalyzer
from ragloom.core.content import SCORE
from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding, EmbeddingModel, EmbeddingResult, TokenUsage, text_of
from ragloom.core.evaluation import DOC_ID, BeirDataset, EvaluationReport, evaluate, load_beir
from ragloom.core.retrievers.base import ContentRetriever
from ragloom.core.retrievers.bm25 import BM25ContentRetriever
from ragloom.core.retrievers.embedding_store import EmbeddingStoreContentRetriever
from ragloom.core.retrievers.hybrid import HybridContentRetriever
from ragloom.core.retrievers.rocchio import Rocchio
from ragloom.core.stores.in_memory import InMemoryEmbeddingStore
from ragloom.easy_rag.defaults import default_document_splitter
from ragloom.embeddings.onnx import AllMiniLmL6V2QuantizedEmbeddingModel

ROOT = Path(__file__).parents[2]
DEFAULT_DATA = ROOT.parent / "shared" / "eval-data" / "cisi"
LEGS = 100  # each hybrid leg's candidates (Easy RAG: max(k, 100))


class CachedModel(EmbeddingModel):
    """all-MiniLM-L6-v2 behind a text -> vector cache file (embeds only unseen texts)."""

    def __init__(self, cache: Path) -> None:
        self.cache = cache
        self.vectors: dict[str, np.ndarray] = {}
        names = cache.with_suffix(".json")
        if cache.exists() and names.exists():
            texts = json.loads(names.read_text())
            self.vectors = dict(zip(texts, np.load(cache)["v"], strict=True))
        self.model: AllMiniLmL6V2QuantizedEmbeddingModel | None = None

    def embed_all(self, texts: Sequence[str | TextSegment]) -> EmbeddingResult:
        strings = [text_of(t) for t in texts]
        missing = list(dict.fromkeys(s for s in strings if s not in self.vectors))
        if missing:
            self.model = self.model or AllMiniLmL6V2QuantizedEmbeddingModel()
            print(f"embedding {len(missing)} texts", file=sys.stderr, flush=True)
            for text, e in zip(missing, self.model.embed_all(missing).embeddings, strict=True):
                self.vectors[text] = np.asarray(e.vector, dtype=np.float32)
            texts_list = list(self.vectors)
            np.savez(self.cache, v=np.stack([self.vectors[t] for t in texts_list]))
            self.cache.with_suffix(".json").write_text(json.dumps(texts_list))
        return EmbeddingResult([Embedding(self.vectors[s]) for s in strings], TokenUsage(0))

    @property
    def dimension(self) -> int:
        return 384


class SumPerDocument:
    """Segments -> documents by the sum of their scores (not shipped: long documents win)."""

    def __init__(self, retriever: ContentRetriever) -> None:
        self.retriever = retriever

    def retrieve(self, query: Query) -> list[Content]:
        first: dict[str, Content] = {}  # each document's first segment: the one it shows
        sums: dict[str, float] = {}
        for c in self.retriever.retrieve(query):
            doc = str(c.text_segment.metadata[DOC_ID])
            first.setdefault(doc, c)
            sums[doc] = sums.get(doc, 0.0) + (c.score or 0.0)
        ranked = sorted(sums, key=lambda doc: -sums[doc])
        return [Content(first[doc].text_segment, {SCORE: sums[doc]}) for doc in ranked]


def _rows(dataset: BeirDataset, model: EmbeddingModel) -> dict[str, ContentRetriever]:
    documents = dataset.documents()
    whole = [d.to_text_segment() for d in documents]
    splitter = default_document_splitter()
    segments = [s for d in documents for s in splitter.split(d)]

    def bm25(segs: list[TextSegment], analyzer: StandardAnalyzer | None = None) -> BM25Index:
        index = BM25Index(analyzer)
        index.add_all(segs)
        return index

    def store(segs: list[TextSegment]) -> InMemoryEmbeddingStore:
        built = InMemoryEmbeddingStore()
        built.add_all(model.embed_all(segs).embeddings, segs)
        return built

    def kw(index: BM25Index, expansion: RM3 | None = None) -> BM25ContentRetriever:
        return BM25ContentRetriever(index, max_results=LEGS, expansion=expansion)

    def dense(
        built: InMemoryEmbeddingStore, feedback: Rocchio | None = None
    ) -> EmbeddingStoreContentRetriever:
        return EmbeddingStoreContentRetriever(built, model, max_results=LEGS, feedback=feedback)

    def hybrid(d: ContentRetriever, k: ContentRetriever, **options: object) -> ContentRetriever:
        return HybridContentRetriever(d, k, max_results=100, **options)  # type: ignore[arg-type]

    earlier = bm25(whole, StandardAnalyzer(stopwords=LUCENE_STOPWORDS, stemmer=None, min_length=1))
    lucene = bm25(whole, StandardAnalyzer(stopwords=LUCENE_STOPWORDS))
    default, seg_index = bm25(whole), bm25(segments)
    whole_store, seg_store = store(whole), store(segments)
    return {
        "keyword, earlier analyzer (no stemming, 33 stopwords)": kw(earlier),
        "keyword, stemmed, 33 stopwords": kw(lucene),
        "keyword, default (stemmed, 179 stopwords, 2+ chars)": kw(default),
        "keyword, default + RM3": kw(default, RM3()),
        "dense": dense(whole_store),
        "dense + Rocchio": dense(whole_store, Rocchio()),
        "hybrid RRF, stemmed 33-stopword BM25 (reference)": hybrid(dense(whole_store), kw(lucene)),
        "hybrid RRF": hybrid(dense(whole_store), kw(default)),
        "hybrid weighted": hybrid(dense(whole_store), kw(default), fusion="weighted"),
        "hybrid weighted, BM25 + RM3": hybrid(
            dense(whole_store), kw(default, RM3()), fusion="weighted"
        ),
        "hybrid weighted, dense + Rocchio": hybrid(
            dense(whole_store, Rocchio()), kw(default), fusion="weighted"
        ),
        "segments: dense": dense(seg_store),
        "segments: keyword": kw(seg_index),
        "segments: hybrid RRF": hybrid(dense(seg_store), kw(seg_index)),
        "segments: hybrid weighted (Easy RAG default)": hybrid(
            dense(seg_store), kw(seg_index), fusion="weighted"
        ),
        "segments: hybrid weighted by document, max (best)": hybrid(
            dense(seg_store), kw(seg_index), fusion="weighted", group_by=DOC_ID
        ),
        "segments: hybrid weighted by document, BM25 + RM3": hybrid(
            dense(seg_store), kw(seg_index, RM3()), fusion="weighted", group_by=DOC_ID
        ),
        "segments: hybrid weighted by document, dense + Rocchio": hybrid(
            dense(seg_store, Rocchio()), kw(seg_index), fusion="weighted", group_by=DOC_ID
        ),
        "segments: hybrid weighted, sum per document (not shipped)": SumPerDocument(
            hybrid(dense(seg_store), kw(seg_index), fusion="weighted")
        ),
    }


def _line(name: str, report: EvaluationReport, reference: EvaluationReport | None) -> str:
    m = report.metrics
    line = f"| {name} | {m['ndcg@10']:.4f} | {m['mrr@10']:.4f} | {m['recall@100']:.4f} |"
    if reference is None:
        return line + " | |"
    ours = {q.query_id: q.metrics["ndcg@10"] for q in report.queries}
    theirs = {q.query_id: q.metrics["ndcg@10"] for q in reference.queries}
    wins = sum(ours[q] > theirs[q] + 1e-12 for q in ours)
    losses = sum(ours[q] < theirs[q] - 1e-12 for q in ours)
    return line + f" {m['ndcg@10'] - reference.metrics['ndcg@10']:+.4f} | {wins}/{losses} |"


def _rss() -> None:
    code = (
        "import json, resource, sys, time\n"
        "from ragloom.core.evaluation import load_beir\n"
        "from ragloom.embeddings.onnx import AllMiniLmL6V2QuantizedEmbeddingModel as M\n"
        "texts = [d.text for d in load_beir(sys.argv[1]).documents()]\n"
        "m = M(enable_cpu_mem_arena=sys.argv[2] == 'on'); m.load()\n"
        "base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        "t = time.perf_counter(); m.embed_all(texts); t = time.perf_counter() - t\n"
        "peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        "print(f'arena {sys.argv[2]}: peak RSS {peak:.0f} MiB (model loaded: {base:.0f}), "
        "{t:.1f} s')\n"
    )
    for arena in ("on", "off"):
        subprocess.run([sys.executable, "-c", code, str(ARGS.data), arena], check=True)


def main() -> None:
    dataset = load_beir(ARGS.data)
    model = CachedModel(ARGS.cache)
    rows = _rows(dataset, model)
    print(
        f"{dataset.name}: {len(dataset.judged_queries())} judged queries, "
        f"{len(dataset.corpus)} documents"
    )
    print("| retriever | nDCG@10 | MRR@10 | R@100 | vs reference | better/worse |")
    print("|---|---|---|---|---|---|")
    reports = {name: evaluate(retriever, dataset) for name, retriever in rows.items()}
    reference = next(r for name, r in reports.items() if "(reference)" in name)
    for name, report in reports.items():
        print(_line(name, report, None if report is reference else reference))
    if ARGS.rss:
        _rss()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/ragloom-eval-vectors.npz"))
    parser.add_argument("--rss", action="store_true", help="also measure the arena's memory")
    ARGS = parser.parse_args()
    main()
