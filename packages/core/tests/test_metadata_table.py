"""MetadataTable: columnar storage of row metadata (append, set_row, delete, copy, masks)."""

from __future__ import annotations

import enum
import math
import uuid
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.core import InvalidMetadataError, Metadata, metadata_key
from ragloom.core.metadata_table import MetadataTable

U = uuid.UUID("12345678-1234-5678-1234-567812345678")
ROWS: list[dict[str, Any]] = [
    {"s": "a", "i": 1, "f": 0.5, "b": True, "u": U},
    {"s": "b", "i": 2**70, "f": -0.0, "b": False},
    {},
    {"i": -(2**63), "f": math.nan, "x": "mixed"},
    {"x": 3, "f": math.inf, "s": "a"},
]


def typed(row: dict[str, Any]) -> dict[str, tuple[type, str]]:
    """A row compared by type and repr, so that 1 != True, -0.0 != 0.0 and nan == nan."""
    return {key: (type(value), repr(value)) for key, value in row.items()}


def rows_of(table: MetadataTable) -> list[dict[str, tuple[type, str]]]:
    return [typed(table.row(i)) for i in range(len(table))]


def test_append_and_read_back_preserves_exact_values_and_types() -> None:
    table = MetadataTable()
    assert len(table) == 0
    table.append(ROWS[:2])
    table.append(ROWS[2:])
    assert len(table) == len(ROWS)
    assert rows_of(table) == [typed(row) for row in ROWS]
    assert [typed(row) for row in table.take(np.arange(len(ROWS)))] == rows_of(table)
    assert typed(table.row(-1)) == typed(ROWS[-1])
    assert [typed(row) for row in table.take([3, 0, 3])] == [typed(ROWS[i]) for i in (3, 0, 3)]
    assert table.take([]) == []


def test_one_row_at_a_time_equals_one_batch() -> None:
    single, batch = MetadataTable(), MetadataTable()
    for row in ROWS:
        single.append([row])
    batch.append(ROWS)
    assert rows_of(single) == rows_of(batch)


def test_accepts_metadata_and_normalizes_values() -> None:
    class Color(enum.StrEnum):
        RED = "red"

    table = MetadataTable()
    table.append([Metadata(k=1, c="red"), {"k": np.int64(2), "c": Color.RED}])  # type: ignore[dict-item]
    assert rows_of(table) == [typed({"k": 1, "c": "red"}), typed({"k": 2, "c": "red"})]
    assert metadata_key("c").is_equal_to("red").mask(table).tolist() == [True, True]


def test_invalid_rows_are_rejected_and_leave_the_table_unchanged() -> None:
    table = MetadataTable()
    table.append(ROWS)
    before = rows_of(table)
    with pytest.raises(InvalidMetadataError, match="'bad'"):
        table.append([{"s": "fine"}, {"s": "new", "bad": [1]}])  # type: ignore[dict-item]
    with pytest.raises(InvalidMetadataError):
        table.append([{"": 1}])
    with pytest.raises(InvalidMetadataError):
        table.set_row(0, {"s": None})  # type: ignore[dict-item]
    assert rows_of(table) == before
    assert metadata_key("s").is_equal_to("new").mask(table).tolist() == [False] * len(ROWS)


def test_set_row_replaces_the_whole_row() -> None:
    table = MetadataTable()
    table.append(ROWS)
    table.set_row(0, {"s": "z", "new": 7})
    table.set_row(-1, {})
    expected = [{"s": "z", "new": 7}, *ROWS[1:4], {}]
    assert rows_of(table) == [typed(row) for row in expected]
    assert metadata_key("new").is_equal_to(7).mask(table).tolist() == [1, 0, 0, 0, 0]
    assert metadata_key("s").is_equal_to("a").mask(table).tolist() == [0] * 5
    assert metadata_key("u").is_not_equal_to(U).mask(table).all()
    with pytest.raises(IndexError):
        table.set_row(5, {})


def test_delete_compacts_and_keeps_order() -> None:
    table = MetadataTable()
    table.append(ROWS)
    table.delete(np.array([3, 0, 3]))
    assert rows_of(table) == [typed(row) for row in (ROWS[1], ROWS[2], ROWS[4])]
    assert metadata_key("s").is_equal_to("a").mask(table).tolist() == [False, False, True]
    table.delete(np.array([], dtype=np.int64))
    table.delete([])
    assert len(table) == 3
    table.append([{"s": "a"}])
    assert metadata_key("s").is_equal_to("a").mask(table).tolist() == [0, 0, 1, 1]
    table.delete(np.arange(4))
    assert len(table) == 0
    assert table.take([]) == []


