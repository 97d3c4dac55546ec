"""Files with no text (0-byte, blank, images) are skipped and counted, not failures;
corrupt files still fail. The CLI, the index and the Python API agree."""

import json
import os
import struct
import zlib
from pathlib import Path

import pytest

from ragloom.core import EmbeddingStoreIngestor, FileSystemDocumentLoader
from ragloom.easy_rag.cli import EXIT_FAILURE, main
from ragloom.easy_rag.index import RagIndex
from ragloom.testkit import FakeEmbeddingModel

DOCS = Path(__file__).resolve().parents[3] / "docs"
CORRUPT_PDF = b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 9 0 R >>\ntrailer\n%%EOF"


def png() -> bytes:
    """A real 1x1 PNG image."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
        + chunk(b"IEND", b"")
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "good.txt").write_text("Bread dough needs yeast and a hot oven.", encoding="utf-8")
    (root / "empty.txt").write_bytes(b"")
    (root / "blank.md").write_text("  \n\n ", encoding="utf-8")
    (root / "plot.png").write_bytes(png())
    return root


def test_cli_skips_no_text_files_and_exits_0(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["ingest", str(folder), "--index", str(tmp_path / "index"), "--quiet"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "1 added" in out
    assert "0 failed, 3 skipped (no text)" in out
    skipped = sorted(line for line in err.splitlines() if line.startswith("  skipped: "))
    assert [line.split(": ")[1] for line in skipped] == [
        str(folder / name) for name in ("blank.md", "empty.txt", "plot.png")
    ]
    assert "no text found (detected image/png)" in skipped[2]
    assert len(RagIndex.open(tmp_path / "index").files) == 1


def test_corrupt_file_still_fails_and_names_itself_once(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corrupt = folder / "broken.pdf"
    corrupt.write_bytes(CORRUPT_PDF)
    code = main(["ingest", str(folder), "--index", str(tmp_path / "index"), "--quiet"])
    out, err = capsys.readouterr()
    assert code == EXIT_FAILURE
    assert "1 failed, 3 skipped (no text)" in out
    (failed,) = [line for line in err.splitlines() if line.startswith("  failed: ")]
    assert failed.count(str(corrupt)) == 1, failed  # was "path: path: reason"


def test_json_lists_skipped_with_reason(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["ingest", str(folder), "--index", str(tmp_path / "index"), "--json", "--quiet"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["failures"] == []
    assert sorted(Path(s["source"]).name for s in report["skipped"]) == [
        "blank.md",
        "empty.txt",
        "plot.png",
    ]
    assert all(s["reason"].startswith(s["source"] + ": ") for s in report["skipped"])


def test_python_api_reports_the_same(folder: Path) -> None:
    loaded = FileSystemDocumentLoader.load_documents(folder)
    assert [d.metadata.get("file_name") for d in loaded] == ["good.txt"]
    assert sorted(Path(f.source).name for f in loaded.skipped) == [
        "blank.md",
        "empty.txt",
        "plot.png",
    ]
    assert loaded.errors == []
    (folder / "broken.pdf").write_bytes(CORRUPT_PDF)
    loaded = FileSystemDocumentLoader.load_documents(folder)
    assert len(loaded.skipped) == 3
    assert [Path(f.source).name for f in loaded.errors] == ["broken.pdf"]
    assert len(loaded.failures) == 4  # every source not loaded, as before


def test_the_repository_docs_ingest_without_failures() -> None:
    """``ragloom ingest docs``: docs/ holds PNG plots, which are skipped, not failures."""
    assert list(DOCS.rglob("*.png")), "the check needs docs/ to hold images"
    index = RagIndex.create(DOCS / "never-saved", "fake")
    report = index.ingest([DOCS], EmbeddingStoreIngestor(index.mirrored, FakeEmbeddingModel()))
    assert report.failures == []
    assert {Path(f.source).suffix for f in report.skipped} >= {".png"}
    assert report.added


def test_json_shows_non_utf8_file_names_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    name = os.fsdecode(b"caf\xe9.txt")  # a real file name that is not UTF-8
    (root / name).write_text("Coffee beans are roasted.", encoding="utf-8")
    (root / os.fsdecode(b"vide\xff.txt")).write_bytes(b"")
    code = main(["ingest", str(root), "--index", str(tmp_path / "index"), "--json", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0
    out.encode("utf-8")  # no lone surrogates
    report = json.loads(out)
    assert report["added"] == [f"{root}/caf\\xe9.txt"]  # the text output's escaped form
    assert [s["source"] for s in report["skipped"]] == [f"{root}/vide\\xff.txt"]
    assert "vide\\xff.txt" in report["skipped"][0]["reason"]
