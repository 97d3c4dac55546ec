"""The generalisation table: nDCG@10 of the reference hybrid, the default and each ranking
pattern on several classic test collections (docs/evaluation.md, issue 35).

    .venv/bin/python scripts/bench/quality_table.py [DATA_DIR ...] [--cache-dir DIR]
        [--only ROW ...] [--json FILE]

DATA_DIRs are BEIR-layout sets (default: ../shared/eval-data/cisi and the committed
scripts/bench/collections/{med,cran,npl}, whose gzipped corpus is unpacked into the cache
directory first). Dense is all-MiniLM-L6-v2 (int8 ONNX, the default embedding model);
every text (document, segment, sentence, child, query) is embedded once and kept per
collection in ``--cache-dir`` (default .bench-cache/quality, gitignored), so later runs
only rescore. Rows (hybrid legs give 100 candidates, 300 for sentence and child segments,
several of which may share a document; a document counts once, at its best rank):

- reference: RRF (k=60) of dense and stemmed BM25 with Lucene's 33 stopwords over whole
  documents (the earlier hybrid the issue measures against);
- default: ``ragloom eval``'s Easy RAG default -- the default splitter's segments (254
  tokens, 30 overlap), hybrid weighted, not grouped;
- default with RRF fusion; grouped by document (``--group document``); BM25 + RM3;
  dense + Rocchio; grouped by document with dense + Rocchio;
- knobs of the default (local re-ranking and the goal, issue 35): dense/keyword weights
  0.6/0.4 and 0.4/0.6 (``weights``); BM25 k1 1.2 and Anserini's k1 0.9, b 0.4 (default
  k1 1.5, b 0.75); z-score instead of min-max normalisation before the weighted sum (each
  list's scores standardised, shifted so its last is 0; a content missing from a list
  gets 0 from it); dense + Rocchio with weight 1 (default Rocchio weight 0.5), alone and
  with BM25 k1 1.2 (the best pair of a wider sweep, see docs/evaluation.md);
- re-ranked by embedding: the default's first 30 re-ordered by the cosine of the query
  and each segment's full text under the default embedding model (a bi-encoder
  ``ScoringModel`` through ``ReRankingContentAggregator``: the one in-process re-ranker
  possible without cross-encoder weights);
- contextual headers: the default's segments through ContextualHeaderTransformer (the
  title prepended; for both legs) -- equal to the default where the corpus has no titles;
- sentence window: SentenceWindowSplitter(window=3), hybrid weighted over the sentences,
  SentenceWindowRetriever (a document ranks at its best sentence);
- parent-document: ParentChildSplitter with 64-token children (recursive, no overlap),
  parents the whole documents, hybrid weighted over the children, ParentDocumentRetriever.

Run one process per collection at a time: two writing the same cache file lose each
other's new vectors (the rows still come out right; the lost texts are embedded again).
``--cached-only`` skips the rows whose texts are not all cached (no embedding).

``--sweep`` prints, instead of the rows, the default's knobs in combination (Rocchio
settings, BM25 k1/b, the dense weight, min-max or z-score normalisation; 98 settings, each
leg searched once a query) as nDCG@10 gains over the reference, best worst case first.

Auto-merging is not a row: it returns a merged parent at the rank of its best child, so
documents rank exactly as in the child retrieval (the parent-document row).
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Hashable, Sequence
from functools import partial
from pathlib import Path
from typing import cast

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from eval_quality import CachedModel

from ragloom.core import document_splitters
from ragloom.core.bm25 import LUCENE_STOPWORDS, RM3, BM25Index, StandardAnalyzer
from ragloom.core.content import SCORE, Content
from ragloom.core.content_aggregators import ReRankingContentAggregator
from ragloom.core.contextual_headers import ContextualHeaderTransformer
from ragloom.core.document import TextSegment
from ragloom.core.embedding import EmbeddingModel
from ragloom.core.evaluation import BeirDataset, EvaluationReport, evaluate, load_beir
from ragloom.core.evaluation.beir import DOC_ID
from ragloom.core.fusion import content_key, fuse_weighted_scores
from ragloom.core.parent_store import InMemoryParentStore
from ragloom.core.query import Query
from ragloom.core.retrievers.base import ContentRetriever
from ragloom.core.retrievers.bm25 import BM25ContentRetriever
from ragloom.core.retrievers.embedding_store import EmbeddingStoreContentRetriever
from ragloom.core.retrievers.hybrid import Fusion, HybridContentRetriever
from ragloom.core.retrievers.parent_document import ParentDocumentRetriever
from ragloom.core.retrievers.rocchio import Rocchio
from ragloom.core.retrievers.sentence_window import SentenceWindowRetriever
from ragloom.core.scoring import ScoringModel, ScoringResult
from ragloom.core.splitters.parent_child import ParentChildSplitter
from ragloom.core.splitters.sentence_window import SentenceWindowSplitter
from ragloom.core.stores.in_memory import InMemoryEmbeddingStore
from ragloom.easy_rag.defaults import default_document_splitter
from ragloom.embeddings.onnx import AllMiniLmL6V2Tokenizer

ROOT = Path(__file__).parents[2]
COLLECTIONS = Path(__file__).parent / "collections"
DEFAULT_DATA = [
    ROOT.parent / "shared" / "eval-data" / "cisi",
    COLLECTIONS / "med",
    COLLECTIONS / "cran",
    COLLECTIONS / "npl",
]
LEGS = 100  # each hybrid leg's candidates (Easy RAG: max(k, 100))
SMALL_LEGS = 300  # for sentences and children, several of which share a document
CHILD_TOKENS = 64
RERANKED = 30  # how many of the default's first results the embedding re-ranks
ROWS = [
    "reference",
    "default",
    "default, RRF",
    "default, by document",
    "default, BM25 + RM3",
    "default, dense + Rocchio",
    "default, by document + Rocchio",
    "default, weights 0.6/0.4",
    "default, weights 0.4/0.6",
    "default, BM25 k1 1.2",
    "default, BM25 k1 0.9 b 0.4",
    "default, z-score fusion",
    "default, dense + Rocchio weight 1",
    "default, dense + Rocchio weight 1, BM25 k1 1.2",
    "default, re-ranked by embedding",
    "contextual headers",
    "sentence window",
    "parent-document",
]


def load(path: Path, cache_dir: Path) -> BeirDataset:
    """``path`` as a BEIR set; a gzipped corpus is unpacked into ``cache_dir`` first."""
    packed = path / "corpus.jsonl.gz"
    if not packed.exists():
        return load_beir(path)
    target = cache_dir / "data" / path.name
    (target / "qrels").mkdir(parents=True, exist_ok=True)
    corpus = target / "corpus.jsonl"
    if not corpus.exists() or corpus.stat().st_mtime < packed.stat().st_mtime:
        corpus.write_bytes(gzip.decompress(packed.read_bytes()))
    shutil.copyfile(path / "queries.jsonl", target / "queries.jsonl")
    shutil.copyfile(path / "qrels" / "test.tsv", target / "qrels" / "test.tsv")
    return load_beir(target)


class CosineScoringModel(ScoringModel):
    """Bi-encoder scores: the cosine of the query's and each segment's embedding."""

    def __init__(self, model: EmbeddingModel) -> None:
        self.model = model

    def score_all(self, segments: Sequence[str | TextSegment], query: str) -> ScoringResult:
        vectors = np.array([e.vector for e in self.model.embed_all(segments).embeddings])
        query_vector = np.asarray(self.model.embed(query).embedding.vector)
        norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(query_vector)
        return ScoringResult((vectors @ query_vector / np.maximum(norms, 1e-12)).tolist())


class ReRanked:
    """``retriever``'s first ``first`` results re-ranked by ``scoring``, the rest after."""

    def __init__(self, retriever: ContentRetriever, scoring: ScoringModel, first: int) -> None:
        self.retriever, self.first = retriever, first
        self.aggregator = ReRankingContentAggregator(scoring)

    def retrieve(self, query: Query) -> list[Content]:
        found = self.retriever.retrieve(query)
        return self.aggregator.aggregate({query: [found[: self.first]]}) + found[self.first :]


