"""Plugin discovery with real (tiny) distributions put on sys.path, not patched internals."""

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloom.core import FileSystemDocumentLoader, PluginError, TextDocumentParser, plugins

PLUGIN_MODULE = """
from ragloom.core import Document

class UpperParser:
    def parse(self, data, *, source=None):
        raw = data if isinstance(data, bytes) else data.read()
        return Document(raw.decode("utf-8").upper(), {{"parser": "{name}"}})

def broken():
    raise RuntimeError("boom")

class ConfiguredStore:  # a component that cannot be built without configuration
    def __init__(self, url, *, password, table="items"):
        self.url, self.password, self.table = url, password, table

NOT_A_FACTORY = 42
"""


def install_distribution(site: Path, dist: str, entry_points: str) -> None:
    """Write a minimal installed distribution (module + dist-info) into ``site``."""
    module = dist.replace("-", "_")
    (site / f"{module}.py").write_text(PLUGIN_MODULE.format(name=dist))
    info = site / f"{module}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points.format(module=module))


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("RAGLOOM_DOCUMENT_PARSER", raising=False)
    plugins.refresh()
    yield tmp_path
    plugins.refresh()
    for name in [m for m in sys.modules if m.startswith("ragloom_plugin_")]:
        del sys.modules[name]


@pytest.fixture
def text_file(tmp_path: Path) -> Path:
    file = tmp_path / "docs" / "a.txt"
    file.parent.mkdir()
    file.write_text("hello")
    return file


def test_env_var_names() -> None:
    assert plugins.env_var("ragloom.document_parsers") == "RAGLOOM_DOCUMENT_PARSER"
    assert plugins.env_var("ragloom.embedding_models") == "RAGLOOM_EMBEDDING_MODEL"


def test_no_plugin_falls_back_to_text_parser(site: Path, text_file: Path) -> None:
    doc = FileSystemDocumentLoader.load_document(text_file)
    assert doc.text == "hello"
    assert "parser" not in doc.metadata


def test_no_plugin_without_fallback_is_an_error(site: Path) -> None:
    with pytest.raises(PluginError, match="ragloom.nothing_installed_here"):
        plugins.load_default("ragloom.nothing_installed_here")


def test_install_hints_name_the_providing_distributions() -> None:
    """A missing default names what provides it: scoring models are not in easy-rag."""
    assert plugins.install_hint(plugins.SCORING_MODELS) == (
        "install one (e.g. ragloom-scoring-cohere or ragloom-scoring-http)"
    )
    assert "ragloom-embedding-onnx" in plugins.install_hint(plugins.EMBEDDING_MODELS)
    assert "ragloom-easy-rag" in plugins.install_hint(plugins.DOCUMENT_SPLITTERS)
    with pytest.raises(PluginError) as error:
        plugins.load_default("ragloom.nothing_installed_here")
    assert "easy-rag" not in str(error.value)
    assert "install a distribution that provides it" in str(error.value)


def test_single_plugin_is_the_default(site: Path, text_file: Path) -> None:
    install_distribution(
        site, "ragloom-plugin-upper", "[ragloom.document_parsers]\nupper = {module}:UpperParser\n"
    )
    plugins.refresh()
    doc = FileSystemDocumentLoader.load_document(text_file)
    assert doc.text == "HELLO"
    assert doc.metadata["parser"] == "ragloom-plugin-upper"
    assert isinstance(plugins.load("ragloom.document_parsers", "upper"), object)


