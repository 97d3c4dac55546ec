"""Two writers on one index: ``ragloom ingest --wait SECONDS`` queues behind the one that
holds the lock (real processes: a lock holder, and the ``ragloom`` command line)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ragloom.easy_rag.cli import EXIT_INDEX
from ragloom.easy_rag.index import RagIndex

HOLDER = """
import sys
from ragloom.easy_rag.index import RagIndex
with RagIndex.locked(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.readline()
"""


@contextmanager
def lock_held(index_dir: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holds the index's writer lock until the block ends."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(index_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        yield holder
    finally:
        holder.communicate("\n", timeout=30)


def ragloom_ingest(corpus: Path, index_dir: Path, *options: str) -> subprocess.Popen[str]:
    command = ["ingest", str(corpus), "--index", str(index_dir), "--quiet", *options]
    return subprocess.Popen(
        [sys.executable, "-m", "ragloom.easy_rag.cli", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def small_corpus(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(3):
        (corpus / f"{i}.txt").write_text(f"note {i}: the kiln reached {i * 100} degrees", "utf-8")
    return corpus


def test_ingest_waits_for_the_lock_then_runs(tmp_path: Path) -> None:
    corpus, index_dir = small_corpus(tmp_path), tmp_path / "index"
    with lock_held(index_dir):
        queued = ragloom_ingest(corpus, index_dir, "--wait", "300")
        time.sleep(12)  # past the default wait of 10 s: without --wait it would have failed
        assert queued.poll() is None, queued.communicate()
    out, err = queued.communicate(timeout=300)
    assert queued.returncode == 0, err
    assert "3 added" in out
    assert len(RagIndex.open(index_dir).files) == 3


def test_ingest_gives_up_after_wait_with_index_in_use(tmp_path: Path) -> None:
    corpus, index_dir = small_corpus(tmp_path), tmp_path / "index"
    with lock_held(index_dir):
        started = time.monotonic()
        refused = ragloom_ingest(corpus, index_dir, "--wait", "0.5")
        _, err = refused.communicate(timeout=300)
        elapsed = time.monotonic() - started
    assert refused.returncode == EXIT_INDEX
    assert "index in use by another ragloom process (waited 0.5 s" in err
    assert elapsed < 9  # not the default 10 s (includes loading the embedding model)


def test_wait_must_be_a_finite_number_of_seconds(tmp_path: Path) -> None:
    corpus = small_corpus(tmp_path)
    for bad in ("-1", "nan", "inf", "soon"):
        run = ragloom_ingest(corpus, tmp_path / "index", "--wait", bad)
        _, err = run.communicate(timeout=120)
        assert run.returncode == 2, (bad, err)
        assert "argument --wait: " in err
