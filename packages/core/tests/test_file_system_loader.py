import os
import re
from pathlib import Path

import pytest

from ragloom.core import (
    DocumentLoadError,
    DocumentParseError,
    EmptyDocumentError,
    FileSystemDocumentLoader,
    InvalidArgumentError,
    InvalidArgumentTypeError,
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
    # no text is a skip, the rest are errors; each failure names its file once
    assert [Path(f.source).name for f in docs.skipped] == ["empty.txt"]
    assert {Path(f.source).name for f in docs.errors} == set(failed) - {"empty.txt"}
    for failure in docs.failures:
        assert str(failure).count(failure.source) == 1, str(failure)


def test_detected_charset_loads_non_utf8(tree: Path) -> None:
    docs = FileSystemDocumentLoader.load_documents(tree)
    assert docs[names(docs).index("latin.txt")].text == "café crème"


def test_strict_raises_first_failure(tree: Path) -> None:
    (tree / "0-empty.txt").write_bytes(b"")
    with pytest.raises(EmptyDocumentError, match="0-empty.txt"):
        FileSystemDocumentLoader.load_documents(tree, strict=True)


def project(root: Path) -> Path:
    """A project folder with what nobody wants indexed next to what they do."""
    files = {
        "README.md": "readme",
        "docs/guide.md": "guide",
        "docs/drafts/idea.md": "draft",
        "docs/build.log": "log",
        "docs/keep.log": "kept by a negation",
        "docs/.gitignore": "*.log\n!keep.log\n",
        ".gitignore": "dist/\nsecret.txt\n",
        "dist/bundle.md": "built",
        "secret.txt": "password",
        ".env": "API_KEY=secret",
        ".git/config": "[core]",
        ".github/workflow.md": "ci",
        "node_modules/pkg/README.md": "dependency",
        "venv/pyvenv.cfg": "home = /usr",
        "venv/lib/site.md": "virtualenv",
        "src/__pycache__/m.md": "cache",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def relative(root: Path, docs: list) -> list[str]:  # type: ignore[type-arg]
    return sorted(
        (Path(d.metadata["absolute_directory_path"]) / d.metadata["file_name"])
        .relative_to(root)
        .as_posix()
        for d in docs
    )


def test_hidden_vcs_dependencies_and_git_ignored_files_are_skipped(tmp_path: Path) -> None:
    root = project(tmp_path)
    docs = FileSystemDocumentLoader.load_documents_recursively(root, TextDocumentParser())
    assert relative(root, docs) == [
        "README.md",
        "docs/drafts/idea.md",
        "docs/guide.md",
        "docs/keep.log",
    ]
    flat = FileSystemDocumentLoader.load_documents(root, TextDocumentParser())
    assert relative(root, flat) == ["README.md"]  # not .env, .gitignore, secret.txt


def test_skip_ignored_false_reads_everything(tmp_path: Path) -> None:
    root = project(tmp_path)
    docs = FileSystemDocumentLoader.load_documents(
        root, TextDocumentParser(), recursive=True, skip_ignored=False
    )
    assert len(relative(root, docs)) == 16
    assert {".env", ".git/config", "secret.txt", "docs/build.log"} <= set(relative(root, docs))


def test_regex_and_exclude_next_to_glob(tmp_path: Path) -> None:
    root = project(tmp_path)
    parser = TextDocumentParser()
    by_regex = FileSystemDocumentLoader.load_documents_recursively(
        root, parser, regex=r"^docs/.*\.md$"
    )
    assert relative(root, by_regex) == ["docs/drafts/idea.md", "docs/guide.md"]
    compiled = FileSystemDocumentLoader.load_documents_recursively(
        root, parser, regex=re.compile(r"GUIDE", re.IGNORECASE)
    )
    assert relative(root, compiled) == ["docs/guide.md"]
    without_drafts = FileSystemDocumentLoader.load_documents_recursively(
        root, parser, glob="*.md", exclude="drafts/"
    )
    assert relative(root, without_drafts) == ["README.md", "docs/guide.md"]
    several = FileSystemDocumentLoader.load_documents_recursively(
        root, parser, exclude=["docs/**/*.md", "README.md"]
    )
    assert relative(root, several) == ["docs/keep.log"]


def test_a_bad_regex_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match=r"regex '\(unclosed' is not a valid"):
        FileSystemDocumentLoader.load_documents(tmp_path, regex="(unclosed")
    with pytest.raises(InvalidArgumentTypeError, match="regex must be a str .* got int: 5"):
        FileSystemDocumentLoader.load_documents(tmp_path, regex=5)  # type: ignore[arg-type]
