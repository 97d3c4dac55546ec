"""Every bad invocation ends with one line on stderr and a documented exit code."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ragloom.easy_rag import cli
from ragloom.easy_rag.cli import (
    EXIT_BROKEN_PIPE,
    EXIT_CODES,
    EXIT_EMPTY,
    EXIT_FAILURE,
    EXIT_INDEX,
    EXIT_USAGE,
    main,
)

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("errors")
    for number in range(40):
        (root / f"note{number}.md").write_text(f"Note {number} about lava, ash and magma.")
    index = str(root / "index")
    assert main(["ingest", str(root), "--index", index]) == 0
    return index


@pytest.fixture
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Validation comes before the expensive work: loading the model fails the test."""

    def forbidden() -> None:
        raise AssertionError("the embedding model was loaded before validation")

    monkeypatch.setattr(cli, "_model", forbidden)


def one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str], code: int) -> str:
    assert main(argv) == code
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.splitlines()
    assert "Traceback" not in line
    return line


@pytest.mark.usefixtures("no_model")
@pytest.mark.parametrize("k", ["0", "-3", "two"])
def test_bad_k(k: str, capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_error(capsys, ["query", "lava", "-k", k], EXIT_USAGE)
    assert line.startswith("ragloom query: argument -k: ")
    assert line.endswith("(see `ragloom query --help`)")


@pytest.mark.usefixtures("no_model")
@pytest.mark.parametrize("command", ["ingest", "query", "ask"])
def test_index_pointing_at_a_file(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "doc.md").write_text("text")
    target = tmp_path / "index.json"
    target.write_text("{}")
    argv = [command, str(tmp_path / "doc.md") if command == "ingest" else "lava"]
    line = one_line_error(capsys, [*argv, "--index", str(target)], EXIT_INDEX)
    assert "is a file, not an index directory; pass a directory" in line


@pytest.mark.usefixtures("no_model")
def test_ingest_missing_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_error(capsys, ["ingest", str(tmp_path / "nope")], EXIT_USAGE)
    assert "no such file or directory; give files or folders to ingest" in line


def test_ingest_empty_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    argv = ["ingest", str(tmp_path / "empty"), "--index", str(tmp_path / "i")]
    assert "nothing to ingest" in one_line_error(capsys, argv, EXIT_EMPTY)


@pytest.mark.parametrize("layout", ["missing", "empty"])
def test_eval_on_a_missing_or_empty_directory(
    layout: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    if layout == "empty":
        data.mkdir()
    line = one_line_error(capsys, ["eval", str(data)], EXIT_USAGE)
    assert "corpus.jsonl" in line
    assert "needs a BEIR-layout data set" in line


@pytest.mark.usefixtures("no_model")
def test_bad_filter(index: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["query", "lava", "--mode", "keyword", "--index", index, "--filter", "file_name =="]
    one_line_error(capsys, argv, EXIT_USAGE)


def test_missing_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_error(capsys, ["ask", "lava", "--index", str(tmp_path / "no")], EXIT_INDEX)
    assert "ragloom ingest" in line


def test_unknown_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert "(see `ragloom --help`)" in one_line_error(capsys, ["frobnicate"], EXIT_USAGE)


def test_a_closed_pipe_ends_quietly(index: str) -> None:
    argv = ["query", "lava", "--mode", "keyword", "-k", "40", "--index", index]
    process = subprocess.Popen(
        [sys.executable, "-m", "ragloom.easy_rag.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    process.stdout.close()  # like `| head` exiting before ragloom writes
    assert process.wait(timeout=120) == EXIT_BROKEN_PIPE
    assert process.stderr.read() == b""


@pytest.mark.usefixtures("no_model")
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--mode", "keyword", "--min-score", "0.5"], "does not apply to --mode keyword"),
        (["--min-score", "3"], "outside 0-1"),
    ],
)
def test_min_score_refused_where_meaningless(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert message in one_line_error(capsys, ["query", "lava", *argv], EXIT_USAGE)


def test_hybrid_scores_read_0_to_1_and_min_score_applies(
    index: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["query", "lava ash magma", "--index", index, "-k", "5", "--json"]) == 0
    scores = [hit["score"] for hit in json.loads(capsys.readouterr().out)]
    assert 0.0 < min(scores) <= max(scores) <= 1.0
    assert max(scores) > 0.5  # normalised: the best passage is near the top of both lists
    threshold = sorted(scores)[len(scores) // 2]
    argv = ["query", "lava ash magma", "--index", index, "-k", "5"]
    assert main([*argv, "--min-score", str(threshold), "--json"]) == 0
    kept = [hit["score"] for hit in json.loads(capsys.readouterr().out)]
    assert kept == [s for s in scores if s >= threshold]
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith("(scores: fused score, 0-1")


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("query", "text what to look for, in your own words"),
        ("query", "--index INDEX index directory (default .ragloom-index)"),
        ("ask", "--index INDEX index directory (default .ragloom-index)"),
        ("ingest", "--index INDEX index directory (default .ragloom-index)"),
        ("plugins", "--json machine-readable output"),
    ],
)
def test_every_argument_has_help(
    command: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "--help"]) == 0
    assert expected in " ".join(capsys.readouterr().out.split())


@pytest.mark.usefixtures("no_model")
@pytest.mark.parametrize("part", ["store", "keywords"])
def test_an_unreadable_index_is_an_index_error(
    part: str, index: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A damaged store or keyword index exits 3 naming the file (it was 2, a usage error)."""
    damaged = tmp_path / "index"
    shutil.copytree(index, damaged)
    (damaged / part / "manifest.json").write_text("garbage")
    argv = ["query", "lava", "--mode", "keyword", "--index", str(damaged)]
    line = one_line_error(capsys, argv, EXIT_INDEX)
    assert f"unreadable index: {damaged / part / 'manifest.json'}: " in line
    assert f"remove {damaged}, then `ragloom ingest`" in line


def test_the_exit_codes_are_listed_once_in_help_and_quoted_in_the_readme(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--help"]) == 0
    shown = " ".join(capsys.readouterr().out.split("exit codes:")[1].split())
    readme = " ".join(README.read_text(encoding="utf-8").split())
    codes = {EXIT_FAILURE, EXIT_USAGE, EXIT_INDEX, EXIT_EMPTY, EXIT_BROKEN_PIPE}
    assert codes <= set(EXIT_CODES)
    for code, meaning in EXIT_CODES.items():
        assert f"{code} {meaning}" in shown
        assert f"| {code} | {meaning} |" in readme
    assert sorted(EXIT_CODES) == [0, 1, 2, 3, 4, 5, 70, 130, 141]
