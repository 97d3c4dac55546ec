"""What `ragloom ingest` shows while it works: progress per phase (bars on a terminal,
lines in a pipe), and library warnings collected per file instead of printed."""

from __future__ import annotations

import io
import json
import logging
import warnings
from pathlib import Path

import pytest

from ragloom.easy_rag.cli import main
from ragloom.easy_rag.progress import BarProgress, captured_warnings
from ragloom.parsers.pdf.testing import make_pdf


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "lava.md").write_text("Magma rises and erupts as lava.", encoding="utf-8")
    (root / "bread.txt").write_text("Dough needs yeast and a hot oven.", encoding="utf-8")
    # a PDF whose second page is a scan: the parser keeps the text and logs a warning
    (root / "mixed.pdf").write_bytes(make_pdf(["Sails and the jib.", ""], image_pages=[1]))
    return root


def test_ingest_in_a_pipe_prints_one_line_per_phase(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ingest", str(corpus), "--index", str(tmp_path / "index")]) == 0
    err = capsys.readouterr().err.splitlines()
    for line in ("reading 3/3 (100%)", "splitting 3/3 (100%)", "embedding 3/3 (100%)"):
        assert f"ragloom: {line}" in err
    assert err.index("ragloom: reading 3/3 (100%)") < err.index("ragloom: embedding 3/3 (100%)")


def test_parser_warnings_are_reported_with_their_file_not_printed(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = str(tmp_path / "index")
    assert main(["ingest", str(corpus), "--index", index, "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("ingested into")
    # no raw log line, no progress: the summary only, naming the file once
    assert err.splitlines() == [
        f"  warning: {corpus / 'mixed.pdf'}: no text on page(s) 2 (scanned or blank)"
    ]
    (corpus / "mixed.pdf").write_bytes(make_pdf(["Changed sails.", ""], image_pages=[1]))
    assert main(["ingest", str(corpus), "--index", index, "--quiet", "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    (entry,) = json.loads(out)["warnings"]
    assert Path(entry["source"]).name == "mixed.pdf"
    assert "no text on page(s) 2" in entry["warning"]


def test_captured_warnings_collects_warnings_and_log_records(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with captured_warnings() as caught:
        warnings.warn("deprecated thing", DeprecationWarning, stacklevel=1)
        logging.getLogger("somelib").warning("odd input %d", 7)
        logging.getLogger("somelib").info("not a warning")
    assert caught == ["somelib: odd input 7", "DeprecationWarning: deprecated thing"]
    assert capsys.readouterr().err == ""


def test_bar_progress_shows_one_bar_per_phase() -> None:
    stream = io.StringIO()
    bar = BarProgress(stream)
    bar("reading", 1, 2)
    bar("reading", 2, 2)
    bar("embedding", 5, 5)
    bar.close()
    shown = stream.getvalue()
    assert "reading: 100%" in shown
    assert "2/2 [" in shown
    assert "embedding: 100%" in shown
    assert "5/5 [" in shown