def test_two_plugins_are_ambiguous_and_named(
    site: Path, text_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_distribution(
        site, "ragloom-plugin-one", "[ragloom.document_parsers]\none = {module}:UpperParser\n"
    )
    install_distribution(
        site, "ragloom-plugin-two", "[ragloom.document_parsers]\ntwo = {module}:UpperParser\n"
    )
    plugins.refresh()
    with pytest.raises(PluginError) as err:
        FileSystemDocumentLoader.load_document(text_file)
    message = str(err.value)
    assert "ragloom-plugin-one" in message
    assert "ragloom-plugin-two" in message
    assert "RAGLOOM_DOCUMENT_PARSER" in message
    # an explicit parser needs no discovery
    assert FileSystemDocumentLoader.load_document(text_file, TextDocumentParser()).text == "hello"
    # the environment variable chooses
    monkeypatch.setenv("RAGLOOM_DOCUMENT_PARSER", "two")
    doc = FileSystemDocumentLoader.load_document(text_file)
    assert doc.metadata["parser"] == "ragloom-plugin-two"
    monkeypatch.setenv("RAGLOOM_DOCUMENT_PARSER", "three")
    with pytest.raises(PluginError, match="no plugin named 'three'.*ragloom-plugin-one"):
        FileSystemDocumentLoader.load_document(text_file)


def test_broken_plugin_is_reported(site: Path, text_file: Path) -> None:
    install_distribution(
        site, "ragloom-plugin-broken", "[ragloom.document_parsers]\nbroken = {module}:broken\n"
    )
    plugins.refresh()
    with pytest.raises(PluginError, match="ragloom-plugin-broken.*boom"):
        FileSystemDocumentLoader.load_document(text_file)


STORES = "[ragloom.embedding_stores]\nacme = {module}:ConfiguredStore\n"


def test_component_groups_are_distinct_from_default_groups() -> None:
    assert set(plugins.DEFAULT_GROUPS).isdisjoint(plugins.COMPONENT_GROUPS)
    assert plugins.GROUPS == plugins.DEFAULT_GROUPS + plugins.COMPONENT_GROUPS
    assert all(group.startswith("ragloom.") for group in plugins.GROUPS)
    assert plugins.EMBEDDING_STORES in plugins.COMPONENT_GROUPS


def test_component_is_the_class_not_an_instance(site: Path) -> None:
    install_distribution(site, "ragloom-plugin-store", STORES)
    plugins.refresh()
    found = plugins.component(plugins.EMBEDDING_STORES, "acme")
    assert isinstance(found, type)
    assert found.__name__ == "ConfiguredStore"
    assert found.__module__ == "ragloom_plugin_store"
    with pytest.raises(PluginError, match="ragloom-plugin-store.*failed to load.*url"):
        plugins.load(plugins.EMBEDDING_STORES, "acme")  # zero-argument: needs configuration


def test_create_builds_with_the_configuration(site: Path) -> None:
    install_distribution(site, "ragloom-plugin-store", STORES)
    plugins.refresh()
    store = plugins.create(
        plugins.EMBEDDING_STORES, "acme", url="postgresql://db", password="secret"
    )
    assert isinstance(store, plugins.component(plugins.EMBEDDING_STORES, "acme"))
    assert (store.url, store.password, store.table) == ("postgresql://db", "secret", "items")


def test_create_failure_names_the_keys_not_the_values(site: Path) -> None:
    install_distribution(site, "ragloom-plugin-store", STORES)
    plugins.refresh()
    with pytest.raises(PluginError) as error:
        plugins.create(plugins.EMBEDDING_STORES, "acme", url="postgresql://db", pasword="s3cr3t")
    message = str(error.value)
    assert "'acme' from ragloom-plugin-store" in message
    assert "failed to build with pasword, url" in message
    assert "s3cr3t" not in message
    assert "postgresql://db" not in message
    with pytest.raises(PluginError, match="failed to build without configuration"):
        plugins.create(plugins.EMBEDDING_STORES, "acme")


def test_unknown_component_lists_what_is_installed(site: Path) -> None:
    install_distribution(site, "ragloom-plugin-store", STORES)
    plugins.refresh()
    with pytest.raises(PluginError) as error:
        plugins.create(plugins.EMBEDDING_STORES, "pgvectr", url="x")
    # The real stores of this environment are listed too (sorted by name).
    message = str(error.value)
    assert message.startswith(
        "no plugin named 'pgvectr' in group 'ragloom.embedding_stores'; installed: "
    )
    assert "'acme' from ragloom-plugin-store (ragloom_plugin_store:ConfiguredStore)" in message
    with pytest.raises(PluginError, match="installed: none"):
        plugins.component("ragloom.no_such_group", "acme")


def test_a_component_name_provided_twice_is_refused(site: Path) -> None:
    install_distribution(site, "ragloom-plugin-one", STORES)
    install_distribution(site, "ragloom-plugin-two", STORES)
    plugins.refresh()
    with pytest.raises(PluginError, match="provided twice: .*plugin-one.* and .*plugin-two"):
        plugins.component(plugins.EMBEDDING_STORES, "acme")


def test_broken_or_non_callable_components_are_reported(site: Path) -> None:
    install_distribution(
        site,
        "ragloom-plugin-odd",
        "[ragloom.content_retrievers]\nnumber = {module}:NOT_A_FACTORY\n"
        "missing = {module}:Missing\n",
    )
    plugins.refresh()
    with pytest.raises(PluginError, match="'number' from ragloom-plugin-odd.*names a int, not"):
        plugins.component(plugins.CONTENT_RETRIEVERS, "number")
    with pytest.raises(PluginError, match="'missing' from ragloom-plugin-odd.*failed to load"):
        plugins.create(plugins.CONTENT_RETRIEVERS, "missing")


def test_the_default_distribution_wins_over_another_provider(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second provider (a model that needs a server, say) does not make the default
    ambiguous: the one from a distribution of the group's PROVIDERS is built."""
    monkeypatch.setitem(plugins.PROVIDERS, plugins.DOCUMENT_PARSERS, ("ragloom-plugin-one",))
    install_distribution(
        site, "ragloom-plugin-one", "[ragloom.document_parsers]\none = {module}:UpperParser\n"
    )
    install_distribution(
        site, "ragloom-plugin-two", "[ragloom.document_parsers]\ntwo = {module}:UpperParser\n"
    )
    plugins.refresh()
    default = plugins.default_provider(plugins.DOCUMENT_PARSERS)
    assert default is not None
    assert default.name == "one"
    parser = plugins.load_default(plugins.DOCUMENT_PARSERS)
    assert parser.parse(b"x").metadata["parser"] == "ragloom-plugin-one"
    monkeypatch.setenv("RAGLOOM_DOCUMENT_PARSER", "two")  # named, the other is used
    parser = plugins.load_default(plugins.DOCUMENT_PARSERS)
    assert parser.parse(b"x").metadata["parser"] == "ragloom-plugin-two"
    # two from the default distributions: ambiguous, as before
    monkeypatch.setitem(
        plugins.PROVIDERS, plugins.DOCUMENT_PARSERS, ("ragloom-plugin-one", "ragloom-plugin-two")
    )
    monkeypatch.delenv("RAGLOOM_DOCUMENT_PARSER")
    assert plugins.default_provider(plugins.DOCUMENT_PARSERS) is None
    with pytest.raises(PluginError, match="plugins provide the default"):
        plugins.load_default(plugins.DOCUMENT_PARSERS)
