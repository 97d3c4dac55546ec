"""Create a new integration package from scripts/templates/ (see docs/contributing.md).

    python scripts/new_package.py --kind store --name qdrant --client qdrant-client

writes packages/store-qdrant/ (pyproject, README, src/ragloom/stores/qdrant/ with a
skeleton whose methods raise ``NotImplementedError("implement me: ...")``, a conformance
test subclassing the testkit suite) and, for kinds that talk to a server, the service
script scripts/services/qdrant.sh. ``--in-process`` (stores) is for an engine that runs
inside the Python process (a file or a directory, no server): no service script, and a
conformance test that builds each store in its own temporary directory, so it passes
unchanged once the skeleton is filled in. The naming rule, applied here and nowhere else:

    packages/<kind>-<name>  ->  distribution ragloom-<kind>-<name>
                            ->  import path ragloom.<kind>s.<name with - as _>
                            ->  tests/test_<name with - as _>_conformance.py
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TEMPLATES = Path(__file__).resolve().parent / "templates"
NAME_PATTERN = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
MAX_NAME = 24  # the generated code stays within the 100-column limit up to this length
CLIENT_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._\-\[\],<>=!~ ]*")
PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


@dataclass(frozen=True)
class Kind:
    """What the generator needs to know about one kind of integration."""

    namespace: str  # the import path is ragloom.<namespace>.<name>
    class_suffix: str  # the main class is <Name><class_suffix>
    summary: str  # README and description: "<summary> on <name>"
    suites: str  # the testkit suites its conformance test runs ("" if none exists yet)
    server: bool  # talks to a server: integration tests and a scripts/services/ script
    group: str  # its entry-point group in ragloom.core.plugins
    factory: str = ""  # appended to the class in the entry point (e.g. ".from_env")


KINDS: dict[str, Kind] = {
    "store": Kind(
        "stores",
        "EmbeddingStore",
        "EmbeddingStore",
        "EmbeddingStoreSuite, EmbeddingStoreFilterSuite",
        server=True,
        group="ragloom.embedding_stores",
    ),
    "loader": Kind(
        "loaders",
        "DocumentLoader",
        "DocumentLoader",
        "DocumentLoaderSuite",
        server=True,
        group="ragloom.document_loaders",
    ),
    "retriever": Kind(
        "retrievers",
        "ContentRetriever",
        "ContentRetriever",
        "ContentRetrieverSuite",
        server=True,
        group="ragloom.content_retrievers",
    ),
    "parser": Kind(
        "parsers",
        "DocumentParser",
        "DocumentParser",
        "DocumentParserSuite",
        server=False,
        group="ragloom.document_parsers",
    ),
    "scoring": Kind(
        "scoring_models",
        "ScoringModel",
        "ScoringModel (re-ranking)",
        "",
        server=True,
        group="ragloom.scoring_models",
        factory=".from_env",
    ),
    "embedding": Kind(
        "embeddings",
        "EmbeddingModel",
        "EmbeddingModel",
        "EmbeddingModelSuite",
        server=False,
        group="ragloom.embedding_models",
    ),
    "chat": Kind(
        "chat_models",
        "ChatModel",
        "ChatModel",
        "ChatModelSuite",
        server=False,
        group="ragloom.chat_models",
    ),
    "transformer": Kind(
        "transformers",
        "DocumentTransformer",
        "DocumentTransformer",
        "",
        server=False,
        group="ragloom.document_transformers",
    ),
}


class GeneratorError(Exception):
    """Bad arguments or an existing target; the message says which and why."""


def check_name(name: str) -> str:
    """``name`` if it is short, lowercase ``[a-z0-9-]``, starting with a letter, no ``--``."""
    if not NAME_PATTERN.fullmatch(name) or len(name) > MAX_NAME:
        raise GeneratorError(
            f"--name {name!r}: use up to {MAX_NAME} lowercase letters, digits and single "
            "hyphens, starting with a letter (e.g. qdrant, azure-blob)"
        )
    return name


def check_client(client: str) -> str:
    """``client`` if it looks like one requirement specifier (``qdrant-client>=1.12``)."""
    if not CLIENT_PATTERN.fullmatch(client):
        raise GeneratorError(
            f"--client {client!r}: give one PyPI requirement, e.g. qdrant-client or "
            "'qdrant-client>=1.12'"
        )
    return client


def port_for(name: str) -> int:
    """A stable test port in [20000, 32000) for the service of ``name`` (below Linux's
    ephemeral ports, where clients' own ports come from)."""
    return 20000 + zlib.crc32(name.encode()) % 12000


ENV_SCRIPT = Path("scripts") / "services" / "env.sh"


def env_lines(root: Path, name: str, env_prefix: str, port: int) -> str:
    """scripts/services/env.sh with the service's port and URL added (the one definition
    the service script and the tests read)."""
    path = root / ENV_SCRIPT
    if not path.is_file():
        raise GeneratorError(f"{path} not found: --root must be the repository root")
    text = path.read_text()
    if f"export {env_prefix}_PORT=" in text:
        raise GeneratorError(f"{ENV_SCRIPT} already defines {env_prefix}_PORT")
    return text + (
        f"\n# {name} (scripts/services/{name}.sh)\n"
        f"export {env_prefix}_PORT=${{{env_prefix}_PORT:-{port}}}\n"
        f"export {env_prefix}_URL=${{{env_prefix}_URL:-http://127.0.0.1:${env_prefix}_PORT}}\n"
    )


def render(template: str, values: dict[str, str]) -> str:
    """Replace each ``{{key}}`` in the template file with ``values[key]``."""
    text = (TEMPLATES / template).read_text()

    def value(match: re.Match[str]) -> str:
        if match[1] not in values:
            raise KeyError(f"{template}: unknown placeholder {{{{{match[1]}}}}}")
        return values[match[1]]

    return PLACEHOLDER.sub(value, text)


#: The kinds with an in-process variant (``--in-process``), and its templates' prefix.
IN_PROCESS = {"store": "in_process_"}


def plan(
    kind_name: str,
    name: str,
    client: str | None,
    service: bool,
    root: Path,
    *,
    in_process: bool = False,
) -> dict[Path, str]:
    """Every file to write, relative path -> content, for one new package."""
    kind = KINDS[kind_name]
    if in_process and kind_name not in IN_PROCESS:
        raise GeneratorError(
            f"--in-process: only for --kind {', '.join(IN_PROCESS)}, not {kind_name} "
            "(--no-service leaves out a service script)"
        )
    if in_process:  # no server: no service script, fixture or README section for one
        kind = dataclasses.replace(kind, server=False)
    variant = IN_PROCESS[kind_name] if in_process else ""
    module = name.replace("-", "_")
    namespace = kind.namespace
    cls_base = "".join(part.capitalize() for part in name.split("-"))
    port = port_for(name)
    with_service = kind.server and service
    env_url = f"RAGLOOM_{module.upper()}_URL"
    dependencies = ['"ragloom-core"'] + ([f'"{client}"'] if client else [])
    target = f"ragloom.{namespace}.{module}:{cls_base}{kind.class_suffix}{kind.factory}"
    entry_points = f'\n[project.entry-points."{kind.group}"]\n{name} = "{target}"\n'
    values = {
        "name": name,
        "module": module,
        "namespace": namespace,
        "kind": kind_name,
        "cls_base": cls_base,
        "cls": cls_base + kind.class_suffix,
        "dist": f"ragloom-{kind_name}-{name}",
        "summary": f"{kind.summary} on {name}",
        "client": client or "its client library",
        "dependencies": ", ".join(dependencies),
        "entry_points": entry_points,
        "group": kind.group,
        "suites": f"the testkit's {kind.suites} unchanged"
        if kind.suites
        else "the kind's contract tests (the testkit has no suite for it yet)",
        "service_readme": (
            f"\nThe server: how `scripts/services/{name}.sh` starts it (127.0.0.1:{port}),"
            f"\nwhere its data and log are; `{env_url}` points the tests elsewhere."
            if kind.server
            else ""
        ),
        "port": str(port),
        "env_prefix": f"RAGLOOM_{module.upper()}",
        "env": env_url,
        "start": f"bash scripts/services/{name}.sh start",
        "server_note": (
            f"\n# The tests need a {name} server: `bash scripts/services/{name}.sh start`"
            f"\n# (127.0.0.1:{port}), or set {env_url}."
            if kind.server
            else ""
        ),
    }
    values["server_fixture"] = render("server_fixture.py.tmpl", values) if kind.server else ""
    values["usage"] = render(f"{kind_name}/{variant}usage.py.tmpl", values)
    values["where"] = "path" if in_process else "url"
    values["where_help"] = (
        "the database's file or directory (created when missing)"
        if in_process
        else "the server's URL"
    )
    package = Path("packages") / f"{kind_name}-{name}"
    source = package / "src" / "ragloom" / namespace / module
    files = {
        package / "pyproject.toml": render("pyproject.toml.tmpl", values),
        package / "README.md": render("README.md.tmpl", values),
        source / "__init__.py": render("__init__.py.tmpl", values),
        source / f"{kind_name}.py": render(f"{kind_name}/module.py.tmpl", values),
        source / "py.typed": "",
        package / "tests" / f"test_{module}_conformance.py": render(
            f"{kind_name}/{variant}test.py.tmpl", values
        ),
    }
    if with_service:
        files[Path("scripts") / "services" / f"{name}.sh"] = render("service.sh.tmpl", values)
    new = [package, *(path for path in files if path != ENV_SCRIPT)]
    existing = [str(path) for path in new if (root / path).exists()]
    if existing:
        shared = " (--no-service uses the existing service script)" if with_service else ""
        raise GeneratorError(
            f"refusing to overwrite: {', '.join(existing)} already exists under {root}{shared}"
        )
    if with_service:
        files[ENV_SCRIPT] = env_lines(root, name, values["env_prefix"], port)
    return files


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, write the package, print what was created and what is next."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", required=True, help=f"one of: {', '.join(KINDS)}")
    parser.add_argument("--name", required=True, help="e.g. qdrant (lowercase, [a-z0-9-])")
    parser.add_argument("--client", help="the client library requirement, e.g. qdrant-client")
    parser.add_argument("--root", type=Path, default=REPO, help="repository root (default: here)")
    parser.add_argument(
        "--no-service", action="store_true", help="no scripts/services/<name>.sh (server kinds)"
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="a store whose engine runs in the Python process (a file or directory, no "
        "server): no service script, and a test that builds each store in a temporary "
        "directory",
    )
    args = parser.parse_args(argv)
    try:
        if args.kind not in KINDS:
            raise GeneratorError(f"--kind {args.kind!r}: use one of {', '.join(KINDS)}")
        name = check_name(args.name)
        client = None if args.client is None else check_client(args.client)
        files = plan(
            args.kind, name, client, not args.no_service, args.root, in_process=args.in_process
        )
    except GeneratorError as exc:
        print(f"new_package: {exc}", file=sys.stderr)
        return 2
    for path, content in files.items():
        target = args.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        if target.suffix == ".sh":
            target.chmod(0o755)
        print(f"{'updated' if path == ENV_SCRIPT else 'created'} {path}")
    print("next: run scripts/setup.sh, then replace every 'implement me' (docs/contributing.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
