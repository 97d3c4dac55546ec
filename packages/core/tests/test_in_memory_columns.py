"""InMemoryEmbeddingStore.add_columns: the column-by-column bulk path equals add_all."""

from __future__ import annotations

import enum
import random
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragloom.core import (
    Embedding,
    EmbeddingSearchRequest,
    EmbeddingStoreError,
    InMemoryEmbeddingStore,
    InvalidMetadataError,
    MetadataTypeError,
    TextSegment,
    metadata_key,
)
from ragloom.core.filters import Filter

DIM = 8


class Colour(enum.StrEnum):
    RED = "red"
    BLUE = "blue"


def batch(n: int, seed: int = 0) -> tuple[np.ndarray, list[str], dict[str, list[Any]], list[str]]:
    """Vectors, texts, metadata columns (``None``: the row lacks the key) and ids."""
    rng = random.Random(seed)
    vectors = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    texts = [f"text {i} é" if i % 7 else "" for i in range(n)]

    def sometimes(make: Any) -> list[Any]:
        return [make(i) if rng.random() < 0.8 else None for i in range(n)]

    metadata = {
        "tenant": [f"tenant-{i % 5}" for i in range(n)],
        "year": sometimes(lambda i: 1990 + i % 30),
        "score": sometimes(lambda i: i / 7),
        "flag": sometimes(lambda i: i % 3 == 0),
        "ref": sometimes(lambda i: uuid.UUID(int=i % 4)),
        "colour": sometimes(lambda i: Colour.RED if i % 2 else Colour.BLUE),
        "big": sometimes(lambda i: 2**70 + i),
        "rare": [None] * (n - 1) + ["only"],
    }
    return vectors, texts, metadata, [f"id-{i}" for i in range(n)]


def segments_of(texts: list[str], metadata: dict[str, Any]) -> list[TextSegment]:
    rows = [{} for _ in texts]
    for key, values in metadata.items():
        for row, value in zip(rows, list(values), strict=True):
            if value is not None:
                row[key] = value.item() if isinstance(value, np.generic) else value
    return [TextSegment(text, row) for text, row in zip(texts, rows, strict=True)]


def everything(store: InMemoryEmbeddingStore, filter: Filter | None = None) -> list[Any]:
    """Every match of a search that returns all rows: ids, scores, vectors, texts and
    metadata with the exact type of each value."""
    query = Embedding(np.ones(DIM, dtype=np.float32))
    request = EmbeddingSearchRequest(query, max(len(store), 1), filter=filter)
    return [
        (
            m.embedding_id,
            m.score,
            m.embedding.vector.tolist(),
            None if m.embedded is None else m.embedded.text,
            None
            if m.embedded is None
            else {k: (type(v), v) for k, v in m.embedded.metadata.items()},
        )
        for m in store.search(request).matches
    ]


FILTERS: list[Filter] = [
    metadata_key("tenant").is_equal_to("tenant-2"),
    metadata_key("year").is_greater_than(2005),
    metadata_key("score").is_less_than(3.5) & metadata_key("flag").is_equal_to(True),
    metadata_key("ref").is_in([uuid.UUID(int=1), uuid.UUID(int=3)]),
    metadata_key("colour").is_equal_to("red"),
    metadata_key("big").is_greater_than(2**70 + 10),
    metadata_key("rare").is_equal_to("only"),
]


@pytest.mark.parametrize("n", [5, 300])  # below and above the table's vectorized encoding
def test_add_columns_equals_add_all(n: int) -> None:
    vectors, texts, metadata, ids = batch(n)
    by_rows = InMemoryEmbeddingStore()
    assert by_rows.add_all(vectors, segments_of(texts, metadata), ids=ids) == ids
    by_columns = InMemoryEmbeddingStore()
    assert by_columns.add_columns(vectors, texts, metadata, ids=ids) == ids
    assert everything(by_columns) == everything(by_rows)
    for filter in FILTERS:
        assert everything(by_columns, filter) == everything(by_rows, filter)
        assert everything(by_columns, filter) or n < 100  # the filter selects something


def test_array_columns_equal_python_values() -> None:
    n = 200
    vectors, texts, _, ids = batch(n)
    arrays = {
        "year": np.arange(n, dtype=np.int32),
        "count": np.arange(n, dtype=np.uint64),
        "score": np.linspace(0, 1, n, dtype=np.float32),
        "flag": np.arange(n) % 2 == 0,
        "label": np.array([f"l{i % 3}" for i in range(n)]),  # a str array: value by value
    }
    by_columns = InMemoryEmbeddingStore()
    by_columns.add_columns(vectors, texts, arrays, ids=ids)
    by_rows = InMemoryEmbeddingStore()
    by_rows.add_all(vectors, segments_of(texts, arrays), ids=ids)
    assert everything(by_columns) == everything(by_rows)
    assert everything(by_columns, metadata_key("year").is_less_than(10)) == everything(
        by_rows, metadata_key("year").is_less_than(10)
    )


def test_ints_beyond_int64_in_an_array_column() -> None:
    store = InMemoryEmbeddingStore()
    values = np.array([2**64 - 1, 1], dtype=np.uint64)
    store.add_columns(np.eye(2, DIM, dtype=np.float32), ["a", "b"], {"n": values})
    found = everything(store, metadata_key("n").is_equal_to(2**64 - 1))
    assert [m[4]["n"] for m in found] == [(int, 2**64 - 1)]


