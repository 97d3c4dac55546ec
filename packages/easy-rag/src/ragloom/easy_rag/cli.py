"""The ``ragloom`` command line: ingest, query, ask, eval, plugins.

Every error is one line on stderr naming the problem and the fix, never a traceback
(``RAGLOOM_DEBUG=1`` shows it for an internal error). The exit codes are
:data:`EXIT_CODES`, listed by ``ragloom --help``: 2 is argparse's, for what a command
line can get wrong; a failure while running (a chat model that fails or is cut at
``--timeout``, files that cannot be ingested) is 1.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn, cast

from ragloom.core import (
    BM25ContentRetriever,
    Content,
    ContentRetriever,
    EmbeddingModel,
    EmbeddingStoreContentRetriever,
    EmbeddingStoreIngestor,
    InvalidFilterError,
    Query,
    RagAssistant,
    RagIndexError,
    RagloomError,
    Result,
    parse_filter,
    plugins,
)
from ragloom.core.loaders.file_system import readable_name
from ragloom.core.progress import phase
from ragloom.easy_rag.assistant import create_assistant
from ragloom.easy_rag.defaults import (
    EVAL_DEFAULTS,
    RETRIEVAL_MODE,
    index_hybrid_retriever,
)
from ragloom.easy_rag.extractive import ExtractiveAssistant, describe_source
from ragloom.easy_rag.index import DEFAULT_LOCK_WAIT, IngestReport, RagIndex
from ragloom.easy_rag.plugin_status import format_status, plugin_status
from ragloom.easy_rag.progress import BarProgress, say, terminal_progress
from ragloom.easy_rag.store_config import (
    MARKER,
    MEMORY,
    Fields,
    StoreConfigError,
    check_store,
    open_index,
    recorded_store,
)
from ragloom.easy_rag.streaming import DEFAULT_TIMEOUT, AnswerTimeoutError, stream_answer

__all__ = [
    "DEFAULT_INDEX",
    "STORE_ENV",
    "STORE_OPTIONS_ENV",
    "UsageError",
    "EXIT_CODES",
    "SHOWN_WARNINGS",
    "cmd_ingest",
    "SCALES",
    "cmd_query",
    "cmd_ask",
    "cmd_plugins",
    "build_parser",
    "EVAL_DEFAULTS",
    "main",
]

EXIT_FAILURE, EXIT_USAGE, EXIT_INDEX, EXIT_EMPTY, EXIT_IO = 1, 2, 3, 4, 5
EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 70, 130, 141

#: Every exit code of ``ragloom`` and its meaning: the one list, shown by ``ragloom
#: --help`` (the package README quotes it; a test holds them equal).
EXIT_CODES: dict[int, str] = {
    0: "success (files with no text, such as empty files and images, are skipped and "
    "counted, not failures)",
    EXIT_FAILURE: "a failure while running: some files could not be ingested (the others "
    "were), the chat model failed or its answer was cut at --timeout, a plugin check "
    "failed, the server's settings were refused",
    EXIT_USAGE: "usage error: bad arguments or --filter text, a path to ingest that does "
    "not exist, an unknown command, a store kind or option that cannot be used or an index "
    "built with another store (ragloom eval: also an unusable data set)",
    EXIT_INDEX: "missing, unreadable or busy index (e.g. --index names a file, another "
    "ingest holds it)",
    EXIT_EMPTY: "nothing to ingest",
    EXIT_IO: "a file or directory cannot be read or written",
    EXIT_INTERNAL: "internal error (a bug; RAGLOOM_DEBUG=1 shows the traceback)",
    EXIT_INTERRUPTED: "interrupted",
    EXIT_BROKEN_PIPE: "the output was closed (e.g. by head), quietly; ingest saves its work "
    "first and keeps its own code",
}
DEFAULT_INDEX = ".ragloom-index"
#: The store kind (``--store``) and its options (``--store-option``, a JSON object) from
#: the environment; the flags win. The options from the environment say where a store is,
#: so an in-memory index ignores them (silently: there is no --verbose to say so).
STORE_ENV, STORE_OPTIONS_ENV = "RAGLOOM_STORE", "RAGLOOM_STORE_OPTIONS"


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


class UsageError(RagloomError):
    """A bad command line, found before any expensive work (:data:`EXIT_USAGE`)."""


def _check_index_argument(path: str) -> None:
    if Path(path).exists() and not Path(path).is_dir():
        raise RagIndexError(
            f"--index {path} is a file, not an index directory; pass a directory "
            f"(default {DEFAULT_INDEX})"
        )


def _store_option(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` (``--store-option``): VALUE as JSON when it parses, else the text."""
    key, equals, value = text.partition("=")
    if not equals or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: give KEY=VALUE, e.g. collection=docs")
    try:
        parsed: Any = json.loads(value)
    except ValueError:
        parsed = value
    return key.strip(), parsed


