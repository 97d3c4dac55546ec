"""InMemoryEmbeddingStore: the testkit suites plus in-memory specifics."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import threading
import uuid
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.core import (
    Embedding,
    EmbeddingMatch,
    EmbeddingSearchRequest,
    EmbeddingStoreError,
    InMemoryEmbeddingStore,
    InvalidFilterError,
    TextSegment,
    metadata_key,
)
from ragloom.core.filters import Filter
from ragloom.core.stores import in_memory
from ragloom.core.stores.persistence import HEAD_BYTES, DataFiles, DirectoryFormat, write_records
from ragloom.core.stores.scores import exact_cosines, relevance_score
from ragloom.testkit import (
    AsyncEmbeddingStoreSuite,
    Deviation,
    EmbeddingStoreFilterSuite,
    EmbeddingStoreSuite,
)


class TestInMemoryEmbeddingStoreConformance(EmbeddingStoreSuite, EmbeddingStoreFilterSuite):
    @pytest.fixture
    def store(self) -> InMemoryEmbeddingStore:
        return InMemoryEmbeddingStore()


class TestInMemoryEmbeddingStoreAsyncConformance(AsyncEmbeddingStoreSuite):
    """Awaited through ragloom.core.aio's worker-thread fallback."""

    has_async_methods = Deviation(
        "an in-process store has no I/O to await: the aio helpers run its sync methods in "
        "worker threads"
    )

    @pytest.fixture
    def store(self) -> InMemoryEmbeddingStore:
        return InMemoryEmbeddingStore()


def _search(
    store: InMemoryEmbeddingStore,
    query: Any,
    max_results: int = 1000,
    min_score: float = 0.0,
    filter: Filter | None = None,
) -> list[tuple[str, float]]:
    request = EmbeddingSearchRequest(query, max_results, min_score, filter)
    return [(m.embedding_id, m.score) for m in store.search(request).matches]


def _sample_store() -> InMemoryEmbeddingStore:
    store = InMemoryEmbeddingStore()
    store.add_all(
        [
            Embedding([1, 0, 0]),
            Embedding([0.5, 0.5, 0]),
            Embedding([0, 0, 1]),
            Embedding([1, 1, 1]),
        ],
        [
            TextSegment("typed", {"s": "x", "i": 7, "f": 0.5, "b": False, "u": uuid.uuid4()}),
            TextSegment("", {"nan": math.nan, "inf": -math.inf, "big": 2**70}),
            TextSegment("unicode ✓ \n newline", {"quote": 'a"b'}),
            TextSegment("plain"),
        ],
        ids=["a", "b", "c", "d"],
    )
    store.add(Embedding([0.25, -1.5, 3.0]), id="no-segment")
    return store


def _assert_same_entries(left: InMemoryEmbeddingStore, right: InMemoryEmbeddingStore) -> None:
    """Same ids in the same order, bit-identical vectors, equal segments (NaN-aware)."""
    query = Embedding([1, 2, 3])
    a = left.search(EmbeddingSearchRequest(query, 1000)).matches
    b = right.search(EmbeddingSearchRequest(query, 1000)).matches
    assert [m.embedding_id for m in a] == [m.embedding_id for m in b]
    for x, y in zip(a, b, strict=True):
        assert x.score == y.score
        assert x.embedding == y.embedding
        assert (x.embedded is None) == (y.embedded is None)
        if x.embedded is not None and y.embedded is not None:
            assert x.embedded.text == y.embedded.text
            assert repr(x.embedded.metadata) == repr(y.embedded.metadata)  # nan != nan


# ---------------------------------------------------------------------- persistence


def test_save_and_load_round_trip_keeps_types_order_and_vectors(tmp_path: Path) -> None:
    store = _sample_store()
    store.save(tmp_path / "store")
    loaded = InMemoryEmbeddingStore.load(tmp_path / "store")
    _assert_same_entries(store, loaded)
    segment = loaded.search(EmbeddingSearchRequest([1, 0, 0], 1)).matches[0].embedded
    assert segment is not None
    assert {k: type(v) for k, v in segment.metadata.items()} == {
        "s": str,
        "i": int,
        "f": float,
        "b": bool,
        "u": uuid.UUID,
    }
    assert len(loaded) == 5
    assert loaded.dimension == 3


