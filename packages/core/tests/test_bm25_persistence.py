"""BM25Index save/load: round trips, atomic replacement, corrupt directories refused."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import numpy as np
import pytest

from ragloom.core import TextSegment, metadata_key
from ragloom.core.bm25 import LUCENE_STOPWORDS, BM25Index, BM25IndexError, StandardAnalyzer
from ragloom.core.bm25.analyzer import WORD_PATTERN


def sample_index(**kwargs: object) -> BM25Index:
    index = BM25Index(**kwargs)  # type: ignore[arg-type]
    index.add_all(
        [
            TextSegment("Telescopes observe distant galaxies", {"topic": "astronomy", "n": 1}),
            TextSegment("Knead the bread dough", {"topic": "baking", "x": 1.5}),
            TextSegment("Knead, knead and bake", {"u": uuid.UUID(int=7), "flag": True}),
            TextSegment("ünïcode tëxt ✓", {"nan": float("nan")}),
        ],
        ids=["a", "b", "c", "d"],
    )
    index.add("Removed later", id="gone")
    index.remove("gone")
    return index


def results(index: BM25Index, query: str) -> list[tuple[str, float, str, dict[str, object]]]:
    return [
        (m.id, m.score, m.segment.text, {k: str(v) for k, v in m.segment.metadata.items()})
        for m in index.search(query, max_results=10)
    ]


@pytest.mark.parametrize("kwargs", [{}, {"variant": "okapi", "k1": 1.2, "b": 0.5}])
def test_round_trip(tmp_path: Path, kwargs: dict[str, object]) -> None:
    index = sample_index(**kwargs)
    index.save(tmp_path / "idx")
    loaded = BM25Index.load(tmp_path / "idx")
    assert loaded.parameters == index.parameters
    assert len(loaded) == len(index) == 4
    for query in ["knead bread", "galaxies", "ünïcode", "removed"]:
        assert results(loaded, query) == results(index, query)
    loaded.add("knead more", id="e")  # a loaded index keeps working
    assert loaded.search("knead", filter=metadata_key("flag").is_equal_to(True))[0].id == "c"
    assert "gone" not in loaded


def test_round_trip_with_stemming_and_empty(tmp_path: Path) -> None:
    index = BM25Index(StandardAnalyzer(stemmer="english", stopwords={"x"}))
    index.add_all(["running fast"], ids=["r"])
    index.save(tmp_path / "s")
    loaded = BM25Index.load(tmp_path / "s")
    assert [m.id for m in loaded.search("runs")] == ["r"]
    assert loaded.analyzer.normalize("x") is None  # type: ignore[attr-defined]
    BM25Index().save(tmp_path / "empty")
    assert len(BM25Index.load(tmp_path / "empty")) == 0


def test_index_saved_with_the_earlier_default_loads_unchanged(tmp_path: Path) -> None:
    """An index saved before stemming became the default keeps its analyzer: the manifest
    names the configuration (no stemming, 33 stopwords, one-character terms kept)."""
    earlier = {
        "type": "standard",
        "stopwords": sorted(LUCENE_STOPWORDS),
        "stemmer": None,
        "pattern": WORD_PATTERN,
        "min_length": 1,
    }
    index = BM25Index(StandardAnalyzer.from_config(earlier))
    index.add_all(["running fast", "runs x"], ids=["r", "s"])
    index.save(tmp_path / "old")
    manifest = json.loads((tmp_path / "old" / "manifest.json").read_text())
    assert manifest["analyzer"] == earlier
    loaded = BM25Index.load(tmp_path / "old")
    assert loaded.analyzer.config() == earlier  # type: ignore[attr-defined]
    assert [m.id for m in loaded.search("runs")] == ["s"]  # not stemmed: "running" differs
    assert [m.id for m in loaded.search("x")] == ["s"]  # one-character terms kept


class Upper:
    def tokenize(self, text: str) -> list[str]:
        return text.split()

    def normalize(self, token: str) -> str | None:
        return token.upper()


def test_custom_analyzer_must_be_given_again(tmp_path: Path) -> None:
    index = BM25Index(Upper())
    index.add("hello world", id="h")
    index.save(tmp_path / "c")
    with pytest.raises(BM25IndexError, match="custom analyzer"):
        BM25Index.load(tmp_path / "c")
    assert [m.id for m in BM25Index.load(tmp_path / "c", Upper()).search("HELLO")] == ["h"]


def test_saving_again_replaces_the_files(tmp_path: Path) -> None:
    index = sample_index()
    index.save(tmp_path)
    first = set(p.name for p in tmp_path.iterdir())
    index.add("new text", id="n")
    index.save(tmp_path)
    names = set(p.name for p in tmp_path.iterdir())
    assert len(names) == 4
    assert not names & (first - {"manifest.json"})
    assert [m.id for m in BM25Index.load(tmp_path).search("new")] == ["n"]


def test_refuses_foreign_directories(tmp_path: Path) -> None:
    (tmp_path / "other.txt").write_text("mine")
    with pytest.raises(BM25IndexError, match="refusing"):
        sample_index().save(tmp_path)
    with pytest.raises(BM25IndexError, match="not a directory"):
        sample_index().save(tmp_path / "other.txt")
    with pytest.raises(BM25IndexError, match="not a readable"):
        BM25Index.load(tmp_path / "missing")


def test_a_failed_save_keeps_the_old_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = sample_index()
    index.save(tmp_path)
    before = set(tmp_path.iterdir())
    index.add("unsaved", id="u")

    def crash(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("ragloom.core.bm25.index.os.replace", crash)
    with pytest.raises(BM25IndexError, match="disk full"):
        index.save(tmp_path)
    assert set(tmp_path.iterdir()) == before
    assert BM25Index.load(tmp_path).search("unsaved") == []


def corrupt(directory: Path, kind: str, change) -> None:  # type: ignore[no-untyped-def]
    manifest = json.loads((directory / "manifest.json").read_text())
    path = directory / manifest["files"][kind]["name"]
    change(path, manifest)
    (directory / "manifest.json").write_text(json.dumps(manifest))


def rehash(path: Path, manifest: dict, kind: str) -> None:  # type: ignore[type-arg]
    import hashlib

    manifest["files"][kind]["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()


def flip_byte(path: Path, manifest: dict) -> None:  # type: ignore[type-arg]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def bad_postings(path: Path, manifest: dict) -> None:  # type: ignore[type-arg]
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    counts = np.diff(arrays["indptr"])
    first = int(arrays["indptr"][np.flatnonzero(counts >= 2)[0]])  # a term with two postings
    rows = arrays["rows"]
    rows[first], rows[first + 1] = rows[first + 1], rows[first]
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    rehash(path, manifest, "postings")


def bad_lengths(path: Path, manifest: dict) -> None:  # type: ignore[type-arg]
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["lengths"] = arrays["lengths"] + 1
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    rehash(path, manifest, "postings")


def duplicate_term(path: Path, manifest: dict) -> None:  # type: ignore[type-arg]
    terms = json.loads(path.read_text())
    terms[1] = terms[0]
    path.write_text(json.dumps(terms))
    rehash(path, manifest, "vocabulary")


def truncated_records(path: Path, manifest: dict) -> None:  # type: ignore[type-arg]
    path.write_text("\n".join(path.read_text().splitlines()[:-1]) + "\n")
    rehash(path, manifest, "records")


def bad_record(path: Path, manifest: dict) -> None:  # type: ignore[type-arg]
    lines = path.read_text().splitlines()
    lines[0] = json.dumps({"id": "a", "text": "x", "metadata": {"k": [1]}})
    path.write_text("\n".join(lines) + "\n")
    rehash(path, manifest, "records")


def deleted(path: Path, manifest: dict) -> None:  # type: ignore[type-arg]
    path.unlink()


def escaping_name(path: Path, manifest: dict) -> None:  # type: ignore[type-arg]
    manifest["files"]["records"]["name"] = "../records-" + "0" * 32 + ".jsonl"


def wrong_version(path: Path, manifest: dict) -> None:  # type: ignore[type-arg]
    manifest["version"] = 99


@pytest.mark.parametrize(
    ("kind", "change", "message"),
    [
        ("postings", flip_byte, "checksum"),
        ("records", flip_byte, "checksum"),
        ("postings", bad_postings, "row order"),
        ("postings", bad_lengths, "lengths"),
        ("vocabulary", duplicate_term, "distinct"),
        ("records", truncated_records, "records"),
        ("records", bad_record, "corrupt"),
        ("vocabulary", deleted, "corrupt"),
        ("records", escaping_name, "no valid records"),
        ("records", wrong_version, "version 99"),
    ],
)
def test_corrupt_directories_raise(tmp_path: Path, kind: str, change, message: str) -> None:  # type: ignore[no-untyped-def]
    sample_index().save(tmp_path)
    corrupt(tmp_path, kind, change)
    with pytest.raises(BM25IndexError, match=message):
        BM25Index.load(tmp_path)