def _environment_options() -> dict[str, Any]:
    text = os.environ.get(STORE_OPTIONS_ENV, "")
    if not text.strip():
        return {}
    try:
        options = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{STORE_OPTIONS_ENV}: not JSON ({exc}); give a JSON object") from None
    if not isinstance(options, dict):
        raise UsageError(f"{STORE_OPTIONS_ENV}: give a JSON object, not {type(options).__name__}")
    return options


def _configured_store(args: argparse.Namespace) -> tuple[str, dict[str, Any], Fields]:
    """The store kind and options given for ``--index`` (the flags over the environment;
    without a kind, the one the directory remembers, else memory), and how the messages
    name them. :data:`STORE_OPTIONS_ENV` applies only to another store than memory: a
    shell that exports where its pgvector is must not break its in-memory indexes, while
    ``--store-option`` on one stays a usage error."""
    flagged = dict(args.store_option)
    given = args.store or os.environ.get(STORE_ENV, "").strip() or None
    recorded = recorded_store(Path(args.index))
    kind = given or (recorded.kind if recorded is not None else MEMORY)
    options = {**({} if kind == MEMORY else _environment_options()), **flagged}
    marker = Path(args.index) / MARKER
    fields = Fields(
        kind="--store" if args.store else STORE_ENV if given else f"the kind in {marker}",
        options="--store-option"
        if flagged
        else STORE_OPTIONS_ENV
        if options
        else f"--store-option (or {STORE_OPTIONS_ENV})",
    )
    return kind, options, fields


#: At most this many warnings are printed after an ingest (``--json`` lists them all).
SHOWN_WARNINGS = 10


def _warning_lines(report: IngestReport) -> list[str]:
    unique = list(dict.fromkeys(report.warnings))
    lines = []
    for source, text in unique[:SHOWN_WARNINGS]:
        name = Path(source).name
        where = f"{name}: " if source and name not in text else ""  # never the name twice
        lines.append(readable_name(f"  warning: {where}{text}"))
    if len(unique) > SHOWN_WARNINGS:
        lines.append(
            f"  ... and {len(unique) - SHOWN_WARNINGS} more warnings (--json lists them all)"
        )
    return lines


def _ingest_locked(args: argparse.Namespace, model: EmbeddingModel) -> IngestReport | None:
    """Open, ingest and save the index (under its lock); ``None`` when nothing to ingest."""
    kind, options, fields = _configured_store(args)
    index = open_index(
        Path(args.index), kind, options, model.dimension, model=_model_name(model), fields=fields
    )
    try:
        return _ingest_into(index, args, model)
    finally:
        index.close()


def _ingest_into(
    index: RagIndex, args: argparse.Namespace, model: EmbeddingModel
) -> IngestReport | None:
    with terminal_progress(args.quiet) as progress:
        ingestor = EmbeddingStoreIngestor(
            index.mirrored,
            model,
            on_split=phase(progress, "splitting"),
            on_progress=phase(progress, "embedding"),
        )
        report = index.ingest(
            args.paths,
            ingestor,
            include=args.glob,
            exclude=args.exclude,
            on_progress=phase(progress, "reading"),
        )
    if not (
        report.added
        or report.updated
        or report.unchanged
        or report.removed
        or report.failures
        or report.skipped
    ):
        for hint in report.install_hints():
            say(f"ragloom: {hint}", sys.stderr)
        say(
            f"ragloom: nothing to ingest in {', '.join(args.paths)} (hidden, git-ignored and "
            "unsupported files are skipped; see --glob/--exclude)",
            sys.stderr,
        )
        return None
    index.save()  # before any output: a closed pipe must not lose what was embedded
    return report