def test_add_columns_replaces_existing_ids_like_add_all() -> None:
    vectors, texts, metadata, ids = batch(40)
    later, later_texts, later_metadata, _ = batch(40, seed=1)
    later_ids = ids[20:] + [f"new-{i}" for i in range(20)]  # half replace, half new
    by_rows, by_columns = InMemoryEmbeddingStore(), InMemoryEmbeddingStore()
    by_rows.add_all(vectors, segments_of(texts, metadata), ids=ids)
    by_columns.add_columns(vectors, texts, metadata, ids=ids)
    by_rows.add_all(later, segments_of(later_texts, later_metadata), ids=later_ids)
    later_metadata["year"] = np.arange(40, dtype=np.int64)  # an array in the replace path
    by_rows.add_all(later, segments_of(later_texts, later_metadata), ids=later_ids)
    by_columns.add_columns(later, later_texts, later_metadata, ids=later_ids)
    assert len(by_columns) == 60
    assert everything(by_columns) == everything(by_rows)
    for filter in FILTERS:
        assert everything(by_columns, filter) == everything(by_rows, filter)


def test_without_texts_rows_have_no_segment() -> None:
    store = InMemoryEmbeddingStore()
    ids = store.add_columns(np.eye(3, DIM, dtype=np.float32))
    assert len(ids) == 3
    assert all(match[3] is None for match in everything(store))
    with pytest.raises(EmbeddingStoreError, match="metadata columns need texts"):
        store.add_columns(np.eye(1, DIM, dtype=np.float32), None, {"k": ["v"]})


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    vectors, texts, metadata, ids = batch(150)
    store = InMemoryEmbeddingStore()
    store.add_columns(vectors, texts, metadata, ids=ids)
    store.save(tmp_path / "store")
    for mmap in (False, True):
        loaded = InMemoryEmbeddingStore.load(tmp_path / "store", mmap=mmap)
        assert everything(loaded) == everything(store)
        for filter in FILTERS:
            assert everything(loaded, filter) == everything(store, filter)


def unchanged_after(
    store: InMemoryEmbeddingStore, error: type[Exception], match: str, *args: Any, **kwargs: Any
) -> None:
    before = everything(store)
    with pytest.raises(error, match=match):
        store.add_columns(*args, **kwargs)
    assert everything(store) == before


@pytest.fixture
def filled() -> InMemoryEmbeddingStore:
    store = InMemoryEmbeddingStore()
    store.add_columns(np.eye(2, DIM, dtype=np.float32), ["a", "b"], {"year": [2000, 2001]})
    return store


def test_bad_input_is_refused_naming_row_key_and_value(filled: InMemoryEmbeddingStore) -> None:
    three = np.ones((3, DIM), dtype=np.float32)
    unchanged_after(filled, EmbeddingStoreError, "got 2 texts for 3", three, ["a", "b"])
    unchanged_after(
        filled, EmbeddingStoreError, "text of segment 1 must be str", three, ["a", 7, "c"]
    )
    unchanged_after(
        filled,
        EmbeddingStoreError,
        "text of segment 2 .*lone surrogate",
        three,
        ["a", "b", "\ud800"],
    )
    unchanged_after(
        filled,
        EmbeddingStoreError,
        "'k': got 2 values for 3",
        three,
        ["a", "b", "c"],
        {"k": [1, 2]},
    )
    unchanged_after(
        filled,
        InvalidMetadataError,
        r"segment 1: metadata key 'k': value \[1\]",
        three,
        ["a", "b", "c"],
        {"k": ["x", [1], "y"]},
    )
    unchanged_after(
        filled,
        EmbeddingStoreError,
        r"segment 2: metadata .k. value .*surrogate",
        three,
        ["a", "b", "c"],
        {"k": ["x", "y", "\udc80"]},
    )
    unchanged_after(
        filled,
        InvalidMetadataError,
        "metadata key must be a non-empty string",
        three,
        ["a", "b", "c"],
        {"": [1, 2, 3]},
    )
    unchanged_after(
        filled,
        MetadataTypeError,
        "segment 2: metadata key 'k' expects str",
        three,
        ["a", "b", "c"],
        {"k": ["x", None, 5]},
    )
    unchanged_after(
        filled,
        MetadataTypeError,
        "segment 0: metadata key 'year' expects "
        r"int/float values \(the type the store holds",
        three,
        ["a", "b", "c"],
        {"year": ["1999", "2000", "2001"]},
    )
    unchanged_after(
        filled,
        EmbeddingStoreError,
        "id 'x' appears more than once",
        three,
        ["a", "b", "c"],
        ids=["x", "y", "x"],
    )
    unchanged_after(
        filled,
        EmbeddingStoreError,
        "embedding at index 1 contains NaN",
        np.array([[1.0] * DIM, [np.nan] * DIM, [1.0] * DIM], dtype=np.float32),
        ["a", "b", "c"],
    )


def test_declared_schema_is_enforced() -> None:
    store = InMemoryEmbeddingStore(metadata_schema={"year": int})
    with pytest.raises(MetadataTypeError, match="segment 1: metadata key 'year' is declared"):
        store.add_columns(np.ones((2, DIM), dtype=np.float32), ["a", "b"], {"year": [None, "2001"]})
    with pytest.raises(MetadataTypeError, match="declared int/float"):
        store.add_columns(
            np.ones((2, DIM), dtype=np.float32), ["a", "b"], {"year": np.array([True, False])}
        )
    assert len(store) == 0


def test_saved_checksums_are_zlibs_crc32(tmp_path: Path) -> None:
    """The manifest's CRC-32 (computed by ISA-L) is zlib's, so any reader can verify it."""
    import json
    import zlib

    vectors, texts, metadata, ids = batch(100)
    store = InMemoryEmbeddingStore()
    store.add_columns(vectors, texts, metadata, ids=ids)
    store.save(tmp_path)
    files = json.loads((tmp_path / "manifest.json").read_text())["files"]
    for entry in files.values():
        data = (tmp_path / entry["name"]).read_bytes()
        assert entry["crc32"] == f"{zlib.crc32(data):08x}"
