"""The classic test collections committed for the quality table (scripts/bench/collections:
MED, CRAN, NPL) load with ``load_beir`` once unpacked, and their judgements name existing
queries and documents (load_beir checks that) with every query judged."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from ragloom.core.evaluation import load_beir

COLLECTIONS = Path(__file__).parents[1] / "scripts/bench/collections"
SIZES = {"med": (1033, 30), "cran": (1400, 225), "npl": (11426, 93)}


@pytest.mark.parametrize("name", sorted(SIZES))
def test_collection_loads(name: str, tmp_path: Path) -> None:
    source = COLLECTIONS / name
    target = tmp_path / name
    (target / "qrels").mkdir(parents=True)
    (target / "corpus.jsonl").write_bytes(
        gzip.decompress((source / "corpus.jsonl.gz").read_bytes())
    )
    shutil.copyfile(source / "queries.jsonl", target / "queries.jsonl")
    shutil.copyfile(source / "qrels/test.tsv", target / "qrels/test.tsv")

    dataset = load_beir(target)

    documents, queries = SIZES[name]
    assert len(dataset.corpus) == documents
    assert len(dataset.judged_queries()) == queries
    empty = sorted(
        i for i, entry in dataset.corpus.items() if not (entry.title + entry.text).strip()
    )
    assert empty == (["471", "995"] if name == "cran" else [])  # empty in the original too
    grades = {g for judged in dataset.qrels.values() for g in judged.values()}
    assert grades <= ({0, 1, 2, 3, 4} if name == "cran" else {1})