def cmd_ingest(args: argparse.Namespace) -> int:
    _check_index_argument(args.index)
    for path in args.paths:
        if not os.path.exists(path):
            raise UsageError(f"{path}: no such file or directory; give files or folders to ingest")
    model = _model()
    with RagIndex.locked(args.index, wait=args.wait):  # a second writer waits, then "in use"
        report = _ingest_locked(args, model)
    if report is None:
        return EXIT_EMPTY
    # The index is saved: the exit code reports the ingest even when the reader of its
    # output has gone (``| head -1``), and output stops quietly at a closed pipe.
    code = EXIT_FAILURE if report.failures else 0
    for hint in report.install_hints():
        say(f"ragloom: {hint}", sys.stderr)
    if args.json:
        say(json.dumps(report.to_dict(), indent=2))
        return code
    summary = (
        f"ingested into {args.index}: {len(report.added)} added, {len(report.updated)} "
        f"updated, {len(report.unchanged)} unchanged, {len(report.removed)} removed, "
        f"{len(report.failures)} failed, {len(report.skipped)} skipped (no text), "
        f"{len(report.unsupported)} unsupported; {report.segments} segments written"
    )
    if not say(summary):
        return code
    lines = [readable_name(f"  failed: {failure}") for failure in report.failures]
    lines += [readable_name(f"  skipped: {skip}") for skip in report.skipped]
    for line in lines + _warning_lines(report):
        if not say(line, sys.stderr):
            break
    return code


#: The score each --mode shows (and --min-score compares against).
SCALES = {
    "hybrid": "fused score, 0-1: 1 = first in both dense and keyword results",
    "dense": "cosine relevance, 0-1",
    "keyword": "BM25, unbounded (higher is better; --min-score not accepted)",
}


def _check_min_score(args: argparse.Namespace) -> None:
    if args.mode == "keyword" and args.min_score:
        raise UsageError(
            "--min-score does not apply to --mode keyword (BM25 scores are unbounded); "
            "use --mode dense or hybrid (scores 0-1), or drop --min-score"
        )
    if not 0.0 <= args.min_score <= 1.0:
        raise UsageError(f"--min-score {args.min_score} is outside 0-1, the {args.mode} scale")


def _open_for_mode(args: argparse.Namespace) -> tuple[RagIndex, EmbeddingModel | None]:
    """The index of ``--index`` over its store, and the model ``--mode`` needs: keyword
    retrieval reads only the directory's BM25 index (no model, no store connection)."""
    _check_min_score(args)
    _check_index_argument(args.index)
    kind, options, fields = _configured_store(args)
    if args.mode == "keyword":
        check_store(Path(args.index), kind, fields=fields)
        return RagIndex.open(args.index), None
    model = _model()
    return open_index(Path(args.index), kind, options, model.dimension, fields=fields), model


def _retriever(
    args: argparse.Namespace, index: RagIndex, model: EmbeddingModel | None
) -> ContentRetriever:
    """The retriever of ``--mode``: dense, keyword (BM25) or hybrid (both fused)."""
    filter = parse_filter(args.filter) if args.filter else None
    if model is None:
        return BM25ContentRetriever(index.keywords, max_results=args.k, filter=filter)
    if args.mode == "dense":
        return EmbeddingStoreContentRetriever(
            index.store, model, max_results=args.k, min_score=args.min_score, filter=filter
        )
    return index_hybrid_retriever(
        index.store, index.keywords, model, args.k, min_score=args.min_score, filter=filter
    )


def cmd_query(args: argparse.Namespace) -> int:
    index, model = _open_for_mode(args)
    try:
        contents = _retriever(args, index, model).retrieve(Query(args.text))
    finally:
        index.close()
    if args.json:
        print(json.dumps([_content_dict(c) for c in contents], indent=2))
    elif not contents:
        print("no matching passage")
    else:
        print(f"(scores: {SCALES[args.mode]})")
        _print_contents(contents)
    return 0


def _model_answer(assistant: RagAssistant, question: str, args: argparse.Namespace) -> Result:
    """The chat model's answer under ``--timeout`` (a deadline for the whole answer), its
    words printed as they come (unless ``--json``), a note on stderr while the model has
    not started. An answer cut at the deadline keeps its printed words and ends their
    line; the error then says where it was cut."""

    def show(text: str) -> None:
        if not args.json:
            sys.stdout.write(text)
            sys.stdout.flush()

    def note() -> None:
        print("ragloom: waiting for the chat model...", file=sys.stderr, flush=True)

    try:
        result = stream_answer(
            assistant, question, timeout=args.timeout, on_text=show, on_wait=note
        )
    except AnswerTimeoutError as exc:
        if exc.partial and not args.json:
            print(flush=True)  # the cut answer's line ends before the error
        raise
    if not args.json:
        print()
    return result


def cmd_ask(args: argparse.Namespace) -> int:
    index, model = _open_for_mode(args)
    try:
        return _chat(create_assistant(_retriever(args, index, model)), args)
    finally:
        index.close()


