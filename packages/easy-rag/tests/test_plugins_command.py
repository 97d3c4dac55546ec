"""``ragloom plugins``: the active provider of each kind, and ``--check`` as a doctor."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragloom.chat_models.openai.testing import CHAT_MODEL, WireServer
from ragloom.core import plugins
from ragloom.easy_rag.assistant import CHAT_ENV_VARS
from ragloom.easy_rag.cli import EXIT_FAILURE, main
from ragloom.easy_rag.plugin_status import Group, Provider, format_status

CONFIG_VARS = (
    *CHAT_ENV_VARS,
    *(plugins.env_var(group) for group in (
        plugins.DOCUMENT_PARSERS, plugins.DOCUMENT_SPLITTERS, plugins.EMBEDDING_MODELS,
        plugins.CHAT_MODELS, plugins.SCORING_MODELS,
    )),
)  # fmt: skip


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in CONFIG_VARS:
        monkeypatch.delenv(name, raising=False)
    yield
    plugins.refresh()  # forget entry points a test added


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    code = main(["plugins", "--json", *argv])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def providers(table: dict[str, Any], group: str) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in table[group]["providers"]}


def add_entry_point(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, group: str, line: str) -> None:
    """Install (on sys.path) a distribution declaring one entry point."""
    info = tmp_path / "ragloom_fake-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ragloom-fake\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{line}\n")
    monkeypatch.syspath_prepend(str(tmp_path))


def test_active_providers_are_marked(capsys: pytest.CaptureFixture[str]) -> None:
    code, table, _ = run(capsys)
    assert code == 0
    assert providers(table, plugins.EMBEDDING_MODELS)["all-minilm-l6-v2"]["active"] is True
    parsers = providers(table, plugins.DOCUMENT_PARSERS)
    assert {"pdf", "office", "html"} <= parsers.keys()
    assert all(p["active"] for p in parsers.values())  # dispatched per file
    assert providers(table, plugins.CHAT_MODELS)["openai"]["active"] is False
    assert "extractive" in table[plugins.CHAT_MODELS]["note"]
    assert all("status" not in p for p in parsers.values())  # nothing loaded without --check


def test_text_output_marks_active_with_a_star(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "* all-minilm-l6-v2" in out
    assert "  openai" in out
    assert "* = active" in out


def test_check_loads_every_provider(capsys: pytest.CaptureFixture[str]) -> None:
    code, table, err = run(capsys, "--check")
    assert code == 0, err
    assert providers(table, plugins.EMBEDDING_MODELS)["all-minilm-l6-v2"]["status"] == "ok"
    assert providers(table, plugins.DOCUMENT_SPLITTERS)["recursive-254-30"]["status"] == "ok"
    assert {p["status"] for p in providers(table, plugins.DOCUMENT_PARSERS).values()} == {"ok"}
    openai = providers(table, plugins.CHAT_MODELS)["openai"]
    assert openai["status"] == "not configured"
    assert "OPENAI_API_KEY" in openai["error"]


def test_configured_chat_model_is_active_and_checked(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with WireServer() as server:
        monkeypatch.setenv("RAGLOOM_CHAT_BASE_URL", server.url)
        monkeypatch.setenv("RAGLOOM_CHAT_MODEL_NAME", CHAT_MODEL)
        code, table, _ = run(capsys, "--check")
    assert code == 0
    openai = providers(table, plugins.CHAT_MODELS)["openai"]
    assert (openai["active"], openai["status"]) == (True, "ok")


def test_half_configured_chat_model_fails_the_check(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGLOOM_CHAT_BASE_URL", "http://127.0.0.1:1/v1")
    code, table, err = run(capsys, "--check")
    assert code == EXIT_FAILURE
    openai = providers(table, plugins.CHAT_MODELS)["openai"]
    assert openai["active"] is True
    assert "RAGLOOM_CHAT_MODEL_NAME" in openai["error"]
    assert "ragloom.chat_models" in err


def test_unknown_chosen_provider_is_reported(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGLOOM_EMBEDDING_MODEL", "nope")
    code, table, _ = run(capsys, "--check")
    assert code == EXIT_FAILURE
    assert "RAGLOOM_EMBEDDING_MODEL=nope" in table[plugins.EMBEDDING_MODELS]["error"]
    assert main(["plugins"]) == 0  # listing alone reports but does not fail
    assert "! RAGLOOM_EMBEDDING_MODEL=nope" in capsys.readouterr().out


def test_broken_plugin_fails_the_check(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    add_entry_point(
        monkeypatch, tmp_path, plugins.EMBEDDING_MODELS, "broken = ragloom_missing_module:Model"
    )
    monkeypatch.setenv("RAGLOOM_EMBEDDING_MODEL", "all-minilm-l6-v2")
    code, table, err = run(capsys, "--check")
    assert code == EXIT_FAILURE
    found = providers(table, plugins.EMBEDDING_MODELS)
    assert found["broken"]["status"] == "broken"
    assert "ragloom_missing_module" in found["broken"]["error"]
    assert found["broken"]["distribution"] == "ragloom-fake"
    assert (found["all-minilm-l6-v2"]["active"], found["all-minilm-l6-v2"]["status"]) == (
        True,
        "ok",
    )
    assert "ragloom.embedding_models" in err


def test_two_providers_without_a_choice_is_a_problem(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    add_entry_point(
        monkeypatch, tmp_path, plugins.DOCUMENT_SPLITTERS,
        "other = ragloom.easy_rag.defaults:default_document_splitter",
    )  # fmt: skip
    # neither is from the distribution that makes the default (that one would win)
    monkeypatch.setitem(plugins.PROVIDERS, plugins.DOCUMENT_SPLITTERS, ("ragloom-elsewhere",))
    code, table, _ = run(capsys, "--check")
    assert code == EXIT_FAILURE
    group = table[plugins.DOCUMENT_SPLITTERS]
    assert "RAGLOOM_DOCUMENT_SPLITTER" in group["error"]
    assert not any(p["active"] for p in group["providers"])


def test_the_default_distribution_stays_active_beside_another_provider(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """chat-openai registers its embedding model too: listed, not active, and its
    missing configuration is no problem until RAGLOOM_EMBEDDING_MODEL names it."""
    code, table, err = run(capsys, "--check")
    assert code == 0, err
    found = providers(table, plugins.EMBEDDING_MODELS)
    assert (found["all-minilm-l6-v2"]["active"], found["all-minilm-l6-v2"]["status"]) == (
        True,
        "ok",
    )
    assert (found["openai"]["active"], found["openai"]["status"]) == (False, "not configured")
    assert "RAGLOOM_EMBEDDING_MODEL_NAME" in found["openai"]["error"]
    assert "the default (ragloom-embedding-onnx)" in table[plugins.EMBEDDING_MODELS]["note"]


def test_components_are_listed_and_checked_by_import_only(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A store needs configuration: ``--check`` imports the class and never builds it."""
    # A name of its own: the real pgvector store may be installed too.
    add_entry_point(
        monkeypatch, tmp_path, plugins.EMBEDDING_STORES,
        "pgvector-copy = ragloom.stores.pgvector:PgVectorEmbeddingStore",
    )  # fmt: skip
    code, table, err = run(capsys, "--check")
    assert code == 0, err
    group = table[plugins.EMBEDDING_STORES]
    assert group["variable"] is None
    assert "plugins.create" in group["note"]
    pgvector = providers(table, plugins.EMBEDDING_STORES)["pgvector-copy"]
    assert (pgvector["active"], pgvector["status"]) == (False, "ok")  # built, it would fail
    assert set(table) == set(plugins.GROUPS)
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "ragloom.embedding_stores  (picked by name: plugins.create(group, name" in out
    assert "RAGLOOM_EMBEDDING_STORE" not in out


