"""Progress reporting: LineProgress throttles per phase; the ingestor and the evaluation
runner report each phase through it."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from ragloom.core import Document, EmbeddingStoreIngestor, InMemoryEmbeddingStore
from ragloom.core.document_splitters import recursive
from ragloom.core.evaluation import evaluate, load_beir
from ragloom.core.evaluation.cli import Configuration, build_indexes, main, retriever_for
from ragloom.core.progress import LineProgress, phase
from ragloom.testkit import FakeEmbeddingModel

DATA = Path(__file__).parent / "data" / "kestrel-support"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_line_progress_prints_first_last_and_one_line_per_interval() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = LineProgress(stream, interval=5.0, prefix="x", clock=clock)
    for done in range(1, 101):
        clock.now = done * 0.1  # 10 s in all: first, one at 5.1 s, one at 10.1 s... last
        progress("embedding", done, 100)
    progress("embedding", 100, 100)  # repeated final report: shown once
    progress("evaluating", 0, 3)
    assert stream.getvalue().splitlines() == [
        "x: embedding 1/100 (1%)",
        "x: embedding 51/100 (51%)",
        "x: embedding 100/100 (100%)",
        "x: evaluating 0/3 (0%)",
    ]


def test_phase_adapts_a_phase_reporter_to_a_callback() -> None:
    seen: list[tuple[str, int, int]] = []
    callback = phase(lambda *args: seen.append(args), "reading")
    assert callback is not None
    callback(2, 5)
    assert seen == [("reading", 2, 5)]
    assert phase(None, "reading") is None


def test_ingestor_reports_splitting_per_document_and_embedding_per_batch() -> None:
    split: list[tuple[int, int]] = []
    embedded: list[tuple[int, int]] = []
    ingestor = EmbeddingStoreIngestor(
        InMemoryEmbeddingStore(),
        FakeEmbeddingModel(8),
        document_splitter=recursive(40, 0),
        batch_size=4,
        on_split=lambda d, t: split.append((d, t)),
        on_progress=lambda d, t: embedded.append((d, t)),
    )
    documents = [Document(f"Text number {i}. " * 6, {"document_id": str(i)}) for i in range(3)]
    ingestor.ingest(documents)
    assert split == [(1, 3), (2, 3), (3, 3)]
    assert embedded[-1][0] == embedded[-1][1] > 3  # every segment embedded, in batches


def test_evaluation_reports_embedding_and_each_query() -> None:
    dataset = load_beir(DATA)
    phases: list[tuple[str, int, int]] = []
    indexes = build_indexes(
        dataset, embedding_model=FakeEmbeddingModel(16), on_progress=lambda *a: phases.append(a)
    )
    assert phases[-1] == ("embedding", 48, 48)
    queries: list[tuple[int, int]] = []
    retriever = retriever_for(indexes, Configuration("keyword"), max_results=10)
    evaluate(retriever, dataset, k_values=(1, 10), on_progress=lambda d, t: queries.append((d, t)))
    assert queries == [(n, 40) for n in range(1, 41)]


def test_evaluation_command_prints_progress_lines_unless_quiet(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([str(DATA), "--mode", "keyword", "--json"], prog="ragloom eval") == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "ragloom eval: evaluating keyword 1/40 (2%)"
    assert err[-1] == "ragloom eval: evaluating keyword 40/40 (100%)"
    assert main([str(DATA), "--mode", "keyword", "--json", "--quiet"]) == 0
    assert capsys.readouterr().err == ""
