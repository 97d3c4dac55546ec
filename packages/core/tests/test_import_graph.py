"""The module structure of ragloom.core: no import cycles, the filter AST knows no store, and
the three layers (contract, author kit, in-memory engine) keep their rules
(docs/architecture.md, "Layers").

Core alone is enough here (scripts/check_core_alone.sh); the rule that no integration
reaches the engine needs the integrations installed and is checked in
integration-tests/test_layers.py, from the lists below."""

from __future__ import annotations

import copy
import subprocess
import sys

import grimp
import pytest

_CORE = "ragloom.core."

CONTRACT = frozenset(
    _CORE + name
    for name in [
        "_lazy",
        "chat.messages",
        "chat.model",
        "chat.tools",
        "content",
        "document",
        "embedding",
        "errors",
        "filter_parser",
        "filter_syntax",
        "filter_values",
        "filters",
        "loaders.result",
        "metadata",
        "parsers.base",
        "progress",
        "prompt_template",
        "query",
        "retrievers.base",
        "scoring",
        "splitters.base",
        "stores.arguments",
        "stores.base",
        "tokenizer",
        "transformers",
        "web_search",
    ]
)
"""The domain types, the protocols and their request/result types, the errors."""

KIT = frozenset(
    _CORE + name
    for name in [
        "_gc",
        "bm25.analyzer",  # text analysis, shared by BM25 and the stores' sparse vectors
        "bounded_read",
        "filter_compiler",
        "loaders.blob",
        "loaders.default_parser",
        "loaders.file_selection",
        "loaders.guard",
        "parsers.dispatch",
        "parsers.text",
        "plugins",
        "retry",
        "scoring_batches",
        "stores.metadata_columns",
        "stores.metadata_types",
        "stores.scores",
        "stores.validation",
    ]
)
"""What integration authors build on; every ``ragloom.core.kit.*`` module belongs here too."""

ENGINE = frozenset(
    _CORE + name
    for name in [
        "bm25.feedback",
        "bm25.index",
        "bm25.postings",
        "bm25.scoring",
        "stores._columnar",
        "stores._faiss",
        "stores._rows",
        "stores._usearch",
        "stores.filter_mask",
        "stores.hnsw",
        "stores.in_memory",
        "stores.metadata_table",
        "stores.persistence",
        "stores.quantized",
    ]
)
"""The in-memory store and BM25 index with their tables, indexes and on-disk format."""

BUILT_ON_THE_LAYERS = frozenset(
    _CORE + name
    for name in [
        "aio",  # the public async helpers; re-exports the kit's Steps driver and AsyncAddMixin
        "assistant",
        "chat.memory",
        "content_aggregators",
        "content_injectors",
        "contextual_headers",
        "document_splitters",
        "fusion",
        "ingestor",
        "loaders.file_system",
        "loaders.package_resource",
        "loaders.url",
        "mmr",
        "parent_store",
        "query_routers",
        "query_transformers",
        "retrieval_augmentor",
        "retriever_tools",
    ]
) | {"ragloom.core"}
"""Pipeline components and the lazy package facades: they may import any layer. Every module
under ``evaluation``, ``retrievers`` and ``splitters`` (but ``base``) and every package
``__init__`` belongs here too."""

_BUILT_ON_PREFIXES = (_CORE + "evaluation", _CORE + "retrievers.", _CORE + "splitters.")


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


def _group(graph: grimp.ImportGraph, module: str) -> set[str]:
    """The names of the layer groups ``module`` is listed in (by name or by prefix)."""
    packages = {m.rpartition(".")[0] for m in graph.modules}
    groups = {
        "contract": module in CONTRACT,
        "kit": module in KIT or module.startswith(_CORE + "kit."),
        "engine": module in ENGINE,
        "built on the layers": module in BUILT_ON_THE_LAYERS
        or (module.startswith(_BUILT_ON_PREFIXES) and module not in CONTRACT)
        or module in packages,
    }
    return {name for name, member in groups.items() if member}


def test_every_core_module_is_in_exactly_one_layer_group(graph: grimp.ImportGraph) -> None:
    misplaced = {m: sorted(_group(graph, m)) for m in graph.modules if len(_group(graph, m)) != 1}
    assert misplaced == {}, "place each module in one list above (docs/architecture.md)"
    listed = CONTRACT | KIT | ENGINE | BUILT_ON_THE_LAYERS
    assert sorted(listed - graph.modules) == [], "a listed module no longer exists"