def test_saved_files_are_open_formats(tmp_path: Path) -> None:
    store = InMemoryEmbeddingStore()
    store.add_all([Embedding([1, 2]), Embedding([3, 4])], [TextSegment("x", {"n": 1.0})] * 2)
    store.save(tmp_path)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["format"] == "ragloom.in-memory-embedding-store"
    assert (manifest["version"], manifest["dimension"], manifest["count"]) == (2, 2, 2)
    assert manifest["metadata_keys"] == ["n"]
    vectors = np.load(tmp_path / manifest["files"]["vectors"]["name"], mmap_mode="r")
    np.testing.assert_array_equal(vectors, [[1, 2], [3, 4]])
    rows = np.fromfile(tmp_path / manifest["files"]["rows"]["name"], dtype=np.uint8)

    def array(name: str) -> Any:
        entry = manifest["arrays"][name]
        data = rows[entry["offset"] :].view(np.dtype(entry["dtype"]))
        return data[: int(np.prod(entry["shape"]))]

    assert array("texts.data").tobytes() == b"xx"
    assert array("texts.offsets").tolist() == [0, 1, 2]
    assert array("metadata.0.codes").tolist() == [3, 3]  # float
    assert array("metadata.0.payload").view(np.float64).tolist() == [1.0, 1.0]


def test_save_replaces_a_previous_save_and_removes_its_files(tmp_path: Path) -> None:
    store = _sample_store()
    store.save(tmp_path)
    store.remove("a")
    store.save(tmp_path)
    assert len(list(tmp_path.iterdir())) == 3
    _assert_same_entries(store, InMemoryEmbeddingStore.load(tmp_path))


def test_empty_store_round_trips(tmp_path: Path) -> None:
    InMemoryEmbeddingStore().save(tmp_path)
    loaded = InMemoryEmbeddingStore.load(tmp_path)
    assert len(loaded) == 0
    assert loaded.dimension is None