def fuse_z_scores(rankings: Sequence[Sequence[Content]], weights: Sequence[float]) -> list[Content]:
    """The weighted sum of the lists' z-scores (each list standardised, then shifted so its
    last score is 0; absent from a list counts 0), best first."""
    fused: dict[Hashable, tuple[Content, float]] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        if not ranking:
            continue
        scores = np.array([c.score for c in ranking], dtype=np.float64)
        z = (scores - scores.mean()) / (scores.std() or 1.0)
        seen: set[Hashable] = set()
        for content, value in zip(ranking, weight * (z - z.min()), strict=True):
            key = content_key(content)
            if key not in seen:
                seen.add(key)
                kept, total = fused.get(key, (content, 0.0))
                fused[key] = (kept, total + float(value))
    ranked = sorted(fused.values(), key=lambda entry: -entry[1])
    return [Content(c.text_segment, {**c.metadata, SCORE: score}) for c, score in ranked]


def fuse_min_max(rankings: Sequence[Sequence[Content]], weights: Sequence[float]) -> list[Content]:
    """Core's weighted fusion (min-max normalised scores), as contents."""
    return [
        Content(c.text_segment, {**c.metadata, SCORE: score})
        for c, score in fuse_weighted_scores(rankings, weights)
    ]


class ZScoreHybrid:
    """The dense and keyword lists fused by :func:`fuse_z_scores` with equal weights."""

    def __init__(self, dense: ContentRetriever, keyword: ContentRetriever, legs: int) -> None:
        self.legs, self.max_results = (dense, keyword), legs

    def retrieve(self, query: Query) -> list[Content]:
        rankings = [leg.retrieve(query) for leg in self.legs]
        return fuse_z_scores(rankings, (0.5, 0.5))[: self.max_results]


