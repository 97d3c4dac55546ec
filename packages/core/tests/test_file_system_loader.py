import os
from pathlib import Path

import pytest

from ragloom.core import (
    DocumentLoadError,
    DocumentParseError,
    EmptyDocumentError,
    FileSystemDocumentLoader,
    TextDocumentParser,
)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text("alpha text", encoding="utf-8")
    (tmp_path / "b.md").write_text("# beta\n\nbody", encoding="utf-8")
    (tmp_path / "latin.txt").write_bytes("café crème".encode("cp1252"))
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "c.txt").write_text("gamma", encoding="utf-8")
    (sub / "deeper").mkdir()
    (sub / "deeper" / "d.md").write_text("delta", encoding="utf-8")
    return tmp_path


def names(docs: list) -> list[str]:  # type: ignore[type-arg]
    return [d.metadata["file_name"] for d in docs]


def test_load_document_sets_metadata(tree: Path) -> None:
    doc = FileSystemDocumentLoader.load_document(tree / "a.txt", TextDocumentParser())
    assert doc.text == "alpha text"
    assert doc.metadata["file_name"] == "a.txt"
    assert doc.metadata["absolute_directory_path"] == str(tree.absolute())


def test_load_document_without_parser_uses_text_fallback(tree: Path) -> None:
    assert FileSystemDocumentLoader.load_document(str(tree / "latin.txt")).text == "café crème"


def test_missing_file_and_directory(tree: Path) -> None:
    with pytest.raises(DocumentLoadError, match="nope.txt"):
        FileSystemDocumentLoader.load_document(tree / "nope.txt")
    with pytest.raises(DocumentLoadError, match="sub"):
        FileSystemDocumentLoader.load_document(tree / "sub")
    with pytest.raises(DocumentLoadError, match="a.txt"):
        FileSystemDocumentLoader.load_documents(tree / "a.txt")


def test_load_documents_flat_sorted(tree: Path) -> None:
    docs = FileSystemDocumentLoader.load_documents(tree)
    assert names(docs) == ["a.txt", "b.md", "latin.txt"]
    assert docs.failures == []


def test_load_documents_recursive_and_glob(tree: Path) -> None:
    docs = FileSystemDocumentLoader.load_documents(tree, recursive=True)
    assert sorted(names(docs)) == ["a.txt", "b.md", "c.txt", "d.md", "latin.txt"]
    md = FileSystemDocumentLoader.load_documents_recursively(tree, glob="*.md")
    assert sorted(names(md)) == ["b.md", "d.md"]
    only_sub = FileSystemDocumentLoader.load_documents(tree, recursive=True, glob="sub/*.txt")
    assert names(only_sub) == ["c.txt"]
    flat_md = FileSystemDocumentLoader.load_documents(tree, glob="*.md")
    assert names(flat_md) == ["b.md"]


def _make_unreadable(path: Path) -> None:
    """A file whose read fails even for root: a link to /proc/self/mem (EIO at offset 0)."""
    os.symlink("/proc/self/mem", path)


def test_bad_files_are_reported_without_losing_good_ones(tree: Path) -> None:
    (tree / "empty.txt").write_bytes(b"")
    (tree / "binary.bin").write_bytes(bytes(range(256)) * 8)
    (tree / "bad-utf8.txt").write_bytes(b"ok \xff\xfe broken")
    _make_unreadable(tree / "unreadable.txt")
    docs = FileSystemDocumentLoader.load_documents(tree, TextDocumentParser("utf-8"))
    assert names(docs) == ["a.txt", "b.md"]
    failed = {Path(f.source).name: f.error for f in docs.failures}
    assert set(failed) == {"bad-utf8.txt", "binary.bin", "empty.txt", "latin.txt", "unreadable.txt"}
    assert isinstance(failed["empty.txt"], EmptyDocumentError)
    assert isinstance(failed["bad-utf8.txt"], DocumentParseError)
    assert isinstance(failed["unreadable.txt"], DocumentLoadError)
    assert "unreadable.txt" in str(failed["unreadable.txt"])
    assert "bad-utf8.txt" in str(failed["bad-utf8.txt"])


def test_detected_charset_loads_non_utf8(tree: Path) -> None:
    docs = FileSystemDocumentLoader.load_documents(tree)
    assert docs[names(docs).index("latin.txt")].text == "café crème"


def test_strict_raises_first_failure(tree: Path) -> None:
    (tree / "0-empty.txt").write_bytes(b"")
    with pytest.raises(EmptyDocumentError, match="0-empty.txt"):
        FileSystemDocumentLoader.load_documents(tree, strict=True)
