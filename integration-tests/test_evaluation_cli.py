"""The evaluation command on the installed defaults: with no model or splitter passed, it
finds the default embedding model (embedding-onnx) and document splitter (easy-rag) as
plugins, so this runs beside every package, not with core alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragloom.core.evaluation.cli import main

DATA = Path(__file__).resolve().parent.parent / "packages/core/tests/data/kestrel-support"


def test_one_json_document_with_modes_and_settings(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [str(DATA), "--mode", "keyword", "--mode", "hybrid", "--fusion", "rrf"]
    assert main([*argv, "--fusion", "weighted", "--max-results", "10", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)  # one document, not several
    assert document["settings"]["max_results"] == 10
    assert document["settings"]["stemmer"] == "english"
    assert set(document["indexing_seconds"]) == {"keyword", "dense"}
    assert [(r["mode"], r.get("fusion")) for r in document["results"]] == [
        ("keyword", None),
        ("hybrid", "rrf"),
        ("hybrid", "weighted"),
    ]
    for result in document["results"]:
        assert "recall@100" not in result["metrics"]  # only k <= --max-results
        assert "recall@10" in result["metrics"]
        assert result["query_seconds"] >= 0
        assert len(result["queries"]) == 40