class Fixed:
    """Answers each query from a precomputed function of its text (for the sweep)."""

    def __init__(self, answer: Callable[[str], list[Content]]) -> None:
        self.answer = answer

    def retrieve(self, query: Query) -> list[Content]:
        return self.answer(query.text)


class Collection:
    """The segmentations of one data set, embedded once (in chunks, saved as they go)."""

    def __init__(self, dataset: BeirDataset, model: CachedModel) -> None:
        self.dataset, self.model = dataset, model
        documents = dataset.documents()
        self.whole = [d.to_text_segment() for d in documents]
        splitter = default_document_splitter()
        self.segments = [s for d in documents for s in splitter.split(d)]
        self.headed = ContextualHeaderTransformer().transform_all(self.segments)
        pairs = zip(self.segments, self.headed, strict=True)
        self.has_titles = any(a.text != b.text for a, b in pairs)
        window = SentenceWindowSplitter(3)
        self.sentences = [s for d in documents for s in window.split(d)]
        self.parents = InMemoryParentStore()
        children = ParentChildSplitter(
            document_splitters.recursive(CHILD_TOKENS, 0, AllMiniLmL6V2Tokenizer()), self.parents
        )
        self.children = children.split_all(documents)

    def missing(self, rows: list[str]) -> list[str]:
        """The texts ``rows`` need that the cache lacks."""
        needs = {
            "reference": self.whole,
            "contextual headers": self.headed,
            "sentence window": self.sentences,
            "parent-document": self.children,
        }
        texts = list(self.dataset.judged_queries().values())
        for row in rows:
            texts += [s.text for s in needs.get(row, self.segments)]
        return list(dict.fromkeys(t for t in texts if t not in self.model.vectors))

    def embed(self, rows: list[str]) -> None:
        """Embed the texts ``rows`` need that the cache lacks (saved every 500)."""
        missing = self.missing(rows)
        print(
            f"{self.dataset.name}: {len(self.whole)} documents, {len(self.segments)} segments, "
            f"{len(self.sentences)} sentences, {len(self.children)} children; "
            f"{len(missing)} texts to embed",
            file=sys.stderr,
            flush=True,
        )
        start = time.perf_counter()
        for first in range(0, len(missing), 500):
            self.model.embed_all(missing[first : first + 500])
            print(
                f"  embedded {min(first + 500, len(missing))}/{len(missing)} "
                f"({time.perf_counter() - start:.0f} s)",
                file=sys.stderr,
                flush=True,
            )

    def rows(self, only: set[str]) -> dict[str, Callable[[], ContentRetriever]]:
        model = self.model
        cache: dict[tuple[int, str], object] = {}

        def memo(key: tuple[int, str], make: Callable[[], object]) -> object:
            if key not in cache:
                cache[key] = make()
            return cache[key]

        def bm25(
            segs: list[TextSegment],
            analyzer: StandardAnalyzer | None = None,
            k1: float = 1.5,
            b: float = 0.75,
        ) -> BM25Index:
            def make() -> BM25Index:
                index = BM25Index(analyzer, k1=k1, b=b)
                index.add_all(segs)
                return index

            name = f"{'lucene' if analyzer else 'bm25'} {k1} {b}"
            return memo((id(segs), name), make)  # type: ignore[return-value]

        def store(segs: list[TextSegment]) -> InMemoryEmbeddingStore:
            def make() -> InMemoryEmbeddingStore:
                built = InMemoryEmbeddingStore()
                built.add_all(model.embed_all(segs).embeddings, segs)
                return built

            return memo((id(segs), "store"), make)  # type: ignore[return-value]

        def hybrid(
            segs: list[TextSegment],
            legs: int = LEGS,
            *,
            analyzer: StandardAnalyzer | None = None,
            expansion: RM3 | None = None,
            feedback: Rocchio | None = None,
            k1: float = 1.5,
            b: float = 0.75,
            fusion: Fusion | None = "weighted",
            weights: tuple[float, float] | None = None,
            group_by: str | None = None,
        ) -> ContentRetriever:
            """Dense and BM25 over ``segs``, fused; ``fusion=None`` fuses z-scores."""
            dense = EmbeddingStoreContentRetriever(
                store(segs), model, max_results=legs, feedback=feedback
            )
            keyword = BM25ContentRetriever(
                bm25(segs, analyzer, k1, b), max_results=legs, expansion=expansion
            )
            if fusion is None:
                return ZScoreHybrid(dense, keyword, legs)
            return HybridContentRetriever(
                dense, keyword, fusion=fusion, weights=weights, max_results=legs, group_by=group_by
            )

        lucene = StandardAnalyzer(stopwords=LUCENE_STOPWORDS)
        segments = self.segments
        makers: dict[str, Callable[[], ContentRetriever]] = {
            "reference": lambda: hybrid(self.whole, analyzer=lucene, fusion="rrf"),
            "default": lambda: hybrid(segments),
            "default, RRF": lambda: hybrid(segments, fusion="rrf"),
            "default, by document": lambda: hybrid(segments, group_by=DOC_ID),
            "default, BM25 + RM3": lambda: hybrid(segments, expansion=RM3()),
            "default, dense + Rocchio": lambda: hybrid(segments, feedback=Rocchio()),
            "default, by document + Rocchio": lambda: hybrid(
                segments, feedback=Rocchio(), group_by=DOC_ID
            ),
            "default, weights 0.6/0.4": lambda: hybrid(segments, weights=(0.6, 0.4)),
            "default, weights 0.4/0.6": lambda: hybrid(segments, weights=(0.4, 0.6)),
            "default, BM25 k1 1.2": lambda: hybrid(segments, k1=1.2),
            "default, BM25 k1 0.9 b 0.4": lambda: hybrid(segments, k1=0.9, b=0.4),
            "default, z-score fusion": lambda: hybrid(segments, fusion=None),
            "default, dense + Rocchio weight 1": lambda: hybrid(
                segments, feedback=Rocchio(weight=1.0)
            ),
            "default, dense + Rocchio weight 1, BM25 k1 1.2": lambda: hybrid(
                segments, feedback=Rocchio(weight=1.0), k1=1.2
            ),
            "default, re-ranked by embedding": lambda: ReRanked(
                hybrid(segments), CosineScoringModel(model), RERANKED
            ),
            "contextual headers": lambda: hybrid(self.headed),
            "sentence window": lambda: SentenceWindowRetriever(hybrid(self.sentences, SMALL_LEGS)),
            "parent-document": lambda: ParentDocumentRetriever(
                hybrid(self.children, SMALL_LEGS), self.parents, max_results=LEGS
            ),
        }
        return {name: make for name, make in makers.items() if not only or name in only}


