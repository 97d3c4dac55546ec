"""Plugin discovery with real (tiny) distributions put on sys.path, not patched internals."""

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloom.core import FileSystemDocumentLoader, PluginError, TextDocumentParser, plugins

PARSER_MODULE = """
from ragloom.core import Document

class UpperParser:
    def parse(self, data, *, source=None):
        raw = data if isinstance(data, bytes) else data.read()
        return Document(raw.decode("utf-8").upper(), {{"parser": "{name}"}})

def broken():
    raise RuntimeError("boom")
"""


def install_distribution(site: Path, dist: str, entry_points: str) -> None:
    """Write a minimal installed distribution (module + dist-info) into ``site``."""
    module = dist.replace("-", "_")
    (site / f"{module}.py").write_text(PARSER_MODULE.format(name=dist))
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
