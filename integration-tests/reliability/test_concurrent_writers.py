"""Concurrent writers: two processes saving one store directory, two ingests on one index."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ragloom.core import InMemoryEmbeddingStore

SAVER = """
import sys
from ragloom.core import Embedding, InMemoryEmbeddingStore
path, tag = sys.argv[1], sys.argv[2]
for i in range(40):
    store = InMemoryEmbeddingStore()
    store.add(Embedding([1.0, float(i)]), id=f"{tag}-{i}")
    store.save(path)
"""

INGEST = """
import sys
from pathlib import Path
from ragloom.core import EmbeddingStoreIngestor
from ragloom.easy_rag.index import RagIndex
from ragloom.testkit import FakeEmbeddingModel
index_dir, corpus = sys.argv[1], sys.argv[2]
with RagIndex.locked(index_dir, wait=60):
    index = RagIndex.open_or_create(index_dir, "fake")
    index.ingest([corpus], EmbeddingStoreIngestor(index.mirrored, FakeEmbeddingModel()))
    index.save()
"""


def run_together(code: str, *argv_sets: list[str]) -> None:
    children = [
        subprocess.Popen([sys.executable, "-c", code, *argv], stderr=subprocess.PIPE, text=True)
        for argv in argv_sets
    ]
    for child in children:
        _, err = child.communicate(timeout=120)
        assert child.returncode == 0, err


def test_two_processes_saving_one_store_leave_a_loadable_directory(tmp_path: Path) -> None:
    target = tmp_path / "store"
    for _ in range(3):
        run_together(SAVER, [str(target), "a"], [str(target), "b"])
        store = InMemoryEmbeddingStore.load(target)  # never a manifest naming deleted files
        assert len(store) == 1


def test_two_ingests_on_one_index_lose_nothing(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, words in ((first, "volcano lava"), (second, "sailboat jib")):
        folder.mkdir()
        for i in range(5):
            (folder / f"{i}.txt").write_text(f"{words} note {i}", encoding="utf-8")
    index_dir = tmp_path / "index"
    run_together(INGEST, [str(index_dir), str(first)], [str(index_dir), str(second)])
    from ragloom.easy_rag.index import RagIndex

    index = RagIndex.open(index_dir)
    assert len(index.files) == 10
    assert len(index.store) == 10