def test_the_contract_imports_only_the_contract(graph: grimp.ImportGraph) -> None:
    outside = {
        module: sorted(graph.find_modules_directly_imported_by(module) - CONTRACT)
        for module in CONTRACT
    }
    assert {m: out for m, out in outside.items() if out} == {}


def test_the_kit_imports_only_the_contract_and_the_kit(graph: grimp.ImportGraph) -> None:
    kit = {m for m in graph.modules if "kit" in _group(graph, m)}
    outside = {
        module: sorted(graph.find_modules_directly_imported_by(module) - CONTRACT - kit)
        for module in kit
    }
    assert {m: out for m, out in outside.items() if out} == {}


def _reaches(graph: grimp.ImportGraph, importers: set[str], imported: set[str]) -> list[str]:
    """``importer -> imported`` for each pair where one imports the other, at any depth."""
    return sorted(
        f"{importer} -> {target}"
        for importer in importers
        for target in imported
        if graph.chain_exists(importer=importer, imported=target)
    )


def test_the_kit_does_not_import_the_public_async_helpers(graph: grimp.ImportGraph) -> None:
    """The Steps driver and ``AsyncAddMixin`` live in the kit; ``ragloom.core.aio`` (the
    helpers every caller awaits components with) sits above it and re-exports them."""
    kit = {m for m in graph.modules if "kit" in _group(graph, m)}
    assert {_CORE + "kit.steps", _CORE + "kit.async_add", _CORE + "kit.http"} <= kit
    assert _reaches(graph, kit, {_CORE + "aio"}) == []


def test_the_contract_does_not_import_the_kit(graph: grimp.ImportGraph) -> None:
    kit = {m for m in graph.modules if "kit" in _group(graph, m)}
    assert _reaches(graph, set(CONTRACT), kit) == []


def test_the_layer_checks_see_a_back_edge() -> None:
    # guard against a vacuous pass: a kit module importing aio, or a contract module importing
    # the kit, is reported (a graph of its own: the shared fixture stays as built)
    graph = grimp.build_graph("ragloom.core")
    graph.add_import(importer=_CORE + "kit.steps", imported=_CORE + "aio")
    graph.add_import(importer=_CORE + "errors", imported=_CORE + "kit.egress")
    assert _reaches(graph, {_CORE + "kit.http"}, {_CORE + "aio"}) == [
        f"{_CORE}kit.http -> {_CORE}aio"
    ]
    assert f"{_CORE}errors -> {_CORE}kit.egress" in _reaches(
        graph, set(CONTRACT), {_CORE + "kit.egress"}
    )


def runtime_imports(graph: grimp.ImportGraph, module: str) -> set[str]:
    """What importing ``module`` runs: its imports and every package ``__init__`` above each
    module, transitively (the graph leaves ``TYPE_CHECKING`` imports out)."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        todo.extend(graph.find_modules_directly_imported_by(current))
        parent = current.rpartition(".")[0]
        if parent in graph.modules:
            todo.append(parent)
    return seen - {module}


@pytest.fixture(scope="module")
def runtime_graph() -> grimp.ImportGraph:
    """Core's runtime imports only."""
    return grimp.build_graph("ragloom.core", exclude_type_checking_imports=True)


def test_the_contract_and_the_kit_load_no_engine_module(runtime_graph: grimp.ImportGraph) -> None:
    """Package ``__init__`` modules included: an eager facade above a contract module would
    load the engine with it."""
    light = [m for m in runtime_graph.modules if _group(runtime_graph, m) & {"contract", "kit"}]
    reached = {m: sorted(runtime_imports(runtime_graph, m) & ENGINE) for m in light}
    assert {m: engine for m, engine in reached.items() if engine} == {}


def test_the_engine_check_sees_an_eager_facade(runtime_graph: grimp.ImportGraph) -> None:
    # guard against a vacuous pass: an eager stores/__init__ would load the engine with
    # every store integration (the back edge goes into a copy: the shared fixture stays as
    # built, so the other tests see the same graph in any order)
    graph = copy.deepcopy(runtime_graph)
    graph.add_import(importer="ragloom.core.stores", imported="ragloom.core.stores.in_memory")
    reached = runtime_imports(graph, "ragloom.core.stores.base") & ENGINE
    assert "ragloom.core.stores.in_memory" in reached
    assert "ragloom.core.stores.in_memory" not in (
        runtime_imports(runtime_graph, "ragloom.core.stores.base") & ENGINE
    )