def test_save_refuses_a_foreign_directory_or_a_file(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(EmbeddingStoreError, match="not empty"):
        _sample_store().save(tmp_path)
    with pytest.raises(EmbeddingStoreError, match="not a directory"):
        _sample_store().save(tmp_path / "notes.txt")
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_a_crash_before_the_manifest_swap_leaves_the_old_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = _sample_store()
    old.save(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    new = InMemoryEmbeddingStore()
    new.add(Embedding([9, 9, 9]), id="new")

    def crash(*args: Any, **kwargs: Any) -> None:
        raise OSError("simulated power loss")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(EmbeddingStoreError, match="power loss"):
        new.save(tmp_path)
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    _assert_same_entries(old, InMemoryEmbeddingStore.load(tmp_path))


def test_a_crash_while_writing_records_leaves_the_old_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = _sample_store()
    old.save(tmp_path)
    bigger = _sample_store()
    bigger.add(Embedding([1, 1, 0]), TextSegment("new"))

    def crash(self: InMemoryEmbeddingStore, file: Any, metadata: Any) -> None:
        file.write(b"\x00half")
        raise RuntimeError("killed mid-write")

    monkeypatch.setattr(InMemoryEmbeddingStore, "_write_rows", crash)
    with pytest.raises(RuntimeError, match="mid-write"):
        bigger.save(tmp_path)
    monkeypatch.undo()
    _assert_same_entries(old, InMemoryEmbeddingStore.load(tmp_path))


def _manifest(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((path / "manifest.json").read_text())
    return data


def _corrupt_vectors(path: Path) -> None:
    vectors = path / _manifest(path)["files"]["vectors"]["name"]
    data = bytearray(vectors.read_bytes())
    data[-1] ^= 0xFF
    vectors.write_bytes(bytes(data))


def _edit_manifest(**changes: Any) -> Any:
    def edit(path: Path) -> None:
        manifest = _manifest(path)
        manifest.update(changes)
        (path / "manifest.json").write_text(json.dumps(manifest))

    return edit


def _point_outside(path: Path) -> None:
    manifest = _manifest(path)
    manifest["files"]["vectors"]["name"] = "../../etc/passwd"
    (path / "manifest.json").write_text(json.dumps(manifest))


def _drop_an_id_and_fix_the_checksum(path: Path) -> None:
    manifest = _manifest(path)
    rows = path / manifest["files"]["rows"]["name"]
    data = np.fromfile(rows, dtype=np.uint8)
    entry = manifest["arrays"]["ids.offsets"]
    offsets = data[entry["offset"] :][: 8 * entry["shape"][0]].view(np.int64)
    offsets[1] = offsets[0]  # the first id becomes empty
    data.tofile(rows)
    manifest["files"]["rows"]["crc32"] = f"{zlib.crc32(data.tobytes()):08x}"
    manifest["files"]["rows"]["head"] = f"{zlib.crc32(data[:HEAD_BYTES].tobytes()):08x}"
    (path / "manifest.json").write_text(json.dumps(manifest))


def _corrupt_rows(path: Path) -> None:
    rows = path / _manifest(path)["files"]["rows"]["name"]
    data = bytearray(rows.read_bytes())
    data[0] ^= 0xFF
    rows.write_bytes(bytes(data))


def _move_an_array_outside(path: Path) -> None:
    manifest = _manifest(path)
    manifest["arrays"]["texts.data"]["offset"] = 1 << 20
    (path / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda p: (p / "manifest.json").write_text("{not json"), "not a readable"),
        (lambda p: (p / "manifest.json").unlink(), "not a readable"),
        (_edit_manifest(format="something-else"), "not a ragloom"),
        (_edit_manifest(version=3), "version 3 is not supported"),
        (_edit_manifest(count=-1), "invalid count"),
        (_edit_manifest(count=4), "expected float32 vectors of shape \\(4, 3\\)"),
        (_corrupt_vectors, "checksum mismatch"),
        (_corrupt_rows, "checksum mismatch"),
        (_point_outside, "no valid vectors file"),
        (_drop_an_id_and_fix_the_checksum, "must be a non-empty str"),
        (_move_an_array_outside, "beyond the end of the file"),
        (_edit_manifest(metadata_keys=["s", ""]), "metadata key must be a non-empty"),
    ],
    ids=[
        "bad-json",
        "no-manifest",
        "foreign",
        "version",
        "count",
        "count-vs-vectors",
        "corrupt-vectors",
        "corrupt-rows",
        "path-escape",
        "empty-id",
        "array-outside",
        "bad-key",
    ],
)
def test_loading_a_damaged_store_raises_naming_the_path(
    tmp_path: Path, damage: Any, message: str
) -> None:
    _sample_store().save(tmp_path / "s")
    damage(tmp_path / "s")
    with pytest.raises(EmbeddingStoreError, match=message) as error:
        InMemoryEmbeddingStore.load(tmp_path / "s")
    assert str(tmp_path / "s") in str(error.value)


def _save_version_1(store: InMemoryEmbeddingStore, path: Path) -> None:
    """The layout ragloom wrote before version 2: vectors and JSON lines of records."""
    version_1 = DirectoryFormat(
        "ragloom.in-memory-embedding-store",
        1,
        {"vectors": ".npy", "records": ".jsonl"},
        error=EmbeddingStoreError,
        noun="in-memory embedding store",
    )
    size = store._size

    def write(files: DataFiles) -> dict[str, Any]:
        files.write("vectors", lambda f: np.save(f, store._matrix[:size]))
        files.write(
            "records", lambda f: write_records(f, store._ids, store._texts, store._metadata)
        )
        return {"dimension": store.dimension, "count": size}

    version_1.save(path, write)


def test_a_version_1_directory_still_loads_and_is_replaced_by_a_save(tmp_path: Path) -> None:
    store = _sample_store()
    _save_version_1(store, tmp_path)
    loaded = InMemoryEmbeddingStore.load(tmp_path)
    _assert_same_entries(store, loaded)
    loaded.save(tmp_path)  # version 2 now; the version 1 files are gone
    assert sorted(p.name.split("-")[0] for p in tmp_path.iterdir()) == [
        "manifest.json",
        "rows",
        "vectors",
    ]
    _assert_same_entries(store, InMemoryEmbeddingStore.load(tmp_path))


def test_a_corrupt_version_1_directory_is_refused(tmp_path: Path) -> None:
    _save_version_1(_sample_store(), tmp_path)
    _corrupt_vectors(tmp_path)
    with pytest.raises(EmbeddingStoreError, match="checksum mismatch"):
        InMemoryEmbeddingStore.load(tmp_path)


def test_a_memory_mapped_load_searches_like_a_loaded_store(tmp_path: Path) -> None:
    store = _sample_store()
    store.save(tmp_path)
    mapped = InMemoryEmbeddingStore.load(tmp_path, mmap=True)
    _assert_same_entries(store, mapped)
    assert isinstance(mapped._matrix.base, np.memmap)  # not read into memory
    f = metadata_key("s").is_equal_to("x")
    assert _search(mapped, [1, 0, 0], 5, filter=f) == _search(store, [1, 0, 0], 5, filter=f)
    assert len(mapped) == 5


@pytest.mark.parametrize(
    "change",
    [
        lambda s: s.add(Embedding([0, 1, 0]), TextSegment("new", {"s": "y"}), id="new"),
        lambda s: s.add(Embedding([0, 1, 0]), TextSegment("replaced"), id="a"),
        lambda s: s.remove("b"),
        lambda s: s.remove_all(filter=metadata_key("s").is_equal_to("x")),
        lambda s: s.remove_all(["a", "b", "c"]),
    ],
    ids=["add", "replace", "remove", "remove-by-filter", "compact"],
)
def test_writes_after_a_memory_mapped_load_work_and_leave_the_files_alone(
    tmp_path: Path, change: Any
) -> None:
    store = _sample_store()
    store.save(tmp_path / "s")
    files = {p.name: p.read_bytes() for p in (tmp_path / "s").iterdir()}
    mapped = InMemoryEmbeddingStore.load(tmp_path / "s", mmap=True)
    change(store)
    change(mapped)
    _assert_same_entries(store, mapped)
    assert {p.name: p.read_bytes() for p in (tmp_path / "s").iterdir()} == files
    mapped.save(tmp_path / "s")  # over the files it maps
    _assert_same_entries(store, InMemoryEmbeddingStore.load(tmp_path / "s"))
    _assert_same_entries(store, mapped)


def test_a_memory_mapped_load_of_an_empty_store(tmp_path: Path) -> None:
    InMemoryEmbeddingStore().save(tmp_path)
    assert len(InMemoryEmbeddingStore.load(tmp_path, mmap=True)) == 0


def test_a_memory_mapped_load_still_checks_the_structure(tmp_path: Path) -> None:
    _sample_store().save(tmp_path)
    _move_an_array_outside(tmp_path)
    with pytest.raises(EmbeddingStoreError, match="beyond the end") as error:
        InMemoryEmbeddingStore.load(tmp_path, mmap=True)
    assert str(tmp_path) in str(error.value)


def test_json_round_trip() -> None:
    store = _sample_store()
    text = store.to_json()
    assert json.loads(text)["count"] == 5
    _assert_same_entries(store, InMemoryEmbeddingStore.from_json(text))


def _json_store(**entry: Any) -> str:
    base: dict[str, Any] = {"id": "a", "embedding": [1, 2], "text": None, "metadata": {}}
    document = {
        "format": "ragloom.in-memory-embedding-store",
        "version": 1,
        "dimension": 2,
        "count": 1,
        "entries": [{**base, **entry}],
    }
    return json.dumps(document)


@pytest.mark.parametrize(
    "text",
    [
        "nope",
        "[]",
        _json_store(embedding=[1, "x"]),
        _json_store(embedding=[1, 2, 3]),
        _json_store(embedding=[1, None]),
        _json_store(id=""),
        _json_store(text=5),
        _json_store(metadata={"k": [1]}),
        _json_store(metadata={"k": {"$uuid": "not-a-uuid"}}),
    ],
)
def test_from_json_rejects_bad_documents(text: str) -> None:
    with pytest.raises(EmbeddingStoreError):
        InMemoryEmbeddingStore.from_json(text)


# ---------------------------------------------------------------------- merge


def test_merge_combines_stores_and_a_later_id_wins() -> None:
    first = InMemoryEmbeddingStore()
    first.add_all(
        [Embedding([1, 0]), Embedding([0, 1])],
        [TextSegment("a1"), TextSegment("b1")],
        ids=["a", "b"],
    )
    second = InMemoryEmbeddingStore()
    second.add_all(
        [Embedding([1, 1]), Embedding([-1, 0])],
        [TextSegment("b2"), TextSegment("c2")],
        ids=["b", "c"],
    )
    merged = InMemoryEmbeddingStore.merge(first, InMemoryEmbeddingStore(), second)
    matches = merged.search(EmbeddingSearchRequest([1, 1], 10)).matches
    assert {m.embedding_id: m.embedded.text for m in matches if m.embedded} == {
        "a": "a1",
        "b": "b2",
        "c": "c2",
    }
    assert len(first) == 2  # the inputs are untouched


def test_merge_rejects_different_dimensions() -> None:
    a, b = InMemoryEmbeddingStore(), InMemoryEmbeddingStore()
    a.add(Embedding([1, 0]))
    b.add(Embedding([1, 0, 0]))
    with pytest.raises(EmbeddingStoreError, match="dimension"):
        InMemoryEmbeddingStore.merge(a, b)


# ---------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "vectors",
    [
        np.array([[1.0, 0.0], [np.nan, 1.0]]),
        np.array([[1.0, 0.0], [np.inf, 1.0]]),
        np.array([[1e30, 1e30], [1.0, 1.0]]),  # overflows float32
        np.array([[1.0, 0.0, 0.0]]),
        np.array([1.0, 0.0]),
        np.array([["a", "b"]]),
        [Embedding([1, 0]), [0.0, 1.0]],
        [Embedding([1, 0]), Embedding([1, 0, 0])],
    ],
    ids=["nan", "inf", "overflow", "dimension", "1-d", "strings", "not-embedding", "mixed"],
)
def test_bad_vectors_are_rejected_and_change_nothing(vectors: Any) -> None:
    store = _sample_store()
    store.remove_all()
    store.add_all([Embedding([1, 0]), Embedding([0, 1])], ids=["x", "y"])
    before = store.to_json()
    with pytest.raises(EmbeddingStoreError):
        store.add_all(vectors, ids=["x", "z"][: len(vectors)])
    assert store.to_json() == before


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (([Embedding([1, 0])],), {"ids": "x"}),
        (([Embedding([1, 0])], ["not a segment"]), {}),
        (([Embedding([1, 0])], TextSegment("one")), {}),
        (([Embedding([1, 0])],), {"ids": [uuid.uuid4()]}),
    ],
    ids=["ids-str", "segment-type", "segment-not-sequence", "uuid-id"],
)
def test_bad_ids_and_segments_are_rejected(args: Any, kwargs: Any) -> None:
    store = InMemoryEmbeddingStore()
    store.add(Embedding([1, 1]), id="keep")
    before = store.to_json()
    with pytest.raises(EmbeddingStoreError):
        store.add_all(*args, **kwargs)
    assert store.to_json() == before