def _chat(assistant: RagAssistant | ExtractiveAssistant, args: argparse.Namespace) -> int:
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
        if isinstance(assistant, RagAssistant):
            result = _model_answer(assistant, question, args)
        else:
            result = assistant.chat(question)
            if not args.json:
                print(result.content)
        if args.json:
            payload = {
                "answer": result.content,
                "sources": [_content_dict(c) for c in result.sources],
            }
            print(json.dumps(payload, indent=2))
            continue
        if result.sources:
            print("\nSources:")
            for number, content in enumerate(result.sources, 1):
                print(f"  [{number}] {describe_source(content)}")


def cmd_plugins(args: argparse.Namespace) -> int:
    """List the providers of each kind, ``*`` on the active ones; ``--check`` loads each."""
    groups = plugin_status(check=args.check)
    if args.json:
        print(json.dumps({g.group: g.to_dict() for g in groups}, indent=2))
    else:
        print(format_status(groups))
    failed = [g.group for g in groups if g.failed]
    if failed and args.check:
        print(f"ragloom: plugin problems in {', '.join(failed)}", file=sys.stderr)
        return EXIT_FAILURE
    return 0


class _ArgumentParser(argparse.ArgumentParser):
    """argparse with one-line errors that point at ``--help``."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def _seconds(text: str) -> float:
    """A finite number of seconds >= 0 (``--wait``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0.0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text} seconds: give a finite number >= 0")
    return value


def _positive_seconds(text: str) -> float:
    """A finite number of seconds > 0 (``--timeout``)."""
    value = _seconds(text)
    if value == 0:
        raise argparse.ArgumentTypeError("0 seconds: give a number > 0")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is too small: give 1 or more")
    return value


