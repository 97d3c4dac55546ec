"""Every integration distribution is registered through entry points (docs/plugins.md).

Read from each ``packages/<kind>-<name>/pyproject.toml`` (installed metadata may be
stale: it is written at install time): at least one entry point, each in a group that
``ragloom.core.plugins`` defines, each ``module:attr`` importable and naming a class (or
a classmethod of one, e.g. ``from_env``) that has its group's interface. No service is
needed: nothing is built, only imported.
"""

from __future__ import annotations

import importlib
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ragloom.core import (
    ChatModel,
    ContentRetriever,
    DocumentParser,
    DocumentSplitter,
    DocumentTransformer,
    EmbeddingModel,
    EmbeddingStore,
    ScoringModel,
    plugins,
)
from ragloom.core.web_search import WebSearchEngine
from ragloom.easy_rag.cli import COMMAND_PLUGINS

ROOT = Path(__file__).resolve().parent.parent
NOT_INTEGRATIONS = {"core", "testkit", "easy-rag"}
INTEGRATIONS = sorted(
    path.parent
    for path in ROOT.glob("packages/*/pyproject.toml")
    if path.parent.name not in NOT_INTEGRATIONS
)

#: The core protocol each group's components implement (all runtime-checkable).
PROTOCOLS: dict[str, type] = {
    plugins.DOCUMENT_PARSERS: DocumentParser,
    plugins.DOCUMENT_SPLITTERS: DocumentSplitter,
    plugins.EMBEDDING_MODELS: EmbeddingModel,
    plugins.CHAT_MODELS: ChatModel,
    plugins.SCORING_MODELS: ScoringModel,
    plugins.EMBEDDING_STORES: EmbeddingStore,
    plugins.DOCUMENT_TRANSFORMERS: DocumentTransformer,
    plugins.CONTENT_RETRIEVERS: ContentRetriever,
    plugins.WEB_SEARCH_ENGINES: WebSearchEngine,
}
#: Kinds without a core protocol: the method (any one of) their components have. Loaders
#: come in the spec's two shapes: a source of documents (``load_document``) or of pages
#: by URL (``load``).
METHODS: dict[str, tuple[str, ...]] = {
    plugins.DOCUMENT_LOADERS: ("load_document", "load"),
    plugins.EMBEDDING_STORE_INGESTORS: ("ingest",),
}


def declared(package: Path) -> dict[str, dict[str, str]]:
    """The entry points ``package``'s pyproject declares: group -> name -> target."""
    with (package / "pyproject.toml").open("rb") as file:
        groups: dict[str, dict[str, str]] = tomllib.load(file)["project"].get("entry-points", {})
    return groups


def resolve(target: str) -> Any:
    """Import ``module:attr.attr`` the way an entry point's ``load()`` does."""
    module, _, attrs = target.partition(":")
    obj: Any = importlib.import_module(module)
    for attr in attrs.split("."):
        obj = getattr(obj, attr)
    return obj


def component_class(target: str, obj: Any) -> type:
    """The class ``obj`` builds: the class itself, or the class a classmethod is bound to."""
    owner = obj if isinstance(obj, type) else getattr(obj, "__self__", None)
    assert isinstance(owner, type), (
        f"{target} is a {type(obj).__name__}: name a class or a classmethod of one, so "
        "its interface can be checked"
    )
    return owner


def protocol_members(protocol: type) -> set[str]:
    """The public methods and properties ``protocol`` (and its protocol bases) declares.

    ``issubclass`` refuses protocols with a property (``EmbeddingModel.dimension``), so
    the members are compared by name, as ``isinstance`` on an instance would.
    """
    return {
        name
        for base in protocol.__mro__
        if getattr(base, "_is_protocol", False)
        for name in vars(base)
        if not name.startswith("_")
    }


def has_interface(group: str, cls: type) -> bool:
    if group in PROTOCOLS:
        return all(hasattr(cls, name) for name in protocol_members(PROTOCOLS[group]))
    return any(callable(getattr(cls, method, None)) for method in METHODS[group])


def test_every_group_has_an_interface_to_check() -> None:
    assert set(PROTOCOLS) | set(METHODS) == set(plugins.GROUPS)


def test_the_interface_check_can_fail() -> None:
    assert protocol_members(EmbeddingModel) == {"embed_all", "embed", "dimension"}
    assert not has_interface(plugins.EMBEDDING_STORES, ContentRetriever)
    assert not has_interface(plugins.DOCUMENT_LOADERS, EmbeddingStore)
    with pytest.raises(AssertionError, match="name a class"):
        component_class("x:f", resolve("ragloom.core.plugins:load"))


@pytest.mark.parametrize("package", INTEGRATIONS, ids=lambda path: path.name)
def test_package_registers_its_components(package: Path) -> None:
    groups = declared(package)
    assert groups, f"{package.name}/pyproject.toml declares no [project.entry-points.*]"
    unknown = set(groups) - set(plugins.GROUPS) - {COMMAND_PLUGINS}
    assert not unknown, f"{package.name}: groups {unknown} are not in ragloom.core.plugins"
    for group, entries in groups.items():
        assert entries, f"{package.name}: [project.entry-points.{group!r}] is empty"
        if group == COMMAND_PLUGINS:  # the ragloom CLI's subcommands: register(subparsers)
            for name, target in entries.items():
                assert callable(resolve(target)), f"{package.name}: {name} = {target!r}"
            continue
        for name, target in entries.items():
            cls = component_class(target, resolve(target))
            assert has_interface(group, cls), (
                f"{package.name}: {name} = {target!r} in {group!r} lacks the interface "
                f"({PROTOCOLS.get(group) or METHODS[group]})"
            )


def test_names_are_unique_within_a_group() -> None:
    """Two distributions giving one name in a group would make picking it by name fail."""
    names = Counter(
        (group, name)
        for package in ROOT.glob("packages/*")
        if (package / "pyproject.toml").is_file()
        for group, entries in declared(package).items()
        for name in entries
    )
    assert [key for key, count in names.items() if count > 1] == []