def test_remove_rejects_bad_ids_and_a_single_string() -> None:
    store = InMemoryEmbeddingStore()
    store.add(Embedding([1, 1]), id="keep")
    with pytest.raises(EmbeddingStoreError):
        store.remove("")
    with pytest.raises(EmbeddingStoreError):
        store.remove_all("keep")
    with pytest.raises(EmbeddingStoreError):
        store.remove_all(["keep", 3])  # type: ignore[list-item]
    with pytest.raises(EmbeddingStoreError):
        store.remove_all(filter="k == 1")  # type: ignore[arg-type]
    assert len(store) == 1


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_results": 0},
        {"max_results": -1},
        {"max_results": 2.5},
        {"max_results": True},
        {"min_score": -0.01},
        {"min_score": 1.01},
        {"min_score": math.nan},
        {"min_score": "0.5"},
        {"filter": "year > 2000"},
    ],
)
def test_search_request_validation(kwargs: dict[str, Any]) -> None:
    with pytest.raises(EmbeddingStoreError):
        EmbeddingSearchRequest([1.0, 0.0], **kwargs)


def test_search_request_keeps_valid_values_and_names_bad_ones() -> None:
    class Count(int):
        pass

    for min_score, kept in [(0.5, 0.5), (1, 1.0), (np.float64(0.25), 0.25), (0, 0.0)]:
        request = EmbeddingSearchRequest([1.0, 0.0], Count(2), min_score)
        assert request.max_results == 2
        assert type(request.min_score) is float
        assert request.min_score == kept
    with pytest.raises(EmbeddingStoreError, match=r"max_results must be an int >= 1, got True"):
        EmbeddingSearchRequest([1.0, 0.0], True)
    with pytest.raises(
        EmbeddingStoreError, match=r"min_score must be a number in \[0, 1\], got nan"
    ):
        EmbeddingSearchRequest([1.0, 0.0], 3, math.nan)


