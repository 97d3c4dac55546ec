"""RagIndex.ingest keeps the good files when one file fails in any way."""

from pathlib import Path

from ragloom.core import EmbeddingStoreIngestor
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
