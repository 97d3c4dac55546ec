"""The benchmarks page (scripts/bench/run_suite.py's ``markdown``) is a function of its
results: built twice, or from a JSON round trip of them, it is the same text, and a
``--merge`` keeps the context (machine, Python, versions) the other parts ran in."""

from __future__ import annotations

import argparse
import copy
import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
VERSIONS = {"ragloom-core": "0.1.0", "numpy": "2.4.6"}
# The images plot() makes for the parts below, in its order.
IMAGES = ["img/benchmarks/splitting.png", "img/benchmarks/embedding.png"]


@pytest.fixture(scope="module")
def suite(bench_module: Callable[[str], ModuleType]) -> ModuleType:
    return bench_module("run_suite")


def _run(seconds: float, **extra: Any) -> dict[str, Any]:
    return {
        "mode": "full",
        "sizes": None,
        "rounds": None,
        "load_before": 1.0,
        "load_after": 2.0,
        "seconds": seconds,
        "date": "2026-11-27",
        **extra,
    }


def _committed() -> dict[str, Any]:
    results: dict[str, Any] = json.loads((ROOT / "docs/benchmarks/results.json").read_text())
    return results


@pytest.fixture
def small() -> dict[str, Any]:
    """Four parts of the committed results, their runs in an order that is not the
    sections' (bm25 ran before ann), the embedding section followed by another."""
    committed = _committed()
    parts = ("bm25", "ann", "embedding", "qdrant")
    return {
        "meta": {
            "cpus": 2,
            "threads": 2,
            "python": "3.11.7",
            "peer_limit": 100_000,
            "versions": dict(VERSIONS),
            "runs": {
                "bm25": [_run(98)],
                "embedding": [_run(227)],
                "ann": [_run(44)],
                "qdrant": [_run(579)],
            },
        },
        **{part: committed[part] for part in parts},
    }


def test_the_page_is_the_same_built_twice_and_from_a_round_trip(
    suite: ModuleType, small: dict[str, Any]
) -> None:
    page = suite.markdown(small, IMAGES)
    assert suite.markdown(small, IMAGES) == page
    assert suite.markdown(json.loads(json.dumps(small, indent=1)), IMAGES) == page
    lines = page.splitlines()
    run_lines = [
        line.split()[0] for line in lines if line.startswith("    ") and " s (load" in line
    ]
    assert run_lines == ["bm25", "embedding", "ann", "qdrant"]  # as the runs were recorded
    plot = lines.index("![embedding](img/benchmarks/embedding.png)")
    assert lines[plot + 1 : plot + 4] == ["", "", "## Qdrant store against qdrant-client"]
    assert "Versions: ragloom-core 0.1.0, numpy 2.4.6." in lines


def test_the_committed_page_is_what_its_results_make(suite: ModuleType) -> None:
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    images = [
        f"img/benchmarks/{name}.png"
        for name in ("ingest-vs-n", "search-vs-n", "memory-vs-n", "splitting", "embedding")
    ]
    assert suite.markdown(_committed(), images) + "\n" == page


def _args(only: str, merge: bool = True, quick: bool = False) -> argparse.Namespace:
    return argparse.Namespace(only=only, merge=merge, quick=quick, threads=2)


def test_a_merge_keeps_the_recorded_context_and_names_what_differs(
    suite: ModuleType, small: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(suite, "versions", lambda: {**VERSIONS, "numpy": "9.9.9"})
    old = copy.deepcopy(small["meta"])
    before = suite.markdown(small, IMAGES).splitlines()
    runs = old["runs"]
    runs["ann"] = [_run(50, context=suite.run_context(_args("ann")))]
    meta = suite.merged_meta(old, runs, _args("ann", quick=True))
    assert meta["versions"] == VERSIONS
    assert meta["peer_limit"] == 100_000  # the stores did not run
    after = suite.markdown({**small, "meta": meta}, IMAGES).splitlines()
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert changed == [
        (
            "    ann 2026-11-27, `full`, 44 s (load average 1.0 before, 2.0 after);",
            "    ann 2026-11-27, `full`, 50 s (load average 1.0 before, 2.0 after; numpy 9.9.9);",
        )
    ]


def test_a_run_that_is_not_a_merge_records_its_own_context(
    suite: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(suite, "versions", lambda: {**VERSIONS, "numpy": "9.9.9"})
    old = {"cpus": 64, "python": "3.9.0", "threads": 8, "versions": VERSIONS, "peer_limit": 1}
    meta = suite.merged_meta(old, {}, _args("stores,ann", merge=False, quick=True))
    assert meta["versions"]["numpy"] == "9.9.9"
    assert (meta["threads"], meta["peer_limit"]) == (2, 30_000)
    merged = suite.merged_meta(old, {}, _args("stores,ann", quick=True))
    assert (merged["versions"], merged["python"], merged["peer_limit"]) == (
        VERSIONS,
        "3.9.0",
        30_000,
    )
