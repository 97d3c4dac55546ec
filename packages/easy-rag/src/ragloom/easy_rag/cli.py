"""The ``ragloom`` command line: ingest, query, ask, plugins.

Exit codes: 0 success; 1 some files could not be ingested (the others were); 2 usage
error; 3 missing or unusable index; 4 nothing to ingest (empty directory).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, cast

from ragloom.core import (
    BM25ContentRetriever,
    Content,
    ContentRetriever,
    EmbeddingModel,
    EmbeddingStoreContentRetriever,
    EmbeddingStoreIngestor,
    HybridContentRetriever,
    Query,
    RagloomError,
    parse_filter,
    plugins,
)
from ragloom.easy_rag.assistant import create_assistant
from ragloom.easy_rag.extractive import describe_source
from ragloom.easy_rag.index import RagIndex, RagIndexError

EXIT_PARTIAL, EXIT_USAGE, EXIT_INDEX, EXIT_EMPTY = 1, 2, 3, 4
DEFAULT_INDEX = ".ragloom-index"


def _model() -> EmbeddingModel:
    return cast(EmbeddingModel, plugins.load_default(plugins.EMBEDDING_MODELS))


def _model_name(model: EmbeddingModel) -> str:
    return f"{type(model).__module__}.{type(model).__qualname__}"


def _content_dict(content: Content) -> dict[str, Any]:
    meta = content.text_segment.metadata
    return {
        "text": content.text,
        "score": content.score,
        "source": meta.get("file_name"),
        "path": meta.get("absolute_directory_path"),
        "start": meta.get("start"),
        "end": meta.get("end"),
        "index": meta.get("index"),
    }


def _print_contents(contents: Sequence[Content]) -> None:
    for number, content in enumerate(contents, 1):
        print(f"[{number}] {describe_source(content)}")
        print("    " + content.text.strip().replace("\n", "\n    "))


def cmd_ingest(args: argparse.Namespace) -> int:
    model = _model()
    index = RagIndex.open_or_create(args.index, _model_name(model))
    from tqdm import tqdm

    bar = tqdm(desc="embedding", unit="segment", disable=args.json or not sys.stderr.isatty())

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    ingestor = EmbeddingStoreIngestor(index.mirrored, model, on_progress=progress)
    report = index.ingest(args.paths, ingestor, include=args.glob, exclude=args.exclude)
    bar.close()
    for hint in report.install_hints():
        print(f"ragloom: {hint}", file=sys.stderr)
    if not (
        report.added or report.updated or report.unchanged or report.removed or report.failures
    ):
        print(
            f"ragloom: nothing to ingest in {', '.join(args.paths)} (hidden, git-ignored and "
            "unsupported files are skipped; see --glob/--exclude)",
            file=sys.stderr,
        )
        return EXIT_EMPTY
    index.save()
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(
            f"ingested into {args.index}: {len(report.added)} added, {len(report.updated)} "
            f"updated, {len(report.unchanged)} unchanged, {len(report.removed)} removed, "
            f"{len(report.failures)} failed, {len(report.unsupported)} unsupported; "
            f"{report.segments} segments written"
        )
        for failure in report.failures:
            print(f"  failed: {failure}", file=sys.stderr)
    return EXIT_PARTIAL if report.failures else 0


def _retriever(args: argparse.Namespace) -> ContentRetriever:
    """The retriever of ``--mode``: dense, keyword (BM25) or hybrid (RRF of both)."""
    index = RagIndex.open(args.index)
    filter = parse_filter(args.filter) if args.filter else None
    keyword = BM25ContentRetriever(index.keywords, max_results=args.k, filter=filter)
    if args.mode == "keyword":
        return keyword
    dense = EmbeddingStoreContentRetriever(
        index.store, _model(), max_results=args.k, min_score=args.min_score, filter=filter
    )
    if args.mode == "dense":
        return dense
    return HybridContentRetriever(dense, keyword, max_results=args.k)


def cmd_query(args: argparse.Namespace) -> int:
    contents = _retriever(args).retrieve(Query(args.text))
    if args.json:
        print(json.dumps([_content_dict(c) for c in contents], indent=2))
    elif not contents:
        print("no matching passage")
    else:
        _print_contents(contents)
    return 0


def cmd_ask(args: argparse.Namespace) -> int:
    assistant = create_assistant(_retriever(args))
    questions = [args.question] if args.question else None
    if questions is None:
        print("ragloom chat: ask about your documents (empty line or Ctrl-D to quit)")
    while True:
        if questions is not None:
            if not questions:
                return 0
            question = questions.pop()
        else:
            try:
                question = input("> ").strip()
            except EOFError:
                return 0
            if not question:
                return 0
        result = assistant.chat(question)
        if args.json:
            payload = {
                "answer": result.content,
                "sources": [_content_dict(c) for c in result.sources],
            }
            print(json.dumps(payload, indent=2))
            continue
        print(result.content)
        if result.sources:
            print("\nSources:")
            for number, content in enumerate(result.sources, 1):
                print(f"  [{number}] {describe_source(content)}")


def cmd_plugins(args: argparse.Namespace) -> int:
    groups = [
        plugins.DOCUMENT_PARSERS,
        plugins.DOCUMENT_SPLITTERS,
        plugins.EMBEDDING_MODELS,
        plugins.CHAT_MODELS,
        plugins.SCORING_MODELS,
    ]
    table = {
        group: [
            {"name": ep.name, "distribution": ep.dist.name if ep.dist else None, "value": ep.value}
            for ep in plugins.providers(group)
        ]
        for group in groups
    }
    if args.json:
        print(json.dumps(table, indent=2))
        return 0
    for group, providers in table.items():
        print(f"{group}  (choose with {plugins.env_var(group)}=<name>)")
        if not providers:
            print("  (none installed)")
        for provider in providers:
            print(f"  {provider['name']:<24} {provider['distribution']:<28} {provider['value']}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragloom", description="Easy RAG over your documents.")
    commands = parser.add_subparsers(dest="command", required=True)

    def with_index(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--index", default=DEFAULT_INDEX, help="index directory")
        sub.add_argument("--json", action="store_true", help="machine-readable output")

    ingest = commands.add_parser("ingest", help="add, update and remove files in an index")
    ingest.add_argument(
        "paths",
        nargs="+",
        help="files or directories (recursive; hidden, git-ignored, node_modules and "
        "virtualenv files skipped)",
    )
    ingest.add_argument(
        "--glob",
        action="append",
        default=[],
        metavar="PATTERN",
        help="read only files matching this gitignore-style pattern (e.g. '*.md'; repeatable)",
    )
    ingest.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="PATTERN",
        help="skip files and folders matching this pattern (e.g. 'drafts/'; repeatable)",
    )
    with_index(ingest)
    ingest.set_defaults(run=cmd_ingest)

    for name, helptext in (
        ("query", "show the most relevant passages"),
        ("ask", "answer with sources"),
    ):
        sub = commands.add_parser(name, help=helptext)
        if name == "query":
            sub.add_argument("text")
        else:
            sub.add_argument("question", nargs="?", help="omit for an interactive chat")
        sub.add_argument("-k", type=int, default=3, help="number of passages (default 3)")
        sub.add_argument(
            "--mode",
            choices=("hybrid", "dense", "keyword"),
            default="hybrid",
            help="retrieval: hybrid (default; RRF of dense and BM25), dense or keyword",
        )
        sub.add_argument(
            "--min-score", type=float, default=0.0, help="minimum dense score (dense mode)"
        )
        sub.add_argument("--filter", help="metadata filter, e.g. \"file_name == 'faq.md'\"")
        with_index(sub)
        sub.set_defaults(run=cmd_query if name == "query" else cmd_ask)

    evaluation = commands.add_parser(
        "eval",
        help="recall@k, MRR@10, nDCG@10 of dense/keyword/hybrid retrieval on BEIR-layout data",
        add_help=False,
    )
    evaluation.add_argument("args", nargs=argparse.REMAINDER, help="see `ragloom eval --help`")

    plugin_cmd = commands.add_parser("plugins", help="installed integrations and defaults")
    plugin_cmd.add_argument("--json", action="store_true")
    plugin_cmd.set_defaults(run=cmd_plugins)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["eval"]:  # its own parser, --help included
        from ragloom.core.evaluation.cli import main as evaluation_main

        return evaluation_main(arguments[1:])
    args = build_parser().parse_args(arguments)
    try:
        return int(args.run(args))
    except RagIndexError as exc:
        print(f"ragloom: {exc}", file=sys.stderr)
        return EXIT_INDEX
    except RagloomError as exc:
        print(f"ragloom: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
