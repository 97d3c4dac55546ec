"""Retrieval evaluation: BEIR loading, metric values, the runner and the command line."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from ragloom.core import Content, Query, TextSegment
from ragloom.core.evaluation import (
    DOC_ID,
    EvaluationDataError,
    evaluate,
    load_beir,
    mrr_at_k,
    ndcg_at_k,
    recall_at_k,
)
from ragloom.core.evaluation.cli import (
    Configuration,
    build_indexes,
    build_retriever,
    compare,
    main,
)
from ragloom.core.retrievers.bm25 import BM25ContentRetriever
from ragloom.core.retrievers.hybrid import HybridContentRetriever
from ragloom.testkit import FakeEmbeddingModel

DATA = Path(__file__).parent / "data" / "kestrel-support"


def test_metrics_by_hand() -> None:
    qrels = {"a": 2, "b": 1, "c": 0, "z": 1}
    ranking = ["x", "a", "c", "b"]
    assert recall_at_k(ranking, qrels, 1) == 0.0
    assert recall_at_k(ranking, qrels, 2) == pytest.approx(1 / 3)
    assert recall_at_k(ranking, qrels, 10) == pytest.approx(2 / 3)
    assert mrr_at_k(ranking, qrels, 10) == 0.5
    assert mrr_at_k(ranking, qrels, 1) == 0.0
    dcg = 2 / math.log2(3) + 1 / math.log2(5)
    ideal = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at_k(ranking, qrels, 10) == pytest.approx(dcg / ideal)
    assert ndcg_at_k(["a", "b", "z"], qrels, 10) == pytest.approx(1.0)
    assert ndcg_at_k(["a"], qrels, 1) == pytest.approx(1.0)
    assert ndcg_at_k([], qrels, 10) == 0.0
    assert recall_at_k(["a"], {"a": 0}, 10) == 0.0


def test_load_beir() -> None:
    dataset = load_beir(DATA)
    assert dataset.name == "kestrel-support"
    assert len(dataset.corpus) == 48
    assert len(dataset.queries) == len(dataset.judged_queries()) == 40
    assert dataset.qrels["q01"] == {"p-e4012": 2, "p-fuser": 1}
    documents = dataset.documents()
    assert documents[0].metadata[DOC_ID] == "p-e4012"
    assert documents[0].text.startswith("Printer error E-4012\n\nE-4012 means")


def write_set(root: Path, corpus: str, queries: str, qrels: str) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(corpus)
    (root / "queries.jsonl").write_text(queries)
    (root / "qrels" / "test.tsv").write_text(qrels)
    return root


GOOD_CORPUS = '{"_id": "d1", "title": "", "text": "red apple"}\n{"_id": 2, "text": "pear"}\n'
GOOD_QUERIES = '{"_id": "q1", "text": "apple"}\n\n{"_id": "q2", "text": "plum"}\n'


@pytest.mark.parametrize(
    ("corpus", "queries", "qrels", "message"),
    [
        ("{bad json\n", GOOD_QUERIES, "", r"corpus.jsonl:1: not valid JSON"),
        ('{"title": "x", "text": "y"}\n', GOOD_QUERIES, "", "missing or invalid '_id'"),
        ('{"_id": "d", "text": 5}\n', GOOD_QUERIES, "", "'text' must be a string"),
        ('["a"]\n', GOOD_QUERIES, "", "expected a JSON object"),
        (GOOD_CORPUS, GOOD_QUERIES, "q1\td1\n", r"test.tsv:1: expected query-id"),
        (GOOD_CORPUS, GOOD_QUERIES, "q1\td1\thigh\n", "not an integer"),
        (GOOD_CORPUS, GOOD_QUERIES, "q9\td1\t1\n", "unknown query 'q9'"),
        (GOOD_CORPUS, GOOD_QUERIES, "q1\td9\t1\n", "unknown document 'd9'"),
    ],
)
def test_malformed_sets_name_file_and_line(
    tmp_path: Path, corpus: str, queries: str, qrels: str, message: str
) -> None:
    with pytest.raises(EvaluationDataError, match=message):
        load_beir(write_set(tmp_path, corpus, queries, qrels))


def test_missing_files(tmp_path: Path) -> None:
    with pytest.raises(EvaluationDataError, match="corpus.jsonl"):
        load_beir(tmp_path)
    root = write_set(tmp_path / "s", GOOD_CORPUS, GOOD_QUERIES, "")
    with pytest.raises(EvaluationDataError, match="dev.tsv"):
        load_beir(root, split="dev")


def test_evaluate_small_set(tmp_path: Path) -> None:
    root = write_set(
        tmp_path / "s",
        GOOD_CORPUS,
        GOOD_QUERIES,
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\t2\t0\n",
    )
    dataset = load_beir(root)
    assert list(dataset.judged_queries()) == ["q1"]  # q2 has no relevant document
    report = evaluate(BM25ContentRetriever.from_documents(dataset.documents()), dataset)
    assert report.metrics == {
        "recall@1": 1.0,
        "recall@5": 1.0,
        "recall@10": 1.0,
        "recall@100": 1.0,
        "mrr@10": 1.0,
        "ndcg@10": 1.0,
    }
    assert report.queries[0].retrieved == ["d1"]
    assert json.loads(report.to_json())["metrics"]["ndcg@10"] == 1.0
    assert "ndcg@10     1.0000" in report.format()


class Segments:
    """Returns two segments of one document and one without a doc id."""

    def __init__(self, with_id: bool) -> None:
        self.with_id = with_id

    def retrieve(self, query: Query) -> list[Content]:
        contents = [
            Content(TextSegment("x", {DOC_ID: "p-e4012"})),
            Content(TextSegment("y", {DOC_ID: "p-e4012"})),
            Content(TextSegment("z", {DOC_ID: "p-fuser"})),
        ]
        return contents + ([] if self.with_id else [Content(TextSegment("w"))])


def test_segments_of_one_document_count_once_and_need_an_id() -> None:
    dataset = load_beir(DATA)
    report = evaluate(Segments(True), dataset, k_values=(2,))
    assert report.queries[0].retrieved == ["p-e4012", "p-fuser"]
    assert report.queries[0].metrics["recall@2"] == 1.0
    with pytest.raises(EvaluationDataError, match="no 'doc_id'"):
        evaluate(Segments(False), dataset)
    with pytest.raises(ValueError, match="k_values"):
        evaluate(Segments(True), dataset, k_values=(0,))


def test_keyword_numbers_on_the_kestrel_set() -> None:
    dataset = load_beir(DATA)
    report = evaluate(build_retriever(dataset, "keyword"), dataset)
    # Pinned: BM25 is deterministic; a change here means ranking behaviour changed.
    assert report.metrics["ndcg@10"] == pytest.approx(0.9086, abs=5e-5)
    assert report.metrics["mrr@10"] == pytest.approx(0.9250, abs=5e-5)
    per_query = [q.metrics["ndcg@10"] for q in report.queries]
    assert report.metrics["ndcg@10"] == pytest.approx(sum(per_query) / len(per_query))
    identifiers = [q for q in report.queries if q.query_id <= "q17"]
    assert sum(q.metrics["mrr@10"] for q in identifiers) / len(identifiers) > 0.9


def test_build_dense_and_hybrid_retrievers() -> None:
    dataset = load_beir(DATA)
    model = FakeEmbeddingModel(256)
    dense = build_retriever(dataset, "dense", embedding_model=model, max_results=7)
    assert len(dense.retrieve(Query("E-4012"))) == 7
    hybrid = build_retriever(dataset, "hybrid", embedding_model=model)
    assert isinstance(hybrid, HybridContentRetriever)
    report = evaluate(hybrid, dataset)
    assert 0 < report.metrics["ndcg@10"] <= 1
    with pytest.raises(ValueError, match="mode"):
        build_retriever(dataset, "sparse")  # type: ignore[arg-type]


def test_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(DATA), "--mode", "keyword", "--stemmer", "english"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("kestrel-support: 40 queries, 48 documents (48 segments); indexing:")
    assert "ndcg@10" in out.splitlines()[1]
    assert out.splitlines()[2].startswith("keyword ")
    result = subprocess.run(
        [sys.executable, "-m", "ragloom.core.evaluation", str(DATA), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    (keyword,) = json.loads(result.stdout)["results"]
    assert keyword["mode"] == "keyword"
    assert keyword["metrics"]["ndcg@10"] == pytest.approx(0.9086, abs=5e-5)


def test_configurations_share_one_embedding_of_the_corpus() -> None:
    dataset = load_beir(DATA)
    model = FakeEmbeddingModel(64)  # records each embed_all call's batch size
    indexes = build_indexes(dataset, embedding_model=model)
    assert sum(model.calls) == len(dataset.corpus) == len(indexes.segments)
    assert set(indexes.seconds) == {"keyword", "dense"}
    configurations = [
        Configuration("keyword"),
        Configuration("dense"),
        Configuration("hybrid", "rrf"),
        Configuration("hybrid", "weighted", "document"),
    ]
    model.calls.clear()
    results = compare(dataset, indexes, configurations, max_results=20, k_values=(1, 10))
    assert model.calls == [1] * (3 * len(dataset.judged_queries()))  # queries only
    assert [c.name for c, _ in results] == [
        "keyword",
        "dense",
        "hybrid rrf",
        "hybrid weighted by document",
    ]
    for _, report in results:
        assert set(report.metrics) == {"recall@1", "recall@10", "mrr@10", "ndcg@10"}
    with pytest.raises(ValueError, match="fusion"):
        Configuration("hybrid", "mean")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--max-results", "5"], "--max-results 5: give 10 or more"),
        (["--max-results", "x"], "argument --max-results: invalid int value"),
        (["--stemmer", "klingon"], "no stemmer for 'klingon'"),
        (["--fusion", "weighted"], "apply to --mode hybrid"),
        (["--mode", "sparse"], "argument --mode: invalid choice"),
        (["--candidates", "0"], "--candidates 0: give 1 or more"),
    ],
)
def test_bad_arguments_are_one_line_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(DATA), *argv], prog="ragloom eval") == 2
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith("ragloom eval: ")
    assert message in line


def test_missing_data_and_help_name_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path / "none")], prog="ragloom eval") == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "corpus.jsonl" in line
    assert "`ragloom eval DIR` needs a BEIR-layout data set" in line
    assert main(["--help"], prog="ragloom eval", defaults={"mode": ["hybrid"]}) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: ragloom eval ")
    assert "(default: hybrid)" in " ".join(out.split())