def test_bad_positions() -> None:
    table = MetadataTable()
    table.append(ROWS)
    with pytest.raises(TypeError):
        table.delete(np.array([True, False, True, False, False]))
    with pytest.raises(TypeError):
        table.delete(np.array([0.0]))
    with pytest.raises(IndexError):
        table.delete(np.array([5]))
    with pytest.raises(IndexError):
        table.take(np.array([-1]))
    with pytest.raises(IndexError):
        table.row(5)
    assert len(table) == len(ROWS)


def test_clear_and_copy() -> None:
    table = MetadataTable()
    table.append(ROWS)
    copy = table.copy()
    table.set_row(0, {"s": "changed"})
    table.delete([1])
    assert rows_of(copy) == [typed(row) for row in ROWS]
    assert metadata_key("s").is_equal_to("a").mask(copy).tolist() == [1, 0, 0, 0, 1]
    copy.append([{"s": "c"}])
    assert len(table) == 4
    table.clear()
    assert len(table) == 0
    assert metadata_key("s").is_equal_to("a").mask(table).shape == (0,)
    table.append([{"s": "a"}])
    assert table.row(0) == {"s": "a"}


def test_capacity_grows_geometrically() -> None:
    table = MetadataTable()
    reallocations = 0
    capacity = table._capacity
    for i in range(5000):
        table.append([{"tenant": i % 10}])
        if table._capacity != capacity:
            reallocations += 1
            capacity = table._capacity
    assert reallocations <= 10
    assert metadata_key("tenant").is_equal_to(3).mask(table).sum() == 500


def test_deleted_values_leave_the_string_dictionary() -> None:
    table = MetadataTable()
    table.append([{"id": f"doc-{i}", "n": i} for i in range(1000)])
    table.delete(np.arange(990))
    column = table._columns["id"]
    assert len(column.objects) < 200
    assert table.take(np.arange(10)) == [{"id": f"doc-{i}", "n": i} for i in range(990, 1000)]
    assert metadata_key("id").is_in(["doc-995", "doc-5"]).mask(table).sum() == 1
    assert metadata_key("id").is_greater_than("doc-997").mask(table).sum() == 2


def test_keys_with_no_values_left_disappear() -> None:
    table = MetadataTable()
    table.append([{"a": 1}, {"b": "x"}])
    table.delete([1])
    assert repr(table) == "MetadataTable(rows=1, keys=['a'])"
    table.set_row(0, {"c": True})
    assert repr(table) == "MetadataTable(rows=1, keys=['c'])"


# -- property: the table behaves like a list of dicts -------------------------------------

values = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([2**63, -(2**63) - 1, 2**63 - 1]),
    st.floats(allow_nan=True),
    st.booleans(),
    st.text(alphabet="ab", max_size=2),
    st.sampled_from([U, uuid.UUID(int=7)]),
)
rows = st.dictionaries(st.sampled_from(["a", "b", "c"]), values, max_size=3)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.lists(rows, max_size=4)),
        st.tuples(st.just("set_row"), st.integers(0, 100), rows),
        st.tuples(st.just("delete"), st.lists(st.integers(0, 100), max_size=3)),
        st.tuples(st.just("copy")),
        st.tuples(st.just("clear")),
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(operations=operations)
def test_table_matches_a_list_of_dicts(operations: list[tuple[Any, ...]]) -> None:
    table = MetadataTable()
    model: list[dict[str, Any]] = []
    for name, *args in operations:
        if name == "append":
            table.append(args[0])
            model.extend(args[0])
        elif name == "set_row" and model:
            i = args[0] % len(model)
            table.set_row(i, args[1])
            model[i] = args[1]
        elif name == "delete" and model:
            positions = sorted({p % len(model) for p in args[0]})
            table.delete(np.array(positions, dtype=np.int64))
            model = [row for i, row in enumerate(model) if i not in positions]
        elif name == "copy":
            table = table.copy()
        elif name == "clear":
            table.clear()
            model = []
        assert len(table) == len(model)
    assert rows_of(table) == [typed(row) for row in model]
    for f in [
        metadata_key("a").is_not_equal_to(1),
        metadata_key("b").is_in(["a", "b"]),
        metadata_key("c").is_equal_to(True),
    ]:
        try:
            expected = [f.test(row) for row in model]
        except Exception:
            continue
        assert f.mask(table).tolist() == expected
