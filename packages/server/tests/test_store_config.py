"""The store from configuration: errors name the field, and an index directory is never
read against a store it was not built with (the stores themselves: integration-tests/
test_serve_stores.py)."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ragloom.core import BM25Index, EmbeddingModel, TextSegment
from ragloom.core.embedding import EmbeddingResult, text_of
from ragloom.easy_rag.cli import main as ragloom
from ragloom.easy_rag.index import MANIFEST
from ragloom.easy_rag.store_config import MARKER
from ragloom.server import (
    IndexService,
    ServerConfigError,
    ServerSettings,
    StoreSettings,
    create_app,
)
from ragloom.server.service import Principal
from ragloom.stores.qdrant import QdrantEmbeddingStore
from ragloom.testkit.stores import store_options

DOCS = Path(__file__).resolve().parents[3] / "docs"


def test_the_store_comes_from_the_environment_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGLOOM_SERVER_STORE", '{"kind": "qdrant", "options": {"path": "q"}}')
    settings = ServerSettings.load()
    assert settings.store == StoreSettings(kind="qdrant", options={"path": "q"})
    monkeypatch.setenv("RAGLOOM_SERVER_STORE", '{"kind": "qdrant", "url": "x"}')
    with pytest.raises(ServerConfigError, match=r"store\.url"):
        ServerSettings.load()


def service(index: Path, store: StoreSettings, model: EmbeddingModel) -> IndexService:
    return IndexService(ServerSettings.load(index=index, store=store), embedding_model=model)


def test_an_unknown_kind_names_the_field_and_what_is_installed(
    tmp_path: Path, embedding_model: EmbeddingModel
) -> None:
    with pytest.raises(ServerConfigError, match=r"store\.kind 'chroma'.*installed:.*pgvector"):
        service(tmp_path / "i", StoreSettings(kind="chroma"), embedding_model)


def test_unknown_options_name_the_field_and_the_accepted_ones(
    tmp_path: Path, embedding_model: EmbeddingModel
) -> None:
    wrong = StoreSettings(kind="qdrant", options={"colection": "typo"})
    with pytest.raises(
        ServerConfigError, match=r"store\.options: colection not accepted.*collection"
    ):
        service(tmp_path / "i", wrong, embedding_model)


def test_the_memory_store_takes_no_options(tmp_path: Path, embedding_model: EmbeddingModel) -> None:
    with pytest.raises(ServerConfigError, match=r"store\.options"):
        service(tmp_path / "i", StoreSettings(options={"path": "x"}), embedding_model)


def test_a_directory_keeps_its_store(
    index_dir: Path, tmp_path: Path, embedding_model: EmbeddingModel
) -> None:
    options = {"path": str(tmp_path / "q"), "collection": "c"}
    qdrant = StoreSettings(kind="qdrant", options=options)
    with pytest.raises(ServerConfigError, match=r"store\.kind 'qdrant'.*built with store 'memory'"):
        service(index_dir, qdrant, embedding_model)
    fresh = tmp_path / "fresh"
    served = service(fresh, qdrant, embedding_model)
    assert isinstance(served.index.store, QdrantEmbeddingStore)
    served.close()
    # The marker records the kind and the collection, never where the store is.
    recorded = {"kind": "qdrant", "options": {"collection": "c"}}
    assert json.loads((fresh / MARKER).read_text()) == recorded
    assert not (fresh / "store").exists()  # the vectors are the store's, not the directory's
    with pytest.raises(ServerConfigError, match=r"built with store 'qdrant'"):
        service(fresh, StoreSettings(), embedding_model)


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


def test_an_index_ragloom_ingest_built_in_pgvector_is_served(
    tmp_path: Path, embedding_model: EmbeddingModel, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ragloom ingest --store pgvector`, then `ragloom serve` with ``store.kind =
    pgvector`` on the directory: /v1/retrieve answers what `ragloom query` answers, in
    every mode (the collection the directory remembers fills in the server's options;
    where to connect comes from each side's own)."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("documents.md", "filters.md"):
        (corpus / name).write_text((DOCS / name).read_text(encoding="utf-8"), encoding="utf-8")
    index = tmp_path / "index"
    query = "how do I filter by metadata"
    with store_options("pgvector", tmp_path, collection="served") as options:
        given = [f"--store-option={key}={value}" for key, value in options.items()]
        connection = options["connection"]
        argv = ["ingest", str(corpus), "--index", str(index), "--quiet", "--store", "pgvector"]
        assert ragloom([*argv, *given]) == 0
        expected = {}
        for mode in ("hybrid", "dense", "keyword"):
            capsys.readouterr()
            argv = ["query", query, "--index", str(index), "--mode", mode, "-k", "4", "--json"]
            assert ragloom([*argv, f"--store-option=connection={connection}"]) == 0
            hits = json.loads(capsys.readouterr().out)
            expected[mode] = [(hit["source"], hit["start"], hit["text"]) for hit in hits]
            assert len(expected[mode]) == 4, mode
        store = StoreSettings(kind="pgvector", options={"connection": connection})
        settings = ServerSettings.load(index=index, store=store)
        served = IndexService(settings, embedding_model=embedding_model)
        try:
            assert served.index.store_persists_itself
            with TestClient(create_app(settings, served), base_url="http://127.0.0.1:8000") as app:
                for mode, passages in expected.items():
                    body = {"query": query, "max_results": 4, "mode": mode}
                    answer = app.post("/v1/retrieve", json=body)
                    assert answer.status_code == 200, answer.text
                    data = answer.json()["data"]
                    got = [(hit["source"], hit["start"], hit["text"]) for hit in data]
                    assert got == passages, mode
        finally:
            served.close()
