"""Which files `ragloom ingest` reads: hygiene defaults, .gitignore, --glob/--exclude."""

import json
from pathlib import Path

import pytest

from ragloom.core import plugins
from ragloom.core.loaders.file_selection import select_files
from ragloom.easy_rag.cli import EXIT_EMPTY, main

PNG = b"\x89PNG\r\n\x1a\n" + bytes(64)


def tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


@pytest.fixture
def easy_rag_parsers_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parsers ragloom-easy-rag installs, without the workspace's ragloom-parser-auto."""
    discover = plugins.providers
    parsers = tuple(
        ep
        for ep in discover(plugins.DOCUMENT_PARSERS)
        if ep.dist is None or ep.dist.name != "ragloom-parser-auto"
    )
    monkeypatch.setattr(
        plugins,
        "providers",
        lambda group: parsers if group == plugins.DOCUMENT_PARSERS else discover(group),
    )


def names(root: Path, **options: list[str]) -> list[str]:
    return [p.relative_to(root).as_posix() for p in select_files([root], **options)]


def test_hidden_vcs_dependencies_and_virtualenvs_are_skipped(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {
            "guide.md": "x",
            "sub/notes.txt": "x",
            ".env": "API_KEY=secret",
            ".git/config": "[core]",
            ".hidden/page.md": "x",
            "sub/.cache/blob.txt": "x",
            "node_modules/pkg/README.md": "x",
            "venv/pyvenv.cfg": "home = /usr",
            "venv/lib/site.py": "x",
            "src/__pycache__/m.pyc": "x",
        },
    )
    assert names(root) == ["guide.md", "sub/notes.txt"]
    assert select_files([root / ".env"]) == [root / ".env"]  # named explicitly: read


def test_gitignore_files_are_honoured_where_they_are(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {
            ".gitignore": "*.log\nbuild/\n!keep.log\n",
            "a.md": "x",
            "run.log": "x",
            "keep.log": "x",
            "build/out.md": "x",
            "docs/.gitignore": "draft-*\n",
            "docs/draft-1.md": "x",
            "docs/final.md": "x",
            "other/draft-2.md": "x",
        },
    )
    assert names(root) == ["a.md", "docs/final.md", "keep.log", "other/draft-2.md"]


def test_glob_and_exclude(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {"a.md": "x", "b.txt": "x", "guides/c.md": "x", "drafts/d.md": "x", "guides/e.txt": "x"},
    )
    assert names(root, include=["*.md"]) == ["a.md", "drafts/d.md", "guides/c.md"]
    assert names(root, include=["*.md"], exclude=["drafts/"]) == ["a.md", "guides/c.md"]
    assert names(root, include=["guides/**"], exclude=["*.txt"]) == ["guides/c.md"]


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such file or directory"):
        select_files([tmp_path / "nope"])


@pytest.mark.usefixtures("easy_rag_parsers_only")
def test_ingest_skips_unsupported_types_with_a_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tree(
        tmp_path / "corpus",
        {
            "lava.md": "Magma erupts as lava.",
            "photo.png": PNG,
            "skip/other.md": "Bread and yeast.",
            ".env": "OPENAI_API_KEY=sk-secret",
        },
    )
    index = root / "index"  # inside the corpus: never ingested itself
    argv = ["ingest", str(root), "--index", str(index), "--exclude", "skip/", "--json", "--quiet"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert [Path(p).name for p in report["added"]] == ["lava.md"]
    assert [Path(p).name for p in report["unsupported"]] == ["photo.png"]
    assert report["failures"] == []
    assert err.splitlines() == [
        "ragloom: skipped 1 file(s) of unsupported type (photo.png): "
        "pip install ragloom-parser-auto to read them"
    ]
    assert main([*argv, "--glob", "*.md"]) == 0  # a second run: the index stays out
    assert json.loads(capsys.readouterr().out)["unchanged"] == report["added"]


@pytest.mark.usefixtures("easy_rag_parsers_only")
def test_nothing_but_unsupported_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tree(tmp_path / "corpus", {"photo.png": PNG})
    assert main(["ingest", str(root), "--index", str(tmp_path / "index")]) == EXIT_EMPTY
    err = capsys.readouterr().err
    assert "pip install ragloom-parser-auto" in err
    assert "nothing to ingest" in err