def _delta(report: EvaluationReport, base: EvaluationReport) -> tuple[float, int, int]:
    ours = {q.query_id: q.metrics["ndcg@10"] for q in report.queries}
    theirs = {q.query_id: q.metrics["ndcg@10"] for q in base.queries}
    wins = sum(ours[q] > theirs[q] + 1e-12 for q in ours)
    losses = sum(ours[q] < theirs[q] - 1e-12 for q in ours)
    return report.metrics["ndcg@10"] - base.metrics["ndcg@10"], wins, losses


SWEEP_FEEDBACK = [
    None,
    *(Rocchio(n, w) for n, w in [(3, 0.5), (5, 0.5), (3, 0.3), (3, 1.0), (10, 0.5)]),
]
SWEEP_BM25 = [(1.5, 0.75), (1.2, 0.75), (0.9, 0.4), (1.2, 0.5), (2.0, 0.75), (1.5, 0.9)]
SWEEP_WEIGHTS = [0.5, 0.6, 0.4, 0.55, 0.45]  # the dense leg's; the keyword leg has the rest


def sweep(collection: Collection) -> dict[str, float]:
    """nDCG@10 of the default's knobs in combination (``--sweep``): Rocchio settings x BM25
    k1/b x dense weight with min-max fusion (the weights only with one of the other two
    at its default), and each Rocchio setting with z-score fusion at three weights. Each
    leg is searched once per query; only the fusion is repeated."""
    model, segs, dataset = collection.model, collection.segments, collection.dataset
    store = InMemoryEmbeddingStore()
    store.add_all(model.embed_all(segs).embeddings, segs)
    texts = list(dataset.judged_queries().values())
    dense: dict[str, dict[str, list[Content]]] = {}
    keyword: dict[str, dict[str, list[Content]]] = {}
    for feedback in SWEEP_FEEDBACK:
        leg = EmbeddingStoreContentRetriever(store, model, max_results=LEGS, feedback=feedback)
        name = "dense" if feedback is None else f"Rocchio {feedback.documents}/{feedback.weight}"
        dense[name] = {text: leg.retrieve(Query(text)) for text in texts}
    for k1, b in SWEEP_BM25:
        index = BM25Index(k1=k1, b=b)
        index.add_all(segs)
        bm25 = BM25ContentRetriever(index, max_results=LEGS)
        keyword[f"k1 {k1} b {b}"] = {text: bm25.retrieve(Query(text)) for text in texts}
    default_bm25 = "k1 1.5 b 0.75"
    results: dict[str, float] = {}
    for d, lists in dense.items():
        for k, others in keyword.items():
            for w in SWEEP_WEIGHTS:
                if w != 0.5 and d != "dense" and k != default_bm25:
                    continue
                answer = partial(_fused, fuse_min_max, lists, others, (w, 1 - w))
                results[f"min-max, {d}, {k}, w {w}"] = _ndcg(answer, dataset)
        for w in SWEEP_WEIGHTS[:3]:
            answer = partial(_fused, fuse_z_scores, lists, keyword[default_bm25], (w, 1 - w))
            results[f"z-score, {d}, {default_bm25}, w {w}"] = _ndcg(answer, dataset)
    return results


