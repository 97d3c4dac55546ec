"""kill -9 during save and during ingest, in a loop: what is on disk always loads, and holds
either the old or the new state, never a mix; a re-run completes the work."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from ragloom.core import Embedding, EmbeddingSearchRequest, InMemoryEmbeddingStore

ROUNDS = 5

SAVER = """
import sys
import numpy as np
from ragloom.core import InMemoryEmbeddingStore, TextSegment
path = sys.argv[1]
store = InMemoryEmbeddingStore()
print("ready", flush=True)
for state in range(1, 10_000):
    # state n: ids s0..s{n*50-1}, vector i = (i, 1, ...), text and metadata from i
    first = (state - 1) * 50
    rows = np.array([[i, 1.0, 0.5, 0.25] for i in range(first, first + 50)], dtype=np.float32)
    segments = [TextSegment(f"text {i}", {"n": i}) for i in range(first, first + 50)]
    store.add_all(rows, segments, ids=[f"s{i}" for i in range(first, first + 50)])
    store.save(path)
"""

INGEST = """
import sys
from ragloom.core import EmbeddingStoreIngestor
from ragloom.easy_rag.index import RagIndex
from ragloom.testkit import FakeEmbeddingModel
index_dir, corpus = sys.argv[1], sys.argv[2]
print("ready", flush=True)
with RagIndex.locked(index_dir, wait=30):
    index = RagIndex.open_or_create(index_dir, "fake")
    index.ingest([corpus], EmbeddingStoreIngestor(index.mirrored, FakeEmbeddingModel()))
    index.save()
"""


def kill_after(code: str, argv: list[str], seconds: float) -> None:
    """Start ``code``, wait until it is running, let it work ``seconds``, then kill -9."""
    child = subprocess.Popen(
        [sys.executable, "-c", code, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert child.stdout is not None
    child.stdout.readline()  # "ready": imports are done
    time.sleep(seconds)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)


def test_kill_during_save_leaves_the_old_or_the_new_state(tmp_path: Path) -> None:
    rng = random.Random(3)
    target = tmp_path / "store"
    for _ in range(ROUNDS):
        kill_after(SAVER, [str(target)], rng.uniform(0.05, 0.6))
        if not (target / "manifest.json").exists():
            continue  # killed before the first save finished
        store = InMemoryEmbeddingStore.load(target)
        count = len(store)
        assert count > 0
        assert count % 50 == 0, count  # a whole state, never a partial one
        query = EmbeddingSearchRequest(Embedding([0.0, 1.0, 0.0, 0.0]), max_results=10**6)
        matches = store.search(query).matches
        assert {m.embedding_id for m in matches} == {f"s{i}" for i in range(count)}
        for match in matches:
            i = int(match.embedding_id[1:])
            assert match.embedded is not None
            assert match.embedded.text == f"text {i}"
            assert match.embedded.metadata["n"] == i
            np.testing.assert_array_equal(match.embedding.vector, [i, 1.0, 0.5, 0.25])


def test_kill_during_ingest_then_rerun_completes(tmp_path: Path) -> None:
    from ragloom.easy_rag.index import MANIFEST, RagIndex

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(60):
        (corpus / f"{i}.txt").write_text(f"note {i}: the kiln reached {i * 10} degrees", "utf-8")
    index_dir = tmp_path / "index"
    rng = random.Random(5)
    for _ in range(ROUNDS // 2):
        kill_after(INGEST, [str(index_dir), str(corpus)], rng.uniform(0.3, 2.0))
        if (index_dir / MANIFEST).exists():
            # The store is saved before the manifest: it holds at least the listed files.
            index = RagIndex.open(index_dir)
            assert len(index.store) >= len(index.files)
    subprocess.run(
        [sys.executable, "-c", INGEST, str(index_dir), str(corpus)],
        check=True,
        timeout=300,
        stdout=subprocess.DEVNULL,
    )
    index = RagIndex.open(index_dir)
    assert len(index.files) == 60
    assert len(index.store) == 60