@pytest.mark.parametrize("query", [[math.nan, 1.0], [math.inf, 0.0], [], [[1.0]], "ab"])
def test_search_request_rejects_bad_query_vectors(query: Any) -> None:
    with pytest.raises(EmbeddingStoreError, match="query embedding"):
        EmbeddingSearchRequest(query)


def test_fixed_dimension_is_enforced_even_when_empty() -> None:
    store = InMemoryEmbeddingStore(dimension=3)
    with pytest.raises(EmbeddingStoreError):
        _search(store, [1.0, 0.0])
    with pytest.raises(EmbeddingStoreError):
        store.add(Embedding([1.0, 0.0]))
    store.add(Embedding([1.0, 0.0, 0.0]))
    store.remove_all()
    assert store.dimension == 3
    with pytest.raises(EmbeddingStoreError):
        InMemoryEmbeddingStore(dimension=0)


def test_a_learned_dimension_is_forgotten_when_the_store_empties() -> None:
    store = InMemoryEmbeddingStore()
    store.add(Embedding([1.0, 0.0]), id="a")
    store.remove("a")
    assert store.dimension is None
    store.add(Embedding([1.0, 0.0, 0.0]))
    assert store.dimension == 3


def test_a_filter_type_mismatch_leaves_the_store_unchanged() -> None:
    store = _sample_store()
    before = store.to_json()
    with pytest.raises(InvalidFilterError):
        store.remove_all(filter=metadata_key("s").is_greater_than(3))
    assert store.to_json() == before


