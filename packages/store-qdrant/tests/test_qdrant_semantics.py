"""The Qdrant store against the in-memory store: filters, scores, order, edge values.

The in-memory store is the reference: the same rows and the same filters must match the
same ids (or raise ``InvalidFilterError`` in both), and searches must return the same
ids with the same scores (exact rescoring: equal to the last bit).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from ragloom.core import (
    Embedding,
    EmbeddingSearchRequest,
    InMemoryEmbeddingStore,
    InvalidFilterError,
    TextSegment,
    metadata_key,
)
from ragloom.core.errors import EmbeddingStoreError
from ragloom.core.filter_values import value_kind
from ragloom.core.filters import Filter
from ragloom.core.stores import EmbeddingStore
from ragloom.stores.qdrant import QdrantEmbeddingStore

DIMENSION = 4
U1 = uuid.UUID("11111111-1111-4111-8111-111111111111")
U2 = uuid.UUID("22222222-2222-4222-8222-222222222222")

# Stored numbers: every int here is exactly a float64 (the store refuses others).
STORED_NUMBERS: list[Any] = [
    0, 1, -1, 2, 3, 2**53, 2**63, 2**70, -(2**60),
    0.0, -0.0, 0.5, 2.0, 2.5, 0.1, -3.75, 2.0**53, 2.0**53 - 1, 1e-300, 5e-324, 1e300, -1e300,
]  # fmt: skip
STORED_STRS = ["", "a", "B", "b", "é", "\uffff", "😀", "a'b", 'q"q', "x;--", "$$", "\\", "a.b[0]",
               "nan", "A\u0300", "ab", "\x00nul", "%s"]  # fmt: skip
STORED_BOOLS: list[Any] = [True, False]
STORED_UUIDS: list[Any] = [U1, U2, str(U1), "not-a-uuid"]

# Filter values: any int, including ones between floats.
FILTER_NUMBERS: list[Any] = [
    0, 1, -1, 2, 3, 2**53, 2**53 + 1, 2**53 - 1, 2**63, 2**63 + 1, 2**70, 2**70 - 1,
    10**30, -(10**30), 10**400, -(10**400), 0.0, -0.0, 2.0, 2.5, 0.1, 2.0**53, 1e300, 5e-324,
]  # fmt: skip
FILTER_STRS = STORED_STRS + ["", "a\x00", "zz", "A"]


def _filters(values: list[Any], ordered: bool, contains: bool) -> list[Filter]:
    key = metadata_key("k")
    found: list[Filter] = []
    for value in values:
        found += [key.is_equal_to(value), key.is_not_equal_to(value)]
        if ordered:
            found += [
                key.is_greater_than(value),
                key.is_greater_than_or_equal_to(value),
                key.is_less_than(value),
                key.is_less_than_or_equal_to(value),
            ]
        if contains and isinstance(value, str):
            found.append(key.contains_string(value))
        found += [key.is_in([value]), key.is_not_in([value])]
    same = [v for v in values if value_kind(v) == value_kind(values[0])]
    found += [key.is_in(same[:3]), key.is_not_in(same[-3:])]
    return found


def _pair(rows: list[Any]) -> Iterator[tuple[EmbeddingStore, EmbeddingStore, list[str]]]:
    rng = np.random.default_rng(len(rows))
    vectors = rng.uniform(-1, 1, size=(len(rows) + 2, DIMENSION)).astype(np.float32)
    segments = [TextSegment(f"e{i}", {"k": value}) for i, value in enumerate(rows)]
    segments += [TextSegment("missing", {"other": 1}), TextSegment("empty")]
    ids = [f"id-{i}" for i in range(len(segments))]
    reference = InMemoryEmbeddingStore()
    store = QdrantEmbeddingStore(f"s{uuid.uuid4().hex}", location=":memory:")
    for target in (reference, store):
        target.add_all([Embedding(v) for v in vectors], segments, ids=ids)
    yield reference, store, ids
    store.close()


def _outcome(store: EmbeddingStore, condition: Filter) -> set[str] | str:
    request = EmbeddingSearchRequest(Embedding([1, 1, 1, 1]), max_results=1000, filter=condition)
    try:
        return {m.embedding_id for m in store.search(request).matches}
    except InvalidFilterError:
        return "InvalidFilterError"


@pytest.mark.parametrize(
    ("rows", "filters"),
    [
        (STORED_NUMBERS, _filters(FILTER_NUMBERS, ordered=True, contains=False)),
        (STORED_STRS, _filters(FILTER_STRS, ordered=True, contains=True)),
        (STORED_BOOLS, _filters([True, False], ordered=False, contains=False)),
        (STORED_UUIDS, _filters([U1, U2], ordered=False, contains=False)),
        (STORED_UUIDS, _filters([str(U1), "a"], ordered=True, contains=True)),  # raises
        (STORED_STRS, _filters([U1, 1, True], ordered=False, contains=False)),  # raises
    ],
    ids=["numbers", "strs", "bools", "uuids", "str-filters-on-uuids", "mismatches"],
)
def test_filters_agree_with_the_in_memory_store(rows: list[Any], filters: list[Filter]) -> None:
    for reference, store, _ in _pair(rows):
        for condition in filters:
            expected = _outcome(reference, condition)
            assert _outcome(store, condition) == expected, str(condition)
            if expected != "InvalidFilterError":  # removal matches the same entries
                before = len(store)
                store.remove_all(filter=condition)
                assert len(store) == before - len(expected), str(condition)
                store.add_all(
                    [m.embedding for m in _all(reference)],
                    [m.embedded for m in _all(reference)],  # type: ignore[misc]
                    ids=[m.embedding_id for m in _all(reference)],
                )


def _all(store: EmbeddingStore) -> list[Any]:
    request = EmbeddingSearchRequest(Embedding([1, 1, 1, 1]), max_results=1000)
    return store.search(request).matches


@pytest.mark.parametrize("seed", range(4))
def test_scores_and_order_equal_the_in_memory_store(seed: int) -> None:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(200, DIMENSION)).astype(np.float32)
    vectors[50:60] = vectors[7]  # ties, spread over the insertion order
    vectors[120] = vectors[7]
    segments = [TextSegment(f"e{i}", {"tenant": "ab"[i % 2], "n": i}) for i in range(200)]
    reference = InMemoryEmbeddingStore()
    store = QdrantEmbeddingStore("scores", location=":memory:", dimension=DIMENSION)
    for target in (reference, store):
        target.add_all([Embedding(v) for v in vectors], segments, ids=[f"i{i}" for i in range(200)])
    queries = [vectors[7], rng.normal(size=DIMENSION), np.zeros(DIMENSION)]
    conditions: list[Filter | None] = [
        None,
        metadata_key("tenant").is_equal_to("a"),
        metadata_key("tenant").is_greater_than("a") & metadata_key("n").is_less_than(150),
    ]
    for query in queries:
        for condition in conditions:
            for k, min_score in [(1, 0.0), (5, 0.0), (12, 0.0), (40, 0.6), (300, 0.0)]:
                request = EmbeddingSearchRequest(Embedding(query), k, min_score, condition)
                got = store.search(request).matches
                want = reference.search(request).matches
                assert [m.embedding_id for m in got] == [m.embedding_id for m in want]
                assert [m.score for m in got] == [m.score for m in want]
    store.close()


def test_replacing_an_entry_keeps_its_insertion_position() -> None:
    same = Embedding([0.3, 0.4, 0.5, 0.6])
    reference = InMemoryEmbeddingStore()
    store = QdrantEmbeddingStore("replace", location=":memory:", dimension=DIMENSION)
    for target in (reference, store):
        target.add_all([same, same, same], ids=["a", "b", "c"])
        target.add(same, TextSegment("new a"), id="a")
    request = EmbeddingSearchRequest(same, 10)
    assert [m.embedding_id for m in store.search(request).matches] == ["a", "b", "c"]
    assert [m.embedding_id for m in reference.search(request).matches] == ["a", "b", "c"]
    store.close()


def test_large_batches_are_written_in_bounded_requests() -> None:
    store = QdrantEmbeddingStore("batches", location=":memory:", dimension=DIMENSION, batch_size=7)
    vectors = np.random.default_rng(1).normal(size=(50, DIMENSION)).astype(np.float32)
    ids = store.add_all([Embedding(v) for v in vectors])
    assert len(store) == 50
    store.remove_all(ids[:23])
    assert len(store) == 27
    store.close()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (2**53 + 1, "not exactly representable"),
        (float("nan"), "not finite"),
        (float("inf"), "not finite"),
        ("\ud800", "not valid Unicode"),
    ],
)
def test_values_a_qdrant_payload_cannot_hold_exactly_are_refused(
    memory_store: QdrantEmbeddingStore, value: Any, message: str
) -> None:
    memory_store.add(Embedding([1, 0, 0, 0]), id="kept")
    with pytest.raises(EmbeddingStoreError, match=message):
        memory_store.add_all(
            [Embedding([0, 1, 0, 0]), Embedding([0, 0, 1, 0])],
            [TextSegment("good", {"k": 1}), TextSegment("bad", {"k": value})],
        )
    assert len(memory_store) == 1
