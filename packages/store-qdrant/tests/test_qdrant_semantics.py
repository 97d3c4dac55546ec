"""The Qdrant store against the in-memory store: filters, scores, order, edge values.

The in-memory store is the reference: the same rows and the same filters must match the
same ids (or raise ``InvalidFilterError`` in both), and searches must return the same
ids with the same scores (exact rescoring: equal to the last bit).

The second half runs the same cases on Qdrant's real engine:
The store's filters and score assumptions on Qdrant's real engine (qdrant-edge-py).

qdrant-client's local mode is a Python re-implementation of Qdrant; ``qdrant-edge-py``
embeds the Rust engine itself (the segment, payload and filter code of the server). The
store cannot run on it directly (another API), so these tests load the store's own
payloads into an edge shard and run the store's compiled filters there, translated
one-to-one into the edge's identical condition classes:

* every exact filter matches exactly what core's ``Filter.test`` matches, a superset
  (inexact) filter matches a superset, and the type-mismatch probe finds the entries it
  must (as in local mode);
* the engine's cosine scores stay within the store's slack of the exact cosines, and it
  stores cosine vectors normalized (why the store keeps the original vector).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import qdrant_edge as edge
from qdrant_client import models

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
from ragloom.core.stores.scores import exact_cosines
from ragloom.stores.qdrant import QdrantEmbeddingStore
from ragloom.stores.qdrant._filters import compile_filter
from ragloom.stores.qdrant._payload import point_id, point_payload
from ragloom.stores.qdrant.store import _SLACK

DIMENSION = 4
U1 = uuid.UUID("11111111-1111-4111-8111-111111111111")
U2 = uuid.UUID("22222222-2222-4222-8222-222222222222")

# Stored numbers: every int here is exactly a float64 (the store refuses others).
STORED_NUMBERS: list[Any] = [
    0, 1, -1, 2, 3, 2**53, 2**63, 2**70, -(2**60),
    0.0, -0.0, 0.5, 2.0, 2.5, 0.1, -3.75, 2.0**53, 2.0**53 - 1, 1e-300, 5e-324, 1e300, -1e300,
]  # fmt: skip
STORED_STRS = ["", "a", "B", "b", "é", "\uffff", "😀", "a'b", 'q"q', "x;--", "$$", "\\", "a.b[0]",
               "nan", "A\u0300", "ab", "\x00nul", "%s", str(U1), "not-a-uuid"]  # fmt: skip
STORED_BOOLS: list[Any] = [True, False]
STORED_UUIDS: list[Any] = [U1, U2]  # one type per key: UUID filters on strs use STORED_STRS

# Filter values: any int, including ones between floats.
FILTER_NUMBERS: list[Any] = [
    0, 1, -1, 2, 3, 2**53, 2**53 + 1, 2**53 - 1, 2**63, 2**63 + 1, 2**70, 2**70 - 1,
    10**30, -(10**30), 10**400, -(10**400), 0.0, -0.0, 2.0, 2.5, 0.1, 2.0**53, 1e300, 5e-324,
]  # fmt: skip
FILTER_STRS = [*STORED_STRS, "", "a\x00", "zz", "A"]


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


# ---------------------------------------------------------------- the real engine


def to_edge(condition: Any) -> Any:
    """A qdrant-client condition as the edge engine's identical class."""
    if isinstance(condition, models.Filter):

        def parts(items: Any) -> Any:
            return None if not items else [to_edge(item) for item in items]

        return edge.Filter(
            must=parts(condition.must),
            should=parts(condition.should),
            must_not=parts(condition.must_not),
        )
    assert isinstance(condition, models.FieldCondition), condition
    if condition.range is not None:
        r = condition.range
        return edge.FieldCondition(
            key=condition.key, range=edge.RangeFloat(gte=r.gte, gt=r.gt, lte=r.lte, lt=r.lt)
        )
    match = condition.match
    if isinstance(match, models.MatchValue):
        native: Any = edge.MatchValue(match.value)
    elif isinstance(match, models.MatchAny):
        native = edge.MatchAny(list(match.any))
    elif isinstance(match, models.MatchSubstring):
        native = edge.MatchSubstring(match.substring)
    else:
        raise AssertionError(f"unexpected condition {condition!r}")
    return edge.FieldCondition(key=condition.key, match=native)


def _shard(tmp_path: Path, rows: list[Any]) -> tuple[Any, list[dict[str, Any]], set[str]]:
    """An edge shard holding ``rows`` under key "k" (and one row without it).

    Also returns the ids whose payload the edge's Python binding did not store exactly
    (qdrant-edge-py 0.9 rounds some float payloads, e.g. ``2.0**53 - 1``): those are left
    out of the comparisons, as they test the binding, not the engine.
    """
    shard = edge.EdgeShard.create(
        str(tmp_path / "shard"),
        edge.EdgeConfig(
            vectors=edge.EdgeVectorParams(size=DIMENSION, distance=edge.Distance.Cosine)
        ),
    )
    vectors = np.random.default_rng(len(rows)).uniform(-1, 1, (len(rows) + 1, DIMENSION))
    metadata: list[dict[str, Any]] = [{"k": value} for value in rows] + [{"other": 1}]
    payloads = [
        point_payload(f"id-{i}", i, vectors[i].astype(np.float32), "t", meta)
        for i, meta in enumerate(metadata)
    ]
    points = [
        edge.Point(id=point_id(f"id-{i}"), vector=vectors[i].tolist(), payload=payload)
        for i, payload in enumerate(payloads)
    ]
    shard.update(edge.UpdateOperation.upsert_points(points))
    stored = shard.retrieve([point_id(f"id-{i}") for i in range(len(points))], True, False)
    by_rid = {record.payload["rid"]: record.payload for record in stored}
    lossy = {
        rid
        for rid, payload in by_rid.items()
        if any(
            type(value) is not type(payloads[int(rid[3:])][name])
            or value != payloads[int(rid[3:])][name]
            for name, value in payload.items()
        )
    }
    return shard, metadata, lossy