# ---------------------------------------------------------------------- arrays, zeros, growth


def test_add_all_accepts_a_numpy_matrix_of_any_real_dtype() -> None:
    store = InMemoryEmbeddingStore()
    ids = store.add_all(np.array([[1, 0], [0, 2]], dtype=np.int64))
    ids += store.add_all(np.array([[0.5, 0.5]], dtype=np.float64))
    assert _search(store, [1.0, 0.0], 1) == [(ids[0], 1.0)]
    assert len(store) == 3


def test_zero_vectors_score_one_half_and_keep_insertion_order() -> None:
    store = InMemoryEmbeddingStore()
    ids = store.add_all([Embedding([0, 0]), Embedding([1, 0]), Embedding([0, 0])])
    assert _search(store, [1.0, 0.0]) == [(ids[0 + 1], 1.0), (ids[0], 0.5), (ids[2], 0.5)]
    assert _search(store, [0.0, 0.0], 2) == [(ids[0], 0.5), (ids[1], 0.5)]
    assert _search(store, [0.0, 0.0], min_score=0.6) == []


def test_matches_are_frozen_values_equal_to_constructed_ones() -> None:
    """The store builds its matches slot by slot: they must be the dataclass's values."""
    store = InMemoryEmbeddingStore()
    store.add_all(
        [Embedding([1, 0]), Embedding([0, 1]), Embedding([3, 4])],
        [TextSegment("a", {"k": 1, "f": 0.5, "b": True}), TextSegment("b"), TextSegment("c")],
        ids=["x", "y", "z"],
    )
    store.add_all([Embedding([0, -1])], ids=["w"])  # no segment
    matches = store.search(EmbeddingSearchRequest(Embedding([1, 0]), 4)).matches
    assert matches == [
        EmbeddingMatch(
            1.0, "x", Embedding([1, 0]), TextSegment("a", {"k": 1, "f": 0.5, "b": True})
        ),
        EmbeddingMatch(0.8, "z", Embedding([3, 4]), TextSegment("c")),
        EmbeddingMatch(0.5, "y", Embedding([0, 1]), TextSegment("b")),
        EmbeddingMatch(0.5, "w", Embedding([0, -1]), None),
    ]
    assert [type(m.score) for m in matches] == [float] * 4
    assert matches[0].embedded is not None
    assert matches[0].embedded.metadata.to_dict() == {"k": 1, "f": 0.5, "b": True}
    with pytest.raises(dataclasses.FrozenInstanceError):
        matches[0].score = 0.0  # type: ignore[misc]
    with pytest.raises(ValueError, match="differ in length"):  # no match silently dropped
        EmbeddingMatch._trusted_list([1.0, 0.5], ["x"], [Embedding([1, 0])], [None])


def test_tiny_and_huge_norms_are_ranked_exactly_or_rejected() -> None:
    store = InMemoryEmbeddingStore()
    ids = store.add_all(np.array([[0, 1e20], [1e-25, 0], [0, 0]], dtype=np.float32))
    assert _search(store, [1.0, 0.0]) == [(ids[1], 1.0), (ids[0], 0.5), (ids[2], 0.5)]
    for vector in ([1e-35, 0.0], [1e35, 1.0]):
        with pytest.raises(EmbeddingStoreError, match="outside"):
            store.add_all(np.array([vector], dtype=np.float32))
    assert len(store) == 3


def test_capacity_doubles_so_appends_are_amortized() -> None:
    store = InMemoryEmbeddingStore()
    capacities = set()
    for i in range(1000):
        store.add(Embedding([1.0, float(i)]))
        capacities.add(store._matrix.shape[0])
    assert sorted(capacities) == [16 * 2**k for k in range(7)]


def test_removal_compacts_and_keeps_order() -> None:
    store = InMemoryEmbeddingStore()
    ids = store.add_all([Embedding([1.0, 0.0])] * 100)
    for embedding_id in ids[:60]:
        store.remove(embedding_id)
    assert store._size < 100  # compacted at least once
    assert [i for i, _ in _search(store, [1.0, 0.0])] == ids[60:]
    store.add(Embedding([0.0, 1.0]), id=ids[70])  # replace in place after compaction
    assert [i for i, _ in _search(store, [1.0, 0.0])][-1] == ids[70]


