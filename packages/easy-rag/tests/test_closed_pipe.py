"""A reader that closes the pipe early (``ragloom ingest docs 2>&1 | head -1``) silences
the output, never the ingest: the index is saved and the exit code is the ingest's."""

import os
import subprocess
import sys
from pathlib import Path

from ragloom.easy_rag.index import RagIndex

CLI = [sys.executable, "-m", "ragloom.easy_rag.cli"]


def corpus(root: Path) -> Path:
    root.mkdir()
    for number in range(3):
        (root / f"note{number}.txt").write_text(f"Note {number} about sailing.", encoding="utf-8")
    return root


def test_ingest_into_a_closed_pipe_saves_the_index(tmp_path: Path) -> None:
    docs, index = corpus(tmp_path / "docs"), tmp_path / "index"
    read, write = os.pipe()
    os.close(read)  # the reader has gone before the first progress line
    try:
        done = subprocess.run(
            [*CLI, "ingest", str(docs), "--index", str(index)],
            stdout=write,
            stderr=write,
            timeout=300,
        )
    finally:
        os.close(write)
    assert done.returncode == 0
    assert len(RagIndex.open(index).files) == 3


def test_head_reads_the_first_line_and_the_ingest_completes(tmp_path: Path) -> None:
    docs, index = corpus(tmp_path / "docs"), tmp_path / "index"
    ingest = subprocess.Popen(
        [*CLI, "ingest", str(docs), "--index", str(index), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert ingest.stdout is not None
    first = ingest.stdout.readline()
    ingest.stdout.close()  # as `| head -1` does
    assert ingest.wait(timeout=300) == 0
    assert first.startswith(b"ragloom: reading")
    assert len(RagIndex.open(index).files) == 3
