"""Milvus Lite: closing a store stops the server process it started (counted with psutil),
unless another open store, or a client started outside the stores, still uses it."""

from __future__ import annotations

from pathlib import Path

import psutil
from pymilvus import MilvusClient  # type: ignore[import-untyped]

from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding
from ragloom.stores.milvus import MilvusEmbeddingStore


def lite_servers() -> list[psutil.Process]:
    """This process's Milvus Lite server processes (milvus_lite's ``lib/milvus`` binary)."""
    return [
        child
        for child in psutil.Process().children(recursive=True)
        if child.name() == "milvus" and child.is_running()
    ]


def open_store(db: Path) -> MilvusEmbeddingStore:
    return MilvusEmbeddingStore(uri=str(db), collection_name="docs", dimension=2)


def test_open_close_many_stores_leaves_no_server(tmp_path: Path) -> None:
    before = len(lite_servers())
    for n in range(4):
        store = open_store(tmp_path / f"s{n}.db")
        store.add(Embedding([1.0, float(n)]), TextSegment(f"entry {n}"))
        assert len(lite_servers()) == before + 1
        store.close()
        assert len(lite_servers()) == before, f"store {n}: its server still runs after close"


def test_server_shared_by_two_stores_stops_with_the_last(tmp_path: Path) -> None:
    before = len(lite_servers())
    db = tmp_path / "shared.db"
    first, second = open_store(db), open_store(db)
    first.add(Embedding([1.0, 0.0]), TextSegment("kept"), id="a")
    first.close()
    assert len(second) == 1  # still served
    assert len(lite_servers()) == before + 1
    second.close()
    assert len(lite_servers()) == before
    with open_store(db) as reopened:  # a new server on the same file: the data is there
        assert len(reopened) == 1
    assert len(lite_servers()) == before


def test_server_started_outside_the_stores_keeps_running(tmp_path: Path) -> None:
    db = tmp_path / "theirs.db"
    client = MilvusClient(str(db))
    try:
        servers = len(lite_servers())
        with open_store(db) as store:
            store.add(Embedding([0.0, 1.0]), TextSegment("x"), id="x")
        assert len(lite_servers()) == servers
        assert client.has_collection("docs")  # the client's server still answers
    finally:
        client.close()