def test_compaction_gives_memory_back() -> None:
    store = InMemoryEmbeddingStore()
    ids = store.add_all(np.ones((4096, 8), dtype=np.float32))
    store.remove_all(ids[:4000])
    assert len(store) == 96
    assert store._matrix.shape[0] <= 4 * 96
    assert [i for i, _ in _search(store, np.ones(8), 5)] == ids[4000:4005]


def test_exact_scores_identical_vectors_tie_at_any_position() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((500, 37)).astype(np.float32)
    vectors[[3, 77, 140, 141, 499]] = vectors[3]
    store = InMemoryEmbeddingStore()
    ids = store.add_all(vectors)
    matches = _search(store, vectors[3], 5)
    assert [i for i, _ in matches] == [ids[3], ids[77], ids[140], ids[141], ids[499]]
    assert len({s for _, s in matches}) == 1


@pytest.mark.parametrize("twins", [5, 100])  # 100: more rescored rows than the few-row path's
def test_ranking_is_the_exact_scores_then_insertion_order(twins: int) -> None:
    """Either path of the rescoring (a few rows as floats, many as arrays) ranks as the
    definition: exact score descending, ties by row, cut at k and at min_score."""
    assert twins <= 10 or twins > in_memory._FEW
    rng = np.random.default_rng(twins)
    vectors = rng.standard_normal((300, 24)).astype(np.float32)
    rows = np.sort(rng.choice(300, twins, replace=False))
    vectors[rows] = vectors[rows[0]]
    vectors[rows[1]] *= 3  # same direction, another norm: the same score or one ulp off
    store = InMemoryEmbeddingStore()
    ids = store.add_all(vectors)
    query = vectors[rows[0]] + np.float32(0.01) * rng.standard_normal(24).astype(np.float32)
    scores = relevance_score(exact_cosines(vectors, query))
    order = np.lexsort((np.arange(300), -scores))
    for k, min_score in [(1, 0.0), (5, 0.0), (10, 0.0), (150, 0.0), (150, float(scores[order[7]]))]:
        best = [int(row) for row in order[:k] if scores[row] >= min_score]
        assert _search(store, query, k, min_score) == [
            (ids[row], float(scores[row])) for row in best
        ]


def test_large_filtered_and_unfiltered_searches_agree_with_numpy() -> None:
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((5000, 32)).astype(np.float32)
    groups = rng.integers(0, 10, 5000)
    store = InMemoryEmbeddingStore()
    ids = store.add_all(vectors, [TextSegment("", {"g": int(g)}) for g in groups])
    query = rng.standard_normal(32).astype(np.float32)
    cos = (
        vectors.astype(np.float64)
        @ query
        / (np.linalg.norm(vectors.astype(np.float64), axis=1) * np.linalg.norm(query))
    )
    for selected in [np.arange(5000), np.flatnonzero(groups == 3), np.flatnonzero(groups < 8)]:
        condition = (
            None
            if selected.size == 5000
            else metadata_key("g").is_equal_to(3)
            if selected.size < 1000
            else metadata_key("g").is_less_than(8)
        )
        best = selected[np.argsort(-cos[selected], kind="stable")[:10]]
        got = _search(store, query, 10, filter=condition)
        assert [i for i, _ in got] == [ids[i] for i in best]
        np.testing.assert_allclose([s for _, s in got], (cos[best] + 1) / 2, atol=1e-12)


# ---------------------------------------------------------------------- threads


def _vector_of(embedding_id: str) -> npt.NDArray[np.float32]:
    seed = int(uuid.uuid5(uuid.NAMESPACE_OID, embedding_id)) % 2**32
    return np.random.default_rng(seed).standard_normal(16).astype(np.float32)