def _fused(
    fuse: Callable[[Sequence[Sequence[Content]], Sequence[float]], list[Content]],
    dense: dict[str, list[Content]],
    keyword: dict[str, list[Content]],
    weights: tuple[float, float],
    text: str,
) -> list[Content]:
    return fuse([dense[text], keyword[text]], weights)[:LEGS]


def _ndcg(answer: Callable[[str], list[Content]], dataset: BeirDataset) -> float:
    return evaluate(Fixed(answer), dataset).metrics["ndcg@10"]


def print_sweep(sweeps: dict[str, dict[str, float]], references: dict[str, float]) -> None:
    """The sweep's settings, best worst-collection gain over the reference first."""
    names = list(sweeps)
    gains = {
        setting: [sweeps[n][setting] - references[n] for n in names] for setting in sweeps[names[0]]
    }
    print("| setting | " + " | ".join(names) + " | worst | mean |")
    print("|---|" + "---|" * (len(names) + 2))
    for setting, row in sorted(gains.items(), key=lambda item: -min(item[1])):
        cells = " | ".join(f"{g:+.4f}" for g in row)
        print(f"| {setting} | {cells} | {min(row):+.4f} | {statistics.mean(row):+.4f} |")


def main() -> None:
    args = ARGS
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    if args.sweep:
        sweeps: dict[str, dict[str, float]] = {}
        references: dict[str, float] = {}
        for path in args.data:
            dataset = load(path, args.cache_dir)
            collection = Collection(dataset, CachedModel(args.cache_dir / f"{dataset.name}.npz"))
            collection.embed(["reference", "default"])
            references[dataset.name] = evaluate(
                collection.rows({"reference"})["reference"](), dataset
            ).metrics["ndcg@10"]
            sweeps[dataset.name] = sweep(collection)
            print(f"{dataset.name}: {len(sweeps[dataset.name])} settings", file=sys.stderr)
        print_sweep(sweeps, references)
        return
    only = set(args.only or ())
    table: dict[str, dict[str, float]] = {}
    details: dict[str, dict[str, object]] = {}
    for path in args.data:
        dataset = load(path, args.cache_dir)
        model = CachedModel(args.cache_dir / f"{dataset.name}.npz")
        collection = Collection(dataset, model)
        rows = collection.rows(only)
        if args.cached_only:
            rows = {name: make for name, make in rows.items() if not collection.missing([name])}
        collection.embed(list(rows))
        reports: dict[str, EvaluationReport] = {}
        for name, make in rows.items():
            if name == "contextual headers" and not collection.has_titles and "default" in reports:
                reports[name] = reports["default"]  # no titles: the same segments
                continue
            start = time.perf_counter()
            reports[name] = evaluate(make(), dataset)
            print(
                f"  {name}: {reports[name].metrics['ndcg@10']:.4f} "
                f"({time.perf_counter() - start:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
        table[dataset.name] = {name: r.metrics["ndcg@10"] for name, r in reports.items()}
        base = reports.get("default")
        details[dataset.name] = {
            "queries": len(dataset.judged_queries()),
            "documents": len(dataset.corpus),
            "segments": len(collection.segments),
            "sentences": len(collection.sentences),
            "children": len(collection.children),
            "has_titles": collection.has_titles,
            "vs_default": {
                name: _delta(r, base) for name, r in reports.items() if base is not None
            },
        }
    _print(table, details)
    if args.json:
        args.json.write_text(json.dumps({"ndcg@10": table, "details": details}, indent=2))


def _print(table: dict[str, dict[str, float]], details: dict[str, dict[str, object]]) -> None:
    names = list(table)
    rows = [row for row in ROWS if any(row in table[n] for n in names)]
    print("| configuration | " + " | ".join(names) + " | mean | vs default (mean) |")
    print("|---|" + "---|" * (len(names) + 2))
    mean_default = (
        statistics.mean(table[n]["default"] for n in names)
        if all("default" in table[n] for n in names)
        else None
    )
    for row in rows:
        values = [table[n].get(row) for n in names]
        cells = [f"{v:.4f}" if v is not None else "not run" for v in values]
        if None in values or mean_default is None:
            print(f"| {row} | " + " | ".join(cells) + " | | |")
            continue
        mean = statistics.mean(v for v in values if v is not None)
        print(f"| {row} | " + " | ".join(cells) + f" | {mean:.4f} | {mean - mean_default:+.4f} |")
    print()
    print("Against the default, per collection: change in nDCG@10 (queries better/worse)")
    for row in rows:
        parts = []
        for n in names:
            vs_default = cast(dict[str, tuple[float, int, int]], details[n]["vs_default"])
            delta = vs_default.get(row)
            if delta is not None:
                parts.append(f"{n} {delta[0]:+.4f} ({delta[1]}/{delta[2]})")
        print(f"- {row}: " + ", ".join(parts))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="*", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--cache-dir", type=Path, default=ROOT / ".bench-cache" / "quality")
    parser.add_argument("--only", action="append", choices=ROWS, help="rows to run (repeatable)")
    parser.add_argument("--json", type=Path, help="also write the table and details here")
    parser.add_argument(
        "--cached-only",
        action="store_true",
        help="skip the rows whose texts are not all in the cache yet (no embedding)",
    )
    parser.add_argument(
        "--sweep",
        action="store_true",
        help="instead of the rows, the default's knobs in combination, as gains over the reference",
    )
    ARGS = parser.parse_args()
    main()
