"""The evaluation command line (``python -m ragloom.core.evaluation``, ``ragloom eval``) and
the retrievers it builds over a data set: keyword (BM25), dense (the default embedding
model) or hybrid (both fused), over whole documents or their segments.

The corpus is indexed once for every configuration compared (BM25 once, embeddings once),
and indexing time is reported apart from query time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn, cast, get_args

from ragloom.core import plugins
from ragloom.core.bm25.analyzer import StandardAnalyzer
from ragloom.core.bm25.index import BM25Index
from ragloom.core.document import TextSegment
from ragloom.core.embedding import EmbeddingModel
from ragloom.core.errors import InvalidArgumentError, RagloomError
from ragloom.core.evaluation.beir import DOC_ID, BeirDataset, EvaluationDataError, load_beir
from ragloom.core.evaluation.runner import EvaluationReport, evaluate
from ragloom.core.progress import LineProgress, PhaseProgress, phase
from ragloom.core.retrievers.base import ContentRetriever
from ragloom.core.retrievers.bm25 import BM25ContentRetriever
from ragloom.core.retrievers.embedding_store import EmbeddingStoreContentRetriever
from ragloom.core.retrievers.hybrid import Fusion, HybridContentRetriever
from ragloom.core.splitters.base import DocumentSplitter
from ragloom.core.stores.in_memory import InMemoryEmbeddingStore

__all__ = [
    "Configuration",
    "EvaluationIndexes",
    "Mode",
    "build_indexes",
    "build_retriever",
    "compare",
    "main",
    "retriever_for",
]

Mode = Literal["keyword", "dense", "hybrid"]
Group = Literal["segment", "document"]
K_VALUES = (1, 5, 10, 100)
_BATCH = 256
PROG = "python -m ragloom.core.evaluation"
#: What the command evaluates when not told otherwise (``main(defaults=...)`` overrides).
DEFAULTS: dict[str, Any] = {
    "mode": ["keyword"],
    "fusion": ["rrf"],
    "group": ["segment"],
    "segments": False,
    "candidates": None,
}


@dataclass(frozen=True, slots=True)
class Configuration:
    """One retriever to evaluate: ``mode``; for hybrid, its ``fusion`` and whether it fuses
    segments or documents (``group="document"``: each document's best segment)."""

    mode: Mode
    fusion: Fusion = "rrf"
    group: Group = "segment"

    def __post_init__(self) -> None:
        if self.mode not in get_args(Mode):
            raise InvalidArgumentError(f"mode must be one of {get_args(Mode)}, got {self.mode!r}")
        if self.fusion not in get_args(Fusion):
            raise InvalidArgumentError(
                f"fusion must be one of {get_args(Fusion)}, got {self.fusion!r}"
            )
        if self.group not in get_args(Group):
            raise InvalidArgumentError(
                f"group must be one of {get_args(Group)}, got {self.group!r}"
            )

    @property
    def name(self) -> str:
        """A short label: ``keyword``, ``dense``, ``hybrid weighted by document``, ..."""
        if self.mode != "hybrid":
            return self.mode
        return f"hybrid {self.fusion}" + (" by document" if self.group == "document" else "")

    def to_dict(self) -> dict[str, str]:
        """The configuration as JSON-ready settings."""
        if self.mode != "hybrid":
            return {"mode": self.mode}
        return {"mode": self.mode, "fusion": self.fusion, "group": self.group}


@dataclass
class EvaluationIndexes:
    """A data set's segments indexed once for every configuration: a BM25 index and, when
    dense retrieval is wanted, an in-memory embedding store. ``seconds`` is the indexing
    time of each (``keyword``, ``dense``)."""

    segments: list[TextSegment]
    keyword: BM25Index
    store: InMemoryEmbeddingStore | None = None
    embedding_model: EmbeddingModel | None = None
    seconds: dict[str, float] = field(default_factory=dict)


def build_indexes(
    dataset: BeirDataset,
    *,
    dense: bool = True,
    embedding_model: EmbeddingModel | None = None,
    stemmer: str | None = "english",
    document_splitter: DocumentSplitter | None = None,
    on_progress: PhaseProgress | None = None,
) -> EvaluationIndexes:
    """Index the documents of ``dataset`` (whole, or split by ``document_splitter``; each
    segment keeps ``doc_id``) with BM25 (:class:`StandardAnalyzer` with ``stemmer``) and,
    with ``dense``, embed them once with ``embedding_model`` (default: the discovered
    default model) into an in-memory store. ``on_progress`` hears the ``splitting``
    (documents) and ``embedding`` (segments) phases."""
    documents = dataset.documents()
    if document_splitter is None:
        segments = [document.to_text_segment() for document in documents]
    else:
        segments = []
        for number, document in enumerate(documents, 1):
            segments += document_splitter.split(document)
            if on_progress is not None:
                on_progress("splitting", number, len(documents))
    analyzer = StandardAnalyzer(stemmer=stemmer)  # validates the language before any work
    model = None
    if dense:
        model = embedding_model or cast(
            EmbeddingModel, plugins.load_default(plugins.EMBEDDING_MODELS)
        )
    start = time.perf_counter()
    keyword = BM25Index(analyzer)
    keyword.add_all(segments)
    indexes = EvaluationIndexes(segments, keyword, seconds={"keyword": _since(start)})
    if model is not None:
        start = time.perf_counter()
        store = InMemoryEmbeddingStore()
        for first in range(0, len(segments), _BATCH):
            batch = segments[first : first + _BATCH]
            store.add_all(model.embed_all(batch).embeddings, batch)
            if on_progress is not None:
                on_progress("embedding", first + len(batch), len(segments))
        indexes.store, indexes.embedding_model = store, model
        indexes.seconds["dense"] = _since(start)
    return indexes


def retriever_for(
    indexes: EvaluationIndexes,
    configuration: Configuration,
    *,
    max_results: int = 100,
    candidates: int | None = None,
) -> ContentRetriever:
    """The retriever of ``configuration`` over ``indexes``: ``max_results`` contents per
    query; a hybrid's legs return ``candidates`` each (default ``max_results``)."""
    legs = max(max_results, candidates or 0)
    keyword = BM25ContentRetriever(indexes.keyword, max_results=legs)
    if configuration.mode == "keyword":
        return BM25ContentRetriever(indexes.keyword, max_results=max_results)
    if indexes.store is None or indexes.embedding_model is None:
        raise InvalidArgumentError(
            f"{configuration.name} needs dense indexes: build_indexes(..., dense=True)"
        )
    if configuration.mode == "dense":
        return EmbeddingStoreContentRetriever(
            indexes.store, indexes.embedding_model, max_results=max_results
        )
    dense = EmbeddingStoreContentRetriever(indexes.store, indexes.embedding_model, max_results=legs)
    return HybridContentRetriever(
        dense,
        keyword,
        fusion=configuration.fusion,
        max_results=max_results,
        group_by=DOC_ID if configuration.group == "document" else None,
    )


def build_retriever(
    dataset: BeirDataset,
    mode: Mode,
    *,
    embedding_model: EmbeddingModel | None = None,
    max_results: int = 100,
    stemmer: str | None = "english",
    fusion: Fusion = "rrf",
) -> ContentRetriever:
    """A retriever over the whole documents of ``dataset``: BM25 (``keyword``), the
    embedding model in an in-memory store (``dense``; default: the discovered default
    model), or both fused (``hybrid``, by ``fusion``). Each returns ``max_results``."""
    configuration = Configuration(mode, fusion)
    indexes = build_indexes(
        dataset, dense=mode != "keyword", embedding_model=embedding_model, stemmer=stemmer
    )
    return retriever_for(indexes, configuration, max_results=max_results)


def compare(
    dataset: BeirDataset,
    indexes: EvaluationIndexes,
    configurations: Sequence[Configuration],
    *,
    max_results: int = 100,
    candidates: int | None = None,
    k_values: Sequence[int] = K_VALUES,
    on_progress: PhaseProgress | None = None,
) -> list[tuple[Configuration, EvaluationReport]]:
    """Evaluate each configuration over the same ``indexes`` (its report's ``seconds`` is
    its query time); ``on_progress`` hears one ``evaluating <name>`` phase (queries) per
    configuration."""
    return [
        (
            configuration,
            evaluate(
                retriever_for(
                    indexes, configuration, max_results=max_results, candidates=candidates
                ),
                dataset,
                k_values=k_values,
                on_progress=phase(on_progress, f"evaluating {configuration.name}"),
            ),
        )
        for configuration in configurations
    ]


class _ArgumentParser(argparse.ArgumentParser):
    """argparse with one-line errors that point at ``--help``, raised, not exited."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{message} (see `{self.prog} --help`)")


class _UsageError(Exception):
    """A bad command line (exit code 2)."""


def _parser(prog: str, defaults: Mapping[str, Any]) -> argparse.ArgumentParser:
    def shown(name: str) -> str:
        value = defaults[name]
        return ", ".join(value) if isinstance(value, list) else str(value)

    parser = _ArgumentParser(
        prog=prog,
        description="Evaluate retrieval on a BEIR-layout data set (corpus.jsonl, "
        "queries.jsonl, qrels/<split>.tsv): recall@k, MRR@10, nDCG@10, one row per "
        "configuration; the corpus is indexed (and embedded) once for all of them.",
    )
    parser.add_argument("data", help="the data set directory")
    parser.add_argument("--split", default="test", help="qrels split (default: test)")
    parser.add_argument(
        "--mode",
        action="append",
        choices=get_args(Mode),
        help=f"retriever(s) to evaluate; repeatable (default: {shown('mode')})",
    )
    parser.add_argument(
        "--fusion",
        action="append",
        choices=get_args(Fusion),
        help="hybrid fusion(s): rrf (reciprocal ranks) or weighted (convex combination "
        f"of min-max normalised scores); repeatable (default: {shown('fusion')})",
    )
    parser.add_argument(
        "--group",
        action="append",
        choices=get_args(Group),
        help="hybrid: fuse segments, or documents by their best segment; repeatable "
        f"(default: {shown('group')})",
    )
    parser.add_argument(
        "--segments",
        action=argparse.BooleanOptionalAction,
        help="index the documents split by the default document splitter (the installed "
        "plugin, e.g. ragloom-easy-rag's), as an ingestor would; a document counts at "
        f"its best segment (default: {'on' if defaults['segments'] else 'off'})",
    )
    parser.add_argument(
        "--max-results",
        type=int,
        default=100,
        help="contents per query (default 100, at least 10); recall@k is reported for k up to this",
    )
    parser.add_argument(
        "--candidates",
        type=int,
        help="results of each hybrid leg, at least --max-results "
        f"(default: {defaults['candidates'] or '--max-results'})",
    )
    parser.add_argument(
        "--stemmer",
        default="english",
        help="Snowball language of the BM25 analyzer (default english; none: no stemming)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument(
        "--quiet", action="store_true", help="no progress lines on stderr (errors only)"
    )
    return parser


def _configurations(args: argparse.Namespace, defaults: Mapping[str, Any]) -> list[Configuration]:
    modes = args.mode or defaults["mode"]
    if "hybrid" not in modes and (args.fusion or args.group):
        raise _UsageError("--fusion and --group apply to --mode hybrid; add --mode hybrid")
    configurations = []
    for mode in dict.fromkeys(modes):
        if mode != "hybrid":
            configurations.append(Configuration(mode))
            continue
        for fusion in dict.fromkeys(args.fusion or defaults["fusion"]):
            for group in dict.fromkeys(args.group or defaults["group"]):
                configurations.append(Configuration("hybrid", fusion, group))
    return configurations


def _check(args: argparse.Namespace) -> None:
    if args.max_results < 10:
        raise _UsageError(
            f"--max-results {args.max_results}: give 10 or more (MRR@10 and nDCG@10 "
            "look at ten results)"
        )
    if args.candidates is not None and args.candidates < 1:
        raise _UsageError(f"--candidates {args.candidates}: give 1 or more")


def _since(start: float) -> float:
    return time.perf_counter() - start


def _table(
    dataset: BeirDataset,
    indexes: EvaluationIndexes,
    results: list[tuple[Configuration, EvaluationReport]],
) -> str:
    queries = len(results[0][1].queries)
    indexing = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in indexes.seconds.items())
    lines = [
        f"{dataset.name}: {queries} queries, {len(dataset.corpus)} documents "
        f"({len(indexes.segments)} segments); indexing: {indexing}"
    ]
    names = list(results[0][1].metrics)
    width = max(len("configuration"), *(len(c.name) for c, _ in results))
    lines.append(
        f"{'configuration':<{width}}" + "".join(f"{n:>11}" for n in names) + f"{'query s':>10}"
    )
    for configuration, report in results:
        values = "".join(f"{report.metrics[n]:>11.4f}" for n in names)
        lines.append(f"{configuration.name:<{width}}{values}{report.seconds:>10.2f}")
    return "\n".join(lines)


def _document(
    args: argparse.Namespace,
    dataset: BeirDataset,
    indexes: EvaluationIndexes,
    results: list[tuple[Configuration, EvaluationReport]],
) -> dict[str, Any]:
    return {
        "dataset": dataset.name,
        "settings": {
            "data": args.data,
            "split": args.split,
            "max_results": args.max_results,
            "candidates": max(args.candidates or 0, args.max_results),
            "stemmer": args.stemmer,
            "segments": bool(args.segments),
            "documents": len(dataset.corpus),
            "indexed_segments": len(indexes.segments),
        },
        "indexing_seconds": indexes.seconds,
        "results": [
            {
                **configuration.to_dict(),
                "retriever": report.retriever,
                "metrics": report.metrics,
                "query_seconds": report.seconds,
                "queries": [
                    {"query_id": q.query_id, "retrieved": q.retrieved, "metrics": q.metrics}
                    for q in report.queries
                ],
            }
            for configuration, report in results
        ],
    }


def main(
    argv: Sequence[str] | None = None,
    *,
    prog: str = PROG,
    defaults: Mapping[str, Any] | None = None,
    progress: PhaseProgress | None = None,
) -> int:
    """Evaluate one or more configurations on a BEIR directory; prints a table (or one JSON
    document). ``prog`` names the command in help and errors; ``defaults`` overrides
    option defaults (e.g. ``{"mode": ["hybrid"], "fusion": ["weighted"]}``); ``progress``
    shows the phases (default: :class:`LineProgress` lines on stderr; none with
    ``--quiet``). Returns the exit code: 0, or 2 after a one-line error on stderr."""
    chosen = {**DEFAULTS, **(defaults or {})}
    try:
        args = _parser(prog, chosen).parse_args(argv)
        if args.segments is None:
            args.segments = chosen["segments"]
        if args.candidates is None:
            args.candidates = chosen["candidates"]
        _check(args)
        if args.quiet:
            progress = None
        elif progress is None:
            progress = LineProgress(prefix=prog)
        configurations = _configurations(args, chosen)
        try:
            dataset = load_beir(args.data, args.split)
        except EvaluationDataError as exc:
            raise EvaluationDataError(
                f"{exc}; `{prog} DIR` needs a BEIR-layout data set: DIR/corpus.jsonl, "
                f"DIR/queries.jsonl and DIR/qrels/{args.split}.tsv"
            ) from exc
        splitter = (
            cast(DocumentSplitter, plugins.load_default(plugins.DOCUMENT_SPLITTERS))
            if args.segments
            else None
        )
        indexes = build_indexes(
            dataset,
            dense=any(c.mode != "keyword" for c in configurations),
            stemmer=None if args.stemmer.lower() == "none" else args.stemmer,
            document_splitter=splitter,
            on_progress=progress,
        )
        k_values = [k for k in K_VALUES if k <= args.max_results]
        results = compare(
            dataset,
            indexes,
            configurations,
            max_results=args.max_results,
            candidates=args.candidates,
            k_values=k_values,
            on_progress=progress,
        )
    except SystemExit as exit:  # --help
        return int(exit.code or 0)
    except (_UsageError, RagloomError, OSError) as exc:
        print(f"{prog}: {exc}".replace("\n", " "), file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(_document(args, dataset, indexes, results), indent=2))
    else:
        print(_table(dataset, indexes, results))
    return 0