def test_concurrent_adds_searches_and_removes_stay_consistent() -> None:
    store = InMemoryEmbeddingStore()
    initial = [f"init-{i}" for i in range(500)]
    store.add_all(
        [Embedding(_vector_of(i)) for i in initial],
        [TextSegment(i, {"t": n % 3}) for n, i in enumerate(initial)],
        ids=initial,
    )
    errors: list[BaseException] = []
    removed: list[str] = []
    added: list[str] = []

    def writer(worker: int) -> None:
        for batch in range(20):
            ids = [f"w{worker}-{batch}-{j}" for j in range(25)]
            store.add_all(
                [Embedding(_vector_of(i)) for i in ids],
                [TextSegment(i, {"t": j % 3}) for j, i in enumerate(ids)],
                ids=ids,
            )
            added.extend(ids)

    def remover() -> None:
        rng = random.Random(1)
        for _ in range(40):
            victims = rng.sample(initial, 5)
            store.remove_all(victims)
            removed.extend(victims)

    def searcher(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for n in range(150):
            condition = metadata_key("t").is_equal_to(n % 3) if n % 2 else None
            query = rng.standard_normal(16).astype(np.float32)
            matches = store.search(EmbeddingSearchRequest(query, 10, filter=condition)).matches
            scores = [m.score for m in matches]
            assert scores == sorted(scores, reverse=True)
            assert len(matches) == 10
            for match in matches:
                assert match.embedded is not None
                assert match.embedded.text == match.embedding_id
                np.testing.assert_array_equal(
                    match.embedding.vector, _vector_of(match.embedding_id)
                )
                if condition is not None:
                    assert match.embedded.metadata["t"] == n % 3

    def guard(target: Any, *args: Any) -> Any:
        def run() -> None:
            try:
                target(*args)
            except BaseException as exc:  # reported below
                errors.append(exc)

        return run

    threads = [threading.Thread(target=guard(writer, w)) for w in range(3)]
    threads += [threading.Thread(target=guard(remover))]
    threads += [threading.Thread(target=guard(searcher, s)) for s in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    expected = (set(initial) - set(removed)) | set(added)
    assert len(store) == len(expected)
    everything = store.search(EmbeddingSearchRequest(np.ones(16), 10_000)).matches
    assert {m.embedding_id for m in everything} == expected


# ---------------------------------------------------------------------- property-based


def _reference(
    entries: dict[str, tuple[npt.NDArray[np.float32], dict[str, Any]]],
    query: npt.NDArray[np.float32],
    max_results: int,
    min_score: float,
    condition: Filter | None,
) -> list[tuple[str, float]]:
    """Brute force, one entry at a time, with the arithmetic the store documents."""
    q = query.astype(np.float64)
    q_norm = math.sqrt(float(q @ q))
    scored = []
    for position, (embedding_id, (vector, metadata)) in enumerate(entries.items()):
        if condition is not None and not condition.test(metadata):
            continue
        row = vector.astype(np.float64)[None, :]
        norm = float(np.sqrt((row * row).sum(axis=1))[0]) * q_norm
        cosine = float((row * q).sum(axis=1)[0]) / norm if norm > 0 else 0.0
        score = (min(1.0, max(-1.0, cosine)) + 1.0) / 2.0
        if score >= min_score:
            scored.append((-score, position, embedding_id, score))
    scored.sort()
    return [(embedding_id, score) for _, _, embedding_id, score in scored[:max_results]]


_vectors = st.lists(st.integers(-3, 3), min_size=3, max_size=3).map(
    lambda v: np.array(v, dtype=np.float32)
)
_operations = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 15), _vectors, st.integers(0, 2)),
        st.tuples(st.just("remove"), st.integers(0, 15)),
    ),
    max_size=40,
)
_filters = st.sampled_from(
    [
        None,
        metadata_key("g").is_equal_to(1),
        metadata_key("g").is_not_equal_to(0),
        metadata_key("g").is_in([0, 2]),
        ~metadata_key("g").is_greater_than(1) & metadata_key("g").is_less_than(3),
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    operations=_operations,
    query=_vectors,
    max_results=st.integers(1, 20),
    min_score=st.sampled_from([0.0, 0.5, 0.75, 1.0]),
    condition=_filters,
)
def test_search_equals_brute_force(
    operations: list[Any],
    query: npt.NDArray[np.float32],
    max_results: int,
    min_score: float,
    condition: Filter | None,
) -> None:
    store = InMemoryEmbeddingStore(dimension=3)
    reference: dict[str, tuple[npt.NDArray[np.float32], dict[str, Any]]] = {}
    for operation in operations:
        embedding_id = f"id{operation[1]}"
        if operation[0] == "add":
            _, _, vector, group = operation
            metadata = {"g": group} if group else {}  # group 0: key missing
            store.add(Embedding(vector), TextSegment("t", metadata), id=embedding_id)
            reference[embedding_id] = (vector, metadata)  # replaced in place, order kept
        else:
            store.remove(embedding_id)
            reference.pop(embedding_id, None)
    expected = _reference(reference, query, max_results, min_score, condition)
    assert _search(store, query, max_results, min_score, condition) == expected