def build_parser() -> argparse.ArgumentParser:
    codes = "\n".join(
        textwrap.fill(meaning, 79, initial_indent=f"  {code:>3}  ", subsequent_indent=" " * 7)
        for code, meaning in EXIT_CODES.items()
    )
    parser = _ArgumentParser(
        prog="ragloom",
        description="Easy RAG over your documents.",
        epilog=f"exit codes:\n{codes}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)

    def with_index(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--index", default=DEFAULT_INDEX, help=f"index directory (default {DEFAULT_INDEX})"
        )
        sub.add_argument("--json", action="store_true", help="machine-readable output")
        sub.add_argument(
            "--store",
            metavar="KIND",
            help="keep the vectors in this installed store (pgvector, qdrant, milvus; see "
            f"`ragloom plugins`) instead of memory; or {STORE_ENV}. The index directory "
            "remembers it: later commands may omit it, another kind is refused",
        )
        sub.add_argument(
            "--store-option",
            type=_store_option,
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="a keyword argument of the store, VALUE as JSON when it parses, else text "
            "(repeatable: --store-option connection=postgresql://user@host/db --store-option "
            f"collection=docs); or {STORE_OPTIONS_ENV} as a JSON object (ignored by an "
            "in-memory index). The directory remembers only the names of its data "
            "(collection, table, ...): give where the store is each time",
        )

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
    ingest.add_argument(
        "--quiet",
        action="store_true",
        help="no progress on stderr (a bar on a terminal, else a line every few seconds)",
    )
    ingest.add_argument(
        "--wait",
        type=_seconds,
        default=DEFAULT_LOCK_WAIT,
        metavar="SECONDS",
        help="while another ingest holds the index, wait up to this long for it, then "
        f"fail with 'index in use' (default {DEFAULT_LOCK_WAIT:g}; queue scripted runs)",
    )
    with_index(ingest)
    ingest.set_defaults(run=cmd_ingest)

    for name, helptext in (
        ("query", "show the most relevant passages"),
        ("ask", "answer with sources"),
    ):
        sub = commands.add_parser(name, help=helptext)
        if name == "query":
            sub.add_argument("text", help="what to look for, in your own words")
        else:
            sub.add_argument("question", nargs="?", help="omit for an interactive chat")
        sub.add_argument("-k", type=_positive_int, default=3, help="number of passages (default 3)")
        sub.add_argument(
            "--mode",
            choices=("hybrid", "dense", "keyword"),
            default=RETRIEVAL_MODE,
            help="retrieval: hybrid (default; dense and BM25 fused), dense or keyword",
        )
        sub.add_argument(
            "--min-score",
            type=float,
            default=0.0,
            help="drop passages scoring less, 0-1 (hybrid: fused score, 1 = first in "
            "both lists; dense: cosine relevance; refused in keyword mode)",
        )
        sub.add_argument("--filter", help="metadata filter, e.g. \"file_name == 'faq.md'\"")
        if name == "ask":
            sub.add_argument(
                "--timeout",
                type=_positive_seconds,
                default=DEFAULT_TIMEOUT,
                metavar="SECONDS",
                help="give the chat model this long for a whole answer, from the question "
                "to the last word, then cut it and fail (default "
                f"{DEFAULT_TIMEOUT:g}; its words are shown as they come, and stay)",
            )
        with_index(sub)
        sub.set_defaults(run=cmd_query if name == "query" else cmd_ask)

    evaluation = commands.add_parser(
        "eval",
        help="recall@k, MRR@10, nDCG@10 of Easy RAG's retrieval (or others) on BEIR-layout data",
        add_help=False,
    )
    evaluation.add_argument("args", nargs=argparse.REMAINDER, help="see `ragloom eval --help`")

    plugin_cmd = commands.add_parser("plugins", help="installed integrations and defaults")
    plugin_cmd.add_argument("--json", action="store_true", help="machine-readable output")
    plugin_cmd.add_argument(
        "--check",
        action="store_true",
        help="import and build every provider and report failures (exit 1 if any is broken)",
    )
    plugin_cmd.set_defaults(run=cmd_plugins)
    _add_command_plugins(commands)
    return parser


#: Subcommands other distributions add: each entry point is ``register(subparsers)``.
COMMAND_PLUGINS = "ragloom.cli_commands"
#: Known subcommands of optional distributions: without them, a one-line install hint.
OPTIONAL_COMMANDS = {"serve": "ragloom-server", "mcp": "ragloom-server"}


def _add_command_plugins(commands: Any) -> None:
    registered = set()
    for entry in importlib.metadata.entry_points(group=COMMAND_PLUGINS):
        try:
            entry.load()(commands)
        except Exception as exc:  # a broken plugin must not break the other commands
            print(f"ragloom: command {entry.name!r} unavailable: {exc}", file=sys.stderr)
            continue
        registered.add(entry.name)
    for name, dist in OPTIONAL_COMMANDS.items():
        if name not in registered:
            sub = commands.add_parser(name, help=f"needs {dist}", add_help=False)
            sub.add_argument("args", nargs=argparse.REMAINDER)
            sub.set_defaults(run=lambda _, name=name, dist=dist: _missing_command(name, dist))


def _missing_command(name: str, dist: str) -> int:
    raise UsageError(f"`ragloom {name}` needs {dist}: pip install {dist}")


def _evaluate(arguments: list[str]) -> int:
    """``ragloom eval``: core's evaluation command with Easy RAG's defaults."""
    from ragloom.core.evaluation.cli import main as evaluation_main

    if not sys.stderr.isatty():  # core's default: progress lines on stderr
        return evaluation_main(arguments, prog="ragloom eval", defaults=EVAL_DEFAULTS)
    bar = BarProgress()
    try:
        return evaluation_main(arguments, prog="ragloom eval", defaults=EVAL_DEFAULTS, progress=bar)
    finally:
        bar.close()


def _run(arguments: list[str]) -> int:
    if arguments[:1] == ["eval"]:
        return _evaluate(arguments[1:])
    try:
        args = build_parser().parse_args(arguments)
    except SystemExit as exit:  # argparse: --help, or the one-line usage error
        return int(exit.code or 0)
    return int(args.run(args))


def _fail(message: str, code: int) -> int:
    print("ragloom: " + message.replace("\n", " "), file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; errors become one line on stderr and an exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        code = _run(arguments)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except BrokenPipeError:
        # Python's advice: point stdout at devnull so the exit flush stays quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        return _fail("interrupted", EXIT_INTERRUPTED)
    except RagIndexError as exc:
        return _fail(str(exc), EXIT_INDEX)
    except (UsageError, InvalidFilterError, StoreConfigError) as exc:  # the caller's mistakes
        return _fail(str(exc), EXIT_USAGE)
    except RagloomError as exc:
        return _fail(str(exc), EXIT_FAILURE)
    except OSError as exc:
        return _fail(f"{exc}; check the path and its permissions", EXIT_IO)
    except Exception as exc:
        if os.environ.get("RAGLOOM_DEBUG"):
            raise
        return _fail(
            f"internal error: {type(exc).__name__}: {exc} (a bug: please report it; "
            "RAGLOOM_DEBUG=1 shows the traceback)",
            EXIT_INTERNAL,
        )


if __name__ == "__main__":
    sys.exit(main())
