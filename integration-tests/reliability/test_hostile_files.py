"""Hostile files, generated at test time: each fails alone with a RagloomError naming it,
and the good files of the same batch are kept."""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from ragloom.core import EmbeddingStoreIngestor, FileSystemDocumentLoader, RagloomError
from ragloom.core.parsers.text import detect_charset
from ragloom.easy_rag.index import RagIndex
from ragloom.parsers.office import OfficeDocumentParser
from ragloom.testkit import FakeEmbeddingModel

GOOD = "Bread dough needs yeast, time to rise and a hot oven."


def docx_bomb(paragraphs: int) -> bytes:
    """A minimal DOCX whose body repeats one paragraph (tiny zipped, huge unzipped)."""
    body = "<w:p><w:r><w:t>" + "boom " * 20 + "</w:t></w:r></w:p>"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
            'content-types"/>',
        )
        archive.writestr(
            "word/document.xml",
            '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
            f"<w:body>{body * paragraphs}</w:body></w:document>",
        )
    return out.getvalue()


HOSTILE: dict[str, Callable[[], bytes]] = {
    "deep.html": lambda: ("<html><body>" + "<div>" * 30_000 + "x" + "</div>" * 30_000).encode(),
    # Deeper than Python's recursion limit, within max_depth: converted.
    "deep_spans.html": lambda: ("<p>" + "<span>" * 1_000 + "x").encode(),
    "unterminated_tag.html": lambda: b"<html><body><a" + b"b" * 500_000,
    "bomb.docx": lambda: docx_bomb(1_000_000),  # ~135 MB unzipped, ~150 kB zipped
    "truncated.docx": lambda: docx_bomb(10)[:200],
    "binary.txt": lambda: bytes(range(256)) * 64,
    "empty.md": lambda: b"",
}


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "good.txt").write_text(GOOD, encoding="utf-8")
    for name, make in HOSTILE.items():
        (root / name).write_bytes(make())
    (root / os.fsdecode(b"name_\xff.txt")).write_text("a file whose name is not UTF-8")
    return root


def test_every_hostile_file_fails_alone_naming_itself(corpus: Path) -> None:
    loaded = FileSystemDocumentLoader.load_documents(corpus)
    failed = {Path(f.source).name: f.error for f in loaded.failures}
    assert set(HOSTILE) - {"deep_spans.html"} <= set(failed)
    for name, error in failed.items():
        assert isinstance(error, RagloomError)
        assert name in str(error)
    texts = {d.metadata["file_name"]: d.text for d in loaded}
    assert texts["good.txt"] == GOOD
    assert texts["deep_spans.html"] == "x"
    assert "name_\\xff.txt" in texts


def test_ingest_keeps_the_good_files_and_is_idempotent(corpus: Path, tmp_path: Path) -> None:
    index = RagIndex.open_or_create(tmp_path / "index", "fake")
    ingestor = EmbeddingStoreIngestor(index.mirrored, FakeEmbeddingModel())
    report = index.ingest([corpus], ingestor)
    assert {Path(p).name for p in report.added} >= {"good.txt", "deep_spans.html"}
    assert report.failures
    index.save()
    again = RagIndex.open(tmp_path / "index")
    second = again.ingest([corpus], EmbeddingStoreIngestor(again.mirrored, FakeEmbeddingModel()))
    assert not second.added
    assert len(again.store) == len(index.store)


def test_office_bomb_is_refused_from_the_zip_directory() -> None:
    with pytest.raises(RagloomError, match=r"bomb.docx: unzips to"):
        OfficeDocumentParser().parse(docx_bomb(1_000_000), source="bomb.docx")


@pytest.mark.parametrize("charset", ["utf-16-le", "utf-16-be"])
def test_utf16_without_bom(charset: str) -> None:
    assert detect_charset(("plain ascii\n" * 50).encode(charset)) == charset
