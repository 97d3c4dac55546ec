"""The store from configuration: errors name the field, and an index directory is never
read against a store it was not built with (the stores themselves: integration-tests/
test_serve_stores.py)."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from ragloom.core import BM25Index, EmbeddingModel, TextSegment
from ragloom.core.embedding import EmbeddingResult, text_of
from ragloom.easy_rag.index import MANIFEST
from ragloom.server import IndexService, ServerConfigError, ServerSettings, StoreSettings
from ragloom.server.service import Principal
from ragloom.server.store_config import MARKER, open_index, open_store
from ragloom.stores.qdrant import QdrantEmbeddingStore


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
    assert isinstance(index.store, QdrantEmbeddingStore)
    index.save()
    index.close()
    assert json.loads((fresh / MARKER).read_text()) == {"kind": "qdrant"}
    assert not (fresh / "store").exists()  # the vectors are the store's, not the directory's
    with pytest.raises(ServerConfigError, match=r"built with store 'qdrant'"):
        open_index(fresh, "m", StoreSettings(), embedding_model.dimension)


class HeldModel(EmbeddingModel):
    """The real model, but a text containing ``HOLD`` waits for :attr:`release` (a job
    stopped mid-way, where a crash could come)."""

    def __init__(self, model: EmbeddingModel) -> None:
        self.model = model
        self.holding = threading.Event()
        self.release = threading.Event()

    @property
    def dimension(self) -> int:
        return self.model.dimension

    def embed_all(self, texts: Sequence[str | TextSegment]) -> EmbeddingResult:
        if any("HOLD" in text_of(text) for text in texts):
            self.holding.set()
            assert self.release.wait(60)
        return self.model.embed_all(texts)


def test_a_store_that_persists_itself_gets_the_manifest_after_every_job(
    tmp_path: Path, embedding_model: EmbeddingModel
) -> None:
    """Job 1's segments are in the store the moment it is done; the manifest on disk must
    list it while job 2 still runs (before: only once the queue ran empty)."""
    qdrant = StoreSettings(kind="qdrant", options={"path": str(tmp_path / "q"), "collection": "c"})
    index = tmp_path / "index"
    model = HeldModel(embedding_model)
    service = IndexService(ServerSettings.load(index=index, store=qdrant), embedding_model=model)
    admin = Principal("admin", None)
    try:
        first = service.submit(admin, "first.md", "Lighthouse keepers trim the wick at dusk.")
        second = service.submit(admin, "second.md", "HOLD this one until the test is done.")
        assert model.holding.wait(60)
        assert first.status == "done"
        assert second.status == "running"
        files = json.loads((index / MANIFEST).read_text())["files"]
        assert list(files) == ["upload:-/first.md"]
        keywords = BM25Index.load(index / "keywords")
        hits = keywords.search("lighthouse wick HOLD test")
        assert {hit.segment.metadata["file_name"] for hit in hits} == {"first.md"}
    finally:
        model.release.set()
        service.close()
    files = json.loads((index / MANIFEST).read_text())["files"]
    assert sorted(files) == ["upload:-/first.md", "upload:-/second.md"]
