"""The layer rules that need the integrations installed (core's own rules are in
packages/core/tests/test_import_graph.py, which runs with core alone): no integration
reaches the in-memory engine, by the import graph and in a fresh interpreter, and the S3
loader loads no BM25, stemmer or in-memory store.

The layer lists are core's: its test module is read for them (``ENGINE``,
``runtime_imports``), so one list serves both files.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent

KNOWN_VIOLATIONS: frozenset[tuple[str, str]] = frozenset()
"""(importer, imported) imports that break a layer rule today, each with its reason. The
checks drop exactly these edges, so any other path into the engine still fails."""

_NOT_INTEGRATIONS = {"core", "testkit", "easy-rag"}


def _core_layers() -> ModuleType:
    path = ROOT / "packages/core/tests/test_import_graph.py"
    spec = importlib.util.spec_from_file_location("ragloom_core_layers", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LAYERS = _core_layers()
ENGINE: frozenset[str] = LAYERS.ENGINE


def _integration_packages() -> list[str]:
    """The top-level package of every integration (``packages/*`` but core, the testkit and
    easy-rag, which is an application over the engine); all are installed here."""
    tops = []
    for package in sorted((ROOT / "packages").iterdir()):
        src = package / "src"
        if package.name in _NOT_INTEGRATIONS or not src.is_dir():
            continue
        shallowest = min(src.rglob("__init__.py"), key=lambda path: len(path.parts))
        tops.append(".".join(shallowest.parent.relative_to(src).parts))
    return tops


@pytest.fixture(scope="module")
def runtime_graph() -> grimp.ImportGraph:
    """Core and every integration, runtime imports only."""
    return grimp.build_graph(
        "ragloom.core", *_integration_packages(), exclude_type_checking_imports=True
    )


def test_the_known_violations_still_exist(runtime_graph: grimp.ImportGraph) -> None:
    """An entry whose import is gone must leave the list (else it would hide a new one)."""
    gone = sorted(
        (importer, imported)
        for importer, imported in KNOWN_VIOLATIONS
        if not runtime_graph.direct_import_exists(importer=importer, imported=imported)
    )
    assert gone == []


def test_no_integration_imports_the_engine() -> None:
    graph = grimp.build_graph(
        "ragloom.core", *_integration_packages(), exclude_type_checking_imports=True
    )
    for importer, imported in KNOWN_VIOLATIONS:
        graph.remove_import(importer=importer, imported=imported)
    assert "ragloom.loaders.amazon_s3" in _integration_packages(), "the check sees no integration"
    modules = [
        m for m in graph.modules if not m.startswith("ragloom.core.") and m != "ragloom.core"
    ]
    reached = {module: sorted(LAYERS.runtime_imports(graph, module) & ENGINE) for module in modules}
    assert {m: engine for m, engine in reached.items() if engine} == {}


@pytest.mark.parametrize(
    "package",
    [
        "ragloom.loaders.amazon_s3",
        "ragloom.loaders.github",
        "ragloom.stores.qdrant",
        "ragloom.stores.milvus",
        "ragloom.stores.pgvector",
        "ragloom.retrievers.web_search",
        "ragloom.chat_models.openai",
    ],
)
def test_importing_an_integration_loads_no_engine_module(
    runtime_graph: grimp.ImportGraph, package: str
) -> None:
    """The same rule, seen in a fresh interpreter's ``sys.modules`` (imports the graph does
    not see, such as ``importlib`` calls, count too)."""
    code = f"import sys, {package}\nprint('\\n'.join(sys.modules))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    excused = {
        module
        for importer, imported in KNOWN_VIOLATIONS
        if importer.startswith(package + ".")
        for module in {imported} | LAYERS.runtime_imports(runtime_graph, imported)
    }
    assert sorted((set(out.stdout.split()) & ENGINE) - excused) == []


def test_the_s3_loader_loads_no_bm25_stemmer_or_in_memory_store() -> None:
    code = "import sys, ragloom.loaders.amazon_s3\nprint('\\n'.join(sys.modules))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(out.stdout.split())
    assert "ragloom.loaders.amazon_s3.loader" in loaded
    heavy = {"Stemmer", "ragloom.core.bm25", "ragloom.core.stores.in_memory"}
    assert sorted(loaded & heavy) == []