def _matching(shard: Any, condition: models.Filter | None) -> set[str]:
    found = shard.query(
        edge.QueryRequest(
            limit=1000,
            query=edge.Query.Nearest([1.0, 1.0, 1.0, 1.0]),
            filter=None if condition is None else to_edge(condition),
            with_payload=["rid"],
        )
    )
    return {point.payload["rid"] for point in found}


def _expected(condition: Filter, metadata: list[dict[str, Any]]) -> set[str] | None:
    """The ids ``condition`` matches by core's semantics (None: it raises a mismatch)."""
    try:
        return {f"id-{i}" for i, meta in enumerate(metadata) if condition.test(meta)}
    except InvalidFilterError:
        return None


@pytest.mark.parametrize(
    ("rows", "filters"),
    [
        (STORED_NUMBERS, _filters(FILTER_NUMBERS, ordered=True, contains=False)),
        (STORED_STRS, _filters(FILTER_STRS, ordered=True, contains=True)),
        (STORED_UUIDS, _filters([U1, U2], ordered=False, contains=False)),
        (STORED_UUIDS, _filters([str(U1), "a"], ordered=True, contains=True)),
        (STORED_STRS, _filters([U1, 1, True], ordered=False, contains=False)),
    ],
    # No bools: qdrant-edge-py 0.9 turns MatchValue(True) into the integer 1 (see README).
    ids=["numbers", "strs", "uuids", "str-filters-on-uuids", "mismatches"],
)
def test_compiled_filters_match_core_semantics_on_the_engine(
    tmp_path: Path, rows: list[Any], filters: list[Filter]
) -> None:
    shard, metadata, lossy = _shard(tmp_path, rows)
    assert len(lossy) <= 2, lossy  # only the values named in the README
    for condition in filters:
        compiled = compile_filter(condition)
        expected = _expected(condition, metadata)
        expected = None if expected is None else expected - lossy
        probe = (
            models.Filter(
                must=[
                    models.FieldCondition(
                        key="kinds", match=models.MatchAny(any=list(compiled.mismatch))
                    )
                ]
            )
            if compiled.mismatch
            else None
        )
        found_mismatch = bool(probe is not None and _matching(shard, probe))
        assert found_mismatch == (expected is None), str(condition)
        if expected is None:
            continue
        native = compiled.native
        got = _matching(shard, native.filter) - lossy
        if native.exact:
            assert got == expected, str(condition)
        else:
            assert got >= expected, str(condition)
    shard.close()


def test_engine_scores_are_within_the_slack_of_exact_cosines(tmp_path: Path) -> None:
    dimension = 384
    rng = np.random.default_rng(3)
    vectors = (rng.normal(size=(500, dimension)) * rng.uniform(0.01, 100, (500, 1))).astype(
        np.float32
    )
    shard = edge.EdgeShard.create(
        str(tmp_path / "scores"),
        edge.EdgeConfig(
            vectors=edge.EdgeVectorParams(size=dimension, distance=edge.Distance.Cosine)
        ),
    )
    shard.update(
        edge.UpdateOperation.upsert_points(
            [edge.Point(id=i, vector=v.tolist(), payload={"i": i}) for i, v in enumerate(vectors)]
        )
    )
    worst = 0.0
    for seed in range(5):
        query = np.random.default_rng(100 + seed).normal(size=dimension).astype(np.float32)
        found = shard.query(
            edge.QueryRequest(limit=500, query=edge.Query.Nearest(query.tolist()), with_vector=True)
        )
        exact = exact_cosines(vectors, query)
        for point in found:
            worst = max(worst, abs(point.score - exact[point.id]))
        stored = np.asarray(found[0].vector, dtype=np.float32)
        assert abs(float(np.linalg.norm(stored)) - 1.0) < 1e-5  # normalized by the engine
    assert worst < _SLACK / 10, worst
    shard.close()


def test_an_empty_filter_deletes_everything_on_the_engine(tmp_path: Path) -> None:
    shard, metadata, _ = _shard(tmp_path, ["a", "b"])
    assert len(_matching(shard, models.Filter())) == len(metadata)
    shard.update(edge.UpdateOperation.delete_points_by_filter(to_edge(models.Filter())))
    assert _matching(shard, None) == set()
    shard.close()


def test_metacharacter_keys_never_reach_a_json_path(tmp_path: Path) -> None:
    nasty = 'a."b"[0]\\'
    shard, _, _ = _shard(tmp_path, [nasty, "x"])
    condition = metadata_key("k").is_equal_to(nasty)
    assert _matching(shard, compile_filter(condition).native.filter) == {"id-0"}
    assert uuid.UUID(point_id(nasty))
    shard.close()
