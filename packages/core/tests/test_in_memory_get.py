"""InMemoryEmbeddingStore.get beyond the testkit: saved and memory-mapped loads (ids and
texts decoded lazily), compaction, and every index kind."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding
from ragloom.core.stores.in_memory import InMemoryEmbeddingStore


def _filled(index: str = "exact") -> tuple[InMemoryEmbeddingStore, np.ndarray]:
    vectors = np.random.default_rng(3).normal(size=(300, 8)).astype(np.float32)
    store = InMemoryEmbeddingStore(index=index)  # type: ignore[arg-type]
    segments = [
        TextSegment(f"text {i}", {"n": i, "even": i % 2 == 0}) if i % 3 else None
        for i in range(300)
    ]
    for i in range(300):
        store.add(Embedding(vectors[i]), segments[i], id=f"id-{i}")
    return store, vectors


def _view(store: InMemoryEmbeddingStore, ids: list[str]) -> list[tuple[object, ...]]:
    return [
        (e.embedding_id, e.embedded, None if e.embedding is None else e.embedding.vector.tobytes())
        for e in store.get(ids, embeddings=True)
    ]


@pytest.mark.parametrize("mmap", [False, True])
def test_a_loaded_store_gets_what_was_saved(tmp_path: Path, mmap: bool) -> None:
    store, vectors = _filled()
    store.remove_all([f"id-{i}" for i in range(0, 300, 7)])
    asked = ["id-299", "id-7", "id-0", "id-1", "missing", "id-150", "id-2"]
    store.save(tmp_path / "saved")
    loaded = InMemoryEmbeddingStore.load(tmp_path / "saved", mmap=mmap)
    assert _view(loaded, asked) == _view(store, asked)
    assert [e.embedding_id for e in loaded.get(asked)] == ["id-299", "id-1", "id-150", "id-2"]
    (entry,) = loaded.get(["id-299"], embeddings=True)
    assert entry.embedding is not None
    np.testing.assert_array_equal(entry.embedding.vector, vectors[299])
    assert entry.embedded == TextSegment("text 299", {"n": 299, "even": False})


@pytest.mark.parametrize("index", ["exact", "int8", "binary"])
def test_get_after_compaction_on_every_index_kind(index: str) -> None:
    store, vectors = _filled(index)
    store.remove_all([f"id-{i}" for i in range(0, 200)])  # two thirds: compacts
    found = store.get([f"id-{i}" for i in range(195, 205)], embeddings=True)
    assert [e.embedding_id for e in found] == [f"id-{i}" for i in range(200, 205)]
    for entry in found:
        assert entry.embedding is not None
        np.testing.assert_array_equal(entry.embedding.vector, vectors[int(entry.embedding_id[3:])])
    assert found[1].embedded is None  # id-201: added without a segment
