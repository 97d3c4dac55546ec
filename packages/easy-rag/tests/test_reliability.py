"""RagIndex.ingest keeps the good files when one file fails in any way."""

import subprocess
import sys
from pathlib import Path

import pytest

from ragloom.core import EmbeddingStoreIngestor, RagIndexError
from ragloom.easy_rag import cli
from ragloom.easy_rag.index import IngestReport, RagIndex
from ragloom.testkit import FakeEmbeddingModel


def ingest(root: Path, index_dir: Path) -> tuple[RagIndex, IngestReport]:
    index = RagIndex.open_or_create(index_dir, "fake")
    report = index.ingest([root], EmbeddingStoreIngestor(index.mirrored, FakeEmbeddingModel()))
    return index, report


def test_deeply_nested_html_fails_alone(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "good.txt").write_text("Bread dough needs yeast and a hot oven.", encoding="utf-8")
    (root / "deep.html").write_text(
        "<html><body>" + "<div>" * 20_000 + "x" + "</div>" * 20_000, encoding="utf-8"
    )
    index, report = ingest(root, tmp_path / "index")
    assert [Path(f).name for f in report.added] == ["good.txt"]
    (failure,) = report.failures
    assert "deep.html" in str(failure.error)
    assert len(index.store) == 1


def test_second_writer_gets_index_in_use(tmp_path: Path) -> None:
    index_dir = tmp_path / "index"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from ragloom.easy_rag.index import RagIndex\n"
            f"with RagIndex.locked({str(index_dir)!r}):\n"
            "    print('held', flush=True)\n"
            "    sys.stdin.readline()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        with (
            pytest.raises(RagIndexError, match="index in use"),
            RagIndex.locked(index_dir, wait=0.2),
        ):
            pass
    finally:
        holder.communicate("\n", timeout=30)
    with RagIndex.locked(index_dir, wait=0.2):  # released when the holder is done
        pass


def test_cli_ingest_holds_the_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []

    def ingest_while_checking(*args: object, **kwargs: object) -> None:
        try:
            with RagIndex.locked(tmp_path / "index", wait=0):
                seen.append(False)
        except RagIndexError:
            seen.append(True)

    monkeypatch.setattr(cli, "_ingest_locked", ingest_while_checking)
    (tmp_path / "docs").mkdir()
    cli.main(["ingest", str(tmp_path / "docs"), "--index", str(tmp_path / "index")])
    assert seen == [True]


def test_symlinked_paths_do_not_duplicate(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.txt").write_text("Volcanoes erupt lava and ash.", encoding="utf-8")
    (root / "also_a.txt").symlink_to(root / "a.txt")
    link = tmp_path / "link"
    link.symlink_to(root, target_is_directory=True)
    index = RagIndex.open_or_create(tmp_path / "index", "fake")
    ingestor = EmbeddingStoreIngestor(index.mirrored, FakeEmbeddingModel())
    first = index.ingest([root], ingestor)
    second = index.ingest([link], ingestor)
    assert len(first.added) == 1
    assert second.unchanged == first.added
    assert not second.added
    assert not second.removed
    assert len(index.store) == 1
