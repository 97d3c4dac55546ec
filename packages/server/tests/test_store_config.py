"""The store from configuration: errors name the field, and an index directory is never
read against a store it was not built with (the stores themselves: integration-tests/
test_serve_stores.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragloom.core import EmbeddingModel
from ragloom.server import ServerConfigError, ServerSettings, StoreSettings
from ragloom.server.store_config import MARKER, ConfiguredStoreIndex, open_index, open_store


def test_the_store_comes_from_the_environment_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGLOOM_SERVER_STORE", '{"kind": "qdrant", "options": {"path": "q"}}')
    settings = ServerSettings.load()
    assert settings.store == StoreSettings(kind="qdrant", options={"path": "q"})
    monkeypatch.setenv("RAGLOOM_SERVER_STORE", '{"kind": "qdrant", "url": "x"}')
    with pytest.raises(ServerConfigError, match=r"store\.url"):
        ServerSettings.load()


def test_an_unknown_kind_names_the_field_and_what_is_installed() -> None:
    with pytest.raises(ServerConfigError, match=r"store\.kind 'chroma'.*installed:.*pgvector"):
        open_store(StoreSettings(kind="chroma"), 384)


def test_unknown_options_name_the_field_and_the_accepted_ones() -> None:
    wrong = StoreSettings(kind="qdrant", options={"colection": "typo"})
    with pytest.raises(
        ServerConfigError, match=r"store\.options: colection not accepted.*collection"
    ):
        open_store(wrong, 384)


def test_the_memory_store_takes_no_options(tmp_path: Path) -> None:
    with pytest.raises(ServerConfigError, match=r"store\.options"):
        open_index(tmp_path / "i", "m", StoreSettings(options={"path": "x"}), 384)


def test_a_directory_keeps_its_store(
    index_dir: Path, tmp_path: Path, embedding_model: EmbeddingModel
) -> None:
    qdrant = StoreSettings(kind="qdrant", options={"path": str(tmp_path / "q"), "collection": "c"})
    with pytest.raises(ServerConfigError, match=r"store\.kind 'qdrant'.*built with store 'memory'"):
        open_index(index_dir, "m", qdrant, embedding_model.dimension)
    fresh = tmp_path / "fresh"
    index = open_index(fresh, "m", qdrant, embedding_model.dimension)
    assert isinstance(index, ConfiguredStoreIndex)
    index.save()
    index.close()
    assert json.loads((fresh / MARKER).read_text()) == {"kind": "qdrant"}
    assert not (fresh / "store").exists()  # the vectors are the store's, not the directory's
    with pytest.raises(ServerConfigError, match=r"built with store 'qdrant'"):
        open_index(fresh, "m", StoreSettings(), embedding_model.dimension)
