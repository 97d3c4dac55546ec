"""The module structure of ragloom.core: no import cycles, and the filter AST knows no store."""

from __future__ import annotations

import subprocess
import sys

import grimp
import pytest


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("ragloom.core")


def test_no_import_cycle(graph: grimp.ImportGraph) -> None:
    cycles = sorted(
        (module, imported)
        for module in graph.modules
        for imported in graph.find_modules_directly_imported_by(module)
        if graph.chain_exists(importer=imported, imported=module)
    )
    assert cycles == [], f"modules importing each other (directly or through others): {cycles}"


@pytest.mark.parametrize(
    "module",
    [
        "ragloom.core.filters",
        "ragloom.core.filter_values",
        "ragloom.core.filter_syntax",
        "ragloom.core.filter_compiler",
    ],
)
def test_filters_import_nothing_from_the_store_side(graph: grimp.ImportGraph, module: str) -> None:
    imported = graph.find_upstream_modules(module)
    stores = sorted(
        m for m in imported if m.startswith(("ragloom.core.stores", "ragloom.core.bm25"))
    )
    assert stores == [], f"{module} depends on {stores}"


def test_the_import_check_sees_a_cycle() -> None:
    # guard against a vacuous pass: the graph holds real edges, and a back edge makes a cycle
    graph = grimp.build_graph("ragloom.core")
    graph.add_import(importer="ragloom.core.errors", imported="ragloom.core.filters")
    assert graph.chain_exists(importer="ragloom.core.filters", imported="ragloom.core.errors")
    assert graph.chain_exists(importer="ragloom.core.errors", imported="ragloom.core.filters")


def test_every_module_imports_first(graph: grimp.ImportGraph) -> None:
    """Each module imported first, in a clean interpreter state, loads: catches cycles through
    package ``__init__`` modules, which the graph does not show."""
    code = (
        "import importlib, sys\n"
        "failed = []\n"
        "for name in sys.argv[1:]:\n"
        "    for loaded in [m for m in sys.modules if m.startswith('ragloom.')]:\n"
        "        del sys.modules[loaded]\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ImportError as exc:\n"
        "        failed.append(f'{name}: {exc}')\n"
        "print('\\n'.join(failed))\n"
        "sys.exit(1 if failed else 0)\n"
    )
    modules = sorted(m for m in graph.modules if not m.endswith("__main__"))
    result = subprocess.run(
        [sys.executable, "-c", code, *modules], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