def test_broken_components_fail_the_check(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    add_entry_point(
        monkeypatch, tmp_path, plugins.DOCUMENT_LOADERS,
        "gone = ragloom_missing_module:Loader\nlist = ragloom.stores.pgvector:__all__",
    )  # fmt: skip
    code, table, err = run(capsys, "--check")
    assert code == EXIT_FAILURE
    found = providers(table, plugins.DOCUMENT_LOADERS)
    assert found["gone"]["status"] == "broken"
    assert "ragloom_missing_module" in found["gone"]["error"]
    assert found["list"]["status"] == "broken"
    assert "not a class or factory" in found["list"]["error"]
    assert "ragloom.document_loaders" in err
    code, _, _ = run(capsys)
    assert code == 0  # listing alone does not import


def test_columns_are_as_wide_as_their_longest_entry() -> None:
    long = Provider(
        "google-cloud-storage", "ragloom-loader-google-cloud-storage", "m:Loader", False
    )
    short = Provider("pdf", "ragloom-parser-pdf", "p:Parser", True)
    text = format_status(
        [Group("g.loaders", None, "note", [long]), Group("g.parsers", None, "note", [short])]
    )
    rows = [line for line in text.splitlines() if line.endswith(("m:Loader", "p:Parser"))]
    assert len(rows) == 2
    assert rows[0].index("m:Loader") == rows[1].index("p:Parser")  # one column across groups
    assert "ragloom-loader-google-cloud-storage  m:Loader" in rows[0]
