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
- contextual headers: the default's segments through ContextualHeaderTransformer (the
  title prepended; for both legs) -- equal to the default where the corpus has no titles;
- sentence window: SentenceWindowSplitter(window=3), hybrid weighted over the sentences,
  SentenceWindowRetriever (a document ranks at its best sentence);
- parent-document: ParentChildSplitter with 64-token children (recursive, no overlap),
  parents the whole documents, hybrid weighted over the children, ParentDocumentRetriever.

Run one process per collection at a time: two writing the same cache file lose each
other's new vectors (the rows still come out right; the lost texts are embedded again).
``--cached-only`` skips the rows whose texts are not all cached (no embedding).

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
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from eval_quality import CachedModel

from ragloom.core import document_splitters
from ragloom.core.bm25 import LUCENE_STOPWORDS, RM3, BM25Index, StandardAnalyzer
from ragloom.core.contextual_headers import ContextualHeaderTransformer
from ragloom.core.document import TextSegment
from ragloom.core.evaluation import BeirDataset, EvaluationReport, evaluate, load_beir
from ragloom.core.evaluation.beir import DOC_ID
from ragloom.core.parent_store import InMemoryParentStore
from ragloom.core.retrievers.base import ContentRetriever
from ragloom.core.retrievers.bm25 import BM25ContentRetriever
from ragloom.core.retrievers.embedding_store import EmbeddingStoreContentRetriever
from ragloom.core.retrievers.hybrid import HybridContentRetriever
from ragloom.core.retrievers.parent_document import ParentDocumentRetriever
from ragloom.core.retrievers.rocchio import Rocchio
from ragloom.core.retrievers.sentence_window import SentenceWindowRetriever
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
ROWS = [
    "reference",
    "default",
    "default, RRF",
    "default, by document",
    "default, BM25 + RM3",
    "default, dense + Rocchio",
    "default, by document + Rocchio",
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

        def bm25(segs: list[TextSegment], analyzer: StandardAnalyzer | None = None) -> BM25Index:
            def make() -> BM25Index:
                index = BM25Index(analyzer)
                index.add_all(segs)
                return index

            return memo((id(segs), "lucene" if analyzer else "bm25"), make)  # type: ignore[return-value]

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
            **options: object,
        ) -> HybridContentRetriever:
            dense = EmbeddingStoreContentRetriever(
                store(segs), model, max_results=legs, feedback=feedback
            )
            keyword = BM25ContentRetriever(
                bm25(segs, analyzer), max_results=legs, expansion=expansion
            )
            return HybridContentRetriever(dense, keyword, max_results=legs, **options)  # type: ignore[arg-type]

        lucene = StandardAnalyzer(stopwords=LUCENE_STOPWORDS)
        weighted = {"fusion": "weighted"}
        makers: dict[str, Callable[[], ContentRetriever]] = {
            "reference": lambda: hybrid(self.whole, analyzer=lucene),
            "default": lambda: hybrid(self.segments, **weighted),
            "default, RRF": lambda: hybrid(self.segments),
            "default, by document": lambda: hybrid(self.segments, group_by=DOC_ID, **weighted),
            "default, BM25 + RM3": lambda: hybrid(self.segments, expansion=RM3(), **weighted),
            "default, dense + Rocchio": lambda: hybrid(
                self.segments, feedback=Rocchio(), **weighted
            ),
            "default, by document + Rocchio": lambda: hybrid(
                self.segments, feedback=Rocchio(), group_by=DOC_ID, **weighted
            ),
            "contextual headers": lambda: hybrid(self.headed, **weighted),
            "sentence window": lambda: SentenceWindowRetriever(
                hybrid(self.sentences, SMALL_LEGS, **weighted)
            ),
            "parent-document": lambda: ParentDocumentRetriever(
                hybrid(self.children, SMALL_LEGS, **weighted), self.parents, max_results=LEGS
            ),
        }
        return {name: make for name, make in makers.items() if not only or name in only}


def _delta(report: EvaluationReport, base: EvaluationReport) -> tuple[float, int, int]:
    ours = {q.query_id: q.metrics["ndcg@10"] for q in report.queries}
    theirs = {q.query_id: q.metrics["ndcg@10"] for q in base.queries}
    wins = sum(ours[q] > theirs[q] + 1e-12 for q in ours)
    losses = sum(ours[q] < theirs[q] - 1e-12 for q in ours)
    return report.metrics["ndcg@10"] - base.metrics["ndcg@10"], wins, losses


def main() -> None:
    args = ARGS
    args.cache_dir.mkdir(parents=True, exist_ok=True)
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
            delta = details[n]["vs_default"].get(row)  # type: ignore[union-attr]
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
    ARGS = parser.parse_args()
    main()
