"""Columnar persistence pieces and the bulk segment paths of the in-memory store."""

from __future__ import annotations

import io
import math
import uuid

import numpy as np
import pytest

from ragloom.core import EmbeddingStoreError, InvalidMetadataError, Metadata, TextSegment
from ragloom.core.stores._columnar import StringColumn, encode_strings, read_arrays, write_arrays
from ragloom.core.stores.metadata_table import MetadataTable
from ragloom.core.stores.validation import split_segments


def _round_trip(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    sink = io.BytesIO()
    layout = write_arrays(sink, arrays)
    buffer = np.frombuffer(sink.getvalue(), dtype=np.uint8).copy()
    return read_arrays(buffer, layout)


@pytest.mark.parametrize(
    "values",
    [[], ["a", "", None, "bc"], ["ü✓ß", None, "x\nz", "\U0001f600", ""], [None, None]],
)
def test_strings_round_trip_at_once_and_one_by_one(values: list[str | None]) -> None:
    column = StringColumn(_round_trip(encode_strings(values, "s")), "s", len(values))
    assert column.to_list() == values
    assert [column[i] for i in range(len(values))] == values


def test_offsets_that_split_a_character_are_refused() -> None:
    arrays = encode_strings(["ü", "a"], "s")
    arrays["s.offsets"] = np.array([0, 1, 3], dtype=np.int64)
    with pytest.raises(ValueError, match="split a UTF-8 character"):
        StringColumn(arrays, "s", 2).to_list()
    arrays["s.offsets"] = np.array([0, 5, 3], dtype=np.int64)
    with pytest.raises(ValueError, match="out of order"):
        StringColumn(arrays, "s", 2)


def test_layouts_outside_the_file_or_of_other_dtypes_are_refused() -> None:
    buffer = np.zeros(128, dtype=np.uint8)
    with pytest.raises(ValueError, match="beyond the end"):
        read_arrays(buffer, {"a": {"dtype": "<i8", "shape": [17], "offset": 0}})
    with pytest.raises(ValueError, match="unsupported dtype"):
        read_arrays(buffer, {"a": {"dtype": "|O", "shape": [1], "offset": 0}})
    with pytest.raises(ValueError, match="malformed"):
        read_arrays(buffer, {"a": {"dtype": "<i8", "shape": [1], "offset": 3}})


def test_metadata_table_round_trips_every_type_through_arrays() -> None:
    rows = [
        {"s": "x", "i": 7, "f": 0.5, "b": False, "u": uuid.uuid4(), "big": 2**70},
        {"s": "ü", "f": math.nan, "mixed": "text"},
        {},
        {"i": -(2**63), "mixed": 3, "u": uuid.uuid4()},
    ]
    table = MetadataTable()
    table.append(rows)
    keys, arrays = table.to_arrays()
    loaded = MetadataTable.from_arrays(len(rows), keys, _round_trip(arrays))
    assert repr(loaded.take(np.arange(4))) == repr(table.take(np.arange(4)))  # nan-aware
    assert [{k: type(v) for k, v in row.items()} for row in loaded.take(np.arange(4))] == [
        {k: type(v) for k, v in row.items()} for row in rows
    ]


def test_metadata_arrays_that_disagree_are_refused() -> None:
    table = MetadataTable()
    table.append([{"s": "a"}, {"s": "b"}])
    keys, arrays = table.to_arrays()
    arrays["metadata.0.payload"] = np.array([0, 5], dtype=np.int64)
    with pytest.raises(ValueError, match="missing dictionary values"):
        MetadataTable.from_arrays(2, keys, arrays)
    keys, arrays = table.to_arrays()
    arrays["metadata.0.codes"] = np.array([4, 9], dtype=np.int8)
    with pytest.raises(ValueError, match="invalid type codes"):
        MetadataTable.from_arrays(2, keys, arrays)


def test_segment_metadata_is_validated_at_once_and_wrapped_on_first_read() -> None:
    source = {"a": 1}
    segment = TextSegment("t", source)
    source["a"] = 2  # copied on construction
    metadata = segment.metadata
    assert metadata is segment.metadata
    assert metadata == {"a": 1}
    metadata["b"] = "x"
    assert segment.metadata.to_dict() == {"a": 1, "b": "x"}
    segment.metadata = {"c": True}  # type: ignore[assignment]
    assert isinstance(segment.metadata, Metadata)
    assert segment.metadata == {"c": True}
    assert TextSegment("t", {"n": np.int64(3)}).metadata.to_dict() == {"n": 3}
    with pytest.raises(InvalidMetadataError, match="'k'"):
        TextSegment("t", {"k": [1]})
    with pytest.raises(InvalidMetadataError, match="non-empty string"):
        TextSegment("t", {"": 1})


@pytest.mark.parametrize(
    ("segment", "message"),
    [
        (TextSegment("bad \udc80"), "text of segment 1"),
        (TextSegment("t", {"bad \udc80": 1}), "segment 1: metadata key"),
        (TextSegment("t", {"k": "bad \udc80"}), "segment 1: metadata 'k' value"),
    ],
)
def test_split_segments_finds_the_segment_at_fault(segment: TextSegment, message: str) -> None:
    batch = [TextSegment("ok ✓", {"k": "ü"}), segment]
    with pytest.raises(EmbeddingStoreError, match=message):
        split_segments(batch, 2)


def test_split_segments_copies_unless_asked_not_to() -> None:
    segments = [TextSegment("a", {"k": 1}), TextSegment("b")]
    texts, copied = split_segments(segments, 2)
    assert texts == ["a", "b"]
    assert copied == [{"k": 1}, {}]
    assert copied is not None
    copied[0]["k"] = 2
    assert segments[0].metadata["k"] == 1
    _, shared = split_segments(segments, 2, copy=False)
    assert shared is not None
    assert shared[0] is segments[0].metadata._data
