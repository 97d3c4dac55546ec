"""Beyond the suites, on Milvus Lite: injection through keys and values, differential
filtering against the in-memory store, typed edge values, ties past the candidate margin,
dimension checks, reopening a database file, concurrent writers, settings at the edge."""

from __future__ import annotations

import math
import random
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from pymilvus import MilvusClient  # type: ignore[import-untyped]

from ragloom.core import InMemoryEmbeddingStore
from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding
from ragloom.core.errors import EmbeddingStoreError, InvalidFilterError
from ragloom.core.filters import Filter, metadata_key
from ragloom.core.metadata import MetadataValue
from ragloom.core.stores.base import EmbeddingSearchRequest, EmbeddingStore
from ragloom.stores.milvus import MilvusEmbeddingStore
from ragloom.stores.milvus._filters import matches

pytestmark = pytest.mark.integration

DIM = 4
# Keys and str values aimed at the expression language: quotes, backslashes, brackets,
# JSON-pointer and template syntax, like wildcards, boolean operators, control characters.
NASTY = [
    'a"b',
    "a'b",
    "a\\b",
    'a\\"b',
    'x"] == 1 or metadata["y',
    "' or '1'=='1",
    "{p0}",
    "a/b",
    "a~1b",
    "a.b",
    "a[0]",
    "50%_off",
    "line\nbreak",
    "tab\there",
    "nul\x00byte",
    "é😀",
    " and true",
    "$meta",
]


@pytest.fixture
def store(milvus_client: MilvusClient, collection_name: str) -> Iterator[MilvusEmbeddingStore]:
    with MilvusEmbeddingStore(
        client=milvus_client, collection_name=collection_name, dimension=DIM
    ) as store:
        yield store


def _vectors(count: int, seed: int = 0) -> list[Embedding]:
    rng = np.random.default_rng(seed)
    return [Embedding(v) for v in rng.normal(size=(count, DIM)).astype(np.float32)]


def _fill(stores: list[EmbeddingStore], metadata: list[dict[str, object]]) -> list[str]:
    vectors = _vectors(len(metadata))
    segments = [TextSegment(f"t{i}", m) for i, m in enumerate(metadata)]  # type: ignore[arg-type]
    ids = [f"id{i}" for i in range(len(metadata))]
    for store in stores:
        store.add_all(vectors, segments, ids=ids)
    return ids


def _found(
    store: EmbeddingStore, condition: Filter | None, k: int = 100
) -> list[tuple[str, float]]:
    request = EmbeddingSearchRequest([0.5, -0.25, 1.0, 0.125], max_results=k, filter=condition)
    return [(m.embedding_id, m.score) for m in store.search(request).matches]


def _same(milvus: EmbeddingStore, memory: EmbeddingStore, condition: Filter | None) -> None:
    try:
        expected = _found(memory, condition)
    except InvalidFilterError:
        with pytest.raises(InvalidFilterError):
            _found(milvus, condition)
        return
    got = _found(milvus, condition)
    assert [i for i, _ in got] == [i for i, _ in expected], str(condition)
    np.testing.assert_allclose([s for _, s in got], [s for _, s in expected], rtol=0, atol=1e-12)


def test_injection_through_keys_and_values(store: MilvusEmbeddingStore) -> None:
    memory = InMemoryEmbeddingStore()
    rows: list[dict[str, object]] = [{key: value} for key in NASTY for value in NASTY[:6]]
    rows += [{"v": value} for value in NASTY] + [{"y": 1}, {"other": "x"}]
    _fill([store, memory], rows)
    values = [*NASTY[:6], "50%_off", "line\nbreak", "{p0}", " and true"]
    for key in [*NASTY, "v", "y"]:
        for value in values if key != "v" else NASTY:
            k = metadata_key(key)
            for condition in (
                k.is_equal_to(value),
                k.is_not_equal_to(value),
                k.is_in([value, "zzz"]),
                k.is_not_in([value]),
                k.is_greater_than(value),
                k.is_less_than_or_equal_to(value),
                k.contains_string(value),
                ~k.contains_string(value[:2]),
            ):
                _same(store, memory, condition)
    assert len(store) == len(rows)  # nothing was deleted or altered by an expression
    for key in NASTY[:8]:
        condition = metadata_key(key).is_equal_to("' or '1'=='1") | metadata_key(key).is_in(['"'])
        store.remove_all(filter=condition)
        memory.remove_all(filter=condition)
    assert len(store) == len(rows) - 8  # exactly the one row per key holding that value
    _same(store, memory, None)


def test_differential_random_filters(store: MilvusEmbeddingStore) -> None:
    """Random nested filters over typed data agree with the in-memory store."""
    rng = random.Random(7)
    memory = InMemoryEmbeddingStore()
    uid = uuid.UUID("11111111-1111-4111-8111-111111111111")
    numbers: list[object] = [-1, 0, 2, 2.0, 2.5, 2**53 + 1, 2.0**53, 2**70, math.inf, -math.inf]
    numbers.append(math.nan)
    rows: list[dict[str, object]] = []
    for i in range(60):
        row: dict[str, object] = {"n": rng.choice(numbers)} if i % 5 else {}
        row["s"] = rng.choice(["apple", "banana", "b\nc", "b%", "a_c", "", "Banana"])
        if i % 3 == 0:
            row["u"] = rng.choice([uid, uuid.UUID(int=5)])  # one type per key
        if i % 4 == 0:
            row["b"] = rng.choice([True, False])
        rows.append(row)
    _fill([store, memory], rows)

    def leaf() -> Filter:
        key = rng.choice(["n", "s", "u", "b", "missing"])
        if key in ("n", "missing"):
            value: object = rng.choice([0, 2, 2.0, 2.25, -1, 2**53 + 1, 2.0**53, 2**70])
            op = rng.choice(["eq", "ne", "gt", "ge", "lt", "le", "in", "nin"])
        elif key == "s":
            value = rng.choice(["banana", "b\nc", "b%", "a_c", "", "an", "%", "_"])
            op = rng.choice(["eq", "ne", "gt", "ge", "lt", "le", "in", "nin", "contains"])
        elif key == "u":
            value, op = rng.choice([uid, uuid.UUID(int=5)]), rng.choice(["eq", "ne", "in", "nin"])
        else:
            value, op = rng.choice([True, False]), rng.choice(["eq", "ne", "in", "nin"])
        k = metadata_key(key)
        if op == "in":
            return k.is_in([value])
        if op == "nin":
            return k.is_not_in([value])
        method = {
            "eq": k.is_equal_to,
            "ne": k.is_not_equal_to,
            "gt": k.is_greater_than,
            "ge": k.is_greater_than_or_equal_to,
            "lt": k.is_less_than,
            "le": k.is_less_than_or_equal_to,
            "contains": k.contains_string,
        }[op]
        return method(value)

    def tree(depth: int) -> Filter:
        if depth == 0 or rng.random() < 0.3:
            return leaf()
        choice = rng.random()
        if choice < 0.35:
            return tree(depth - 1) & tree(depth - 1)
        if choice < 0.7:
            return tree(depth - 1) | tree(depth - 1)
        return ~tree(depth - 1)

    for _ in range(120):
        _same(store, memory, tree(3))


def test_typed_metadata_round_trips_exactly(store: MilvusEmbeddingStore) -> None:
    metadata: dict[str, object] = {
        "int": 2,
        "float": 2.0,
        "neg_zero": -0.0,
        "big": 2**70,
        "int64_edge": 2**63 - 1,
        "nan": math.nan,
        "inf": math.inf,
        "ninf": -math.inf,
        "uuid": uuid.UUID(int=7),
        "uuid_text": str(uuid.UUID(int=7)),
        "bool": False,
        "text": "line\nbreak\x00",
    }
    store.add(Embedding([1, 0, 0, 0]), TextSegment("t\x00", metadata), id="x")  # type: ignore[arg-type]
    match = _found(store, None)
    assert match[0][0] == "x"
    (found,) = store.search(EmbeddingSearchRequest([1, 0, 0, 0])).matches
    assert found.embedded is not None
    assert found.embedded.text == "t\x00"
    got = found.embedded.metadata.to_dict()
    assert set(got) == set(metadata)
    for key, value in metadata.items():
        assert type(got[key]) is type(value), key
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(got[key])  # type: ignore[arg-type]
        else:
            assert got[key] == value, key


def test_ties_beyond_the_candidate_margin_keep_insertion_order(
    store: MilvusEmbeddingStore,
) -> None:
    same = Embedding([0.3, 0.4, 0.5, 0.6])
    ids = store.add_all([same] * 60)
    request = EmbeddingSearchRequest([0.1, 0.2, 0.3, 0.4], max_results=10)
    assert [m.embedding_id for m in store.search(request).matches] == ids[:10]
    zero = EmbeddingSearchRequest([0, 0, 0, 0], max_results=5)  # every score is 0.5
    found = store.search(zero).matches
    assert [m.embedding_id for m in found] == ids[:5]
    assert {m.score for m in found} == {0.5}


def test_zero_vectors_score_like_in_memory(store: MilvusEmbeddingStore) -> None:
    memory = InMemoryEmbeddingStore()
    vectors = [Embedding(v) for v in ([0, 0, 0, 0], [-1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0])]
    for target in (store, memory):
        target.add_all(vectors, ids=["z1", "neg", "orth", "z2"])
    for query in ([1, 0, 0, 0], [-1, 0, 0, 0], [0, 0, 1, 0]):
        for k in (1, 2, 4):
            request = EmbeddingSearchRequest(query, max_results=k)
            got = [(m.embedding_id, m.score) for m in store.search(request).matches]
            assert got == [(m.embedding_id, m.score) for m in memory.search(request).matches]


def test_invalid_ids_and_oversized_text_are_rejected_and_change_nothing(
    store: MilvusEmbeddingStore,
) -> None:
    vectors = _vectors(2)
    with pytest.raises(EmbeddingStoreError, match="control characters"):
        store.add_all(vectors, ids=["ok", "bad\nid"])
    with pytest.raises(EmbeddingStoreError, match="VARCHAR limit"):
        store.add_all(vectors, [TextSegment("ok"), TextSegment("x" * 70000)], ids=["a", "b"])
    with pytest.raises(EmbeddingStoreError, match="not valid Unicode"):
        store.add_all(vectors, [TextSegment("ok"), TextSegment("x", {"k": "\ud800"})])
    assert len(store) == 0
    store.remove_all(["bad\nid", 'x" or id != "'])  # unknown (and inexpressible) ids: ignored


def test_dimension_mismatch_with_an_existing_collection(
    milvus_client: MilvusClient, collection_name: str
) -> None:
    with MilvusEmbeddingStore(client=milvus_client, collection_name=collection_name, dimension=4):
        pass
    with pytest.raises(
        EmbeddingStoreError, match="has dimension 4, but the store was given dimension 8"
    ):
        MilvusEmbeddingStore(client=milvus_client, collection_name=collection_name, dimension=8)
    opened = MilvusEmbeddingStore(client=milvus_client, collection_name=collection_name)
    assert opened.dimension == 4
    with pytest.raises(EmbeddingStoreError, match="dimension 3 does not match"):
        opened.add(Embedding([1, 2, 3]))


def test_collection_created_on_first_write(
    milvus_client: MilvusClient, collection_name: str
) -> None:
    store = MilvusEmbeddingStore(client=milvus_client, collection_name=collection_name)
    assert store.dimension is None
    assert len(store) == 0
    assert store.search(EmbeddingSearchRequest([1, 0, 0])).matches == []
    store.remove_all(filter=metadata_key("k").is_equal_to(1))
    assert not milvus_client.has_collection(collection_name)
    store.add(Embedding([1, 0, 0]))
    assert store.dimension == 3
    assert milvus_client.has_collection(collection_name)


def test_a_foreign_collection_is_refused(milvus_client: MilvusClient, collection_name: str) -> None:
    milvus_client.create_collection(collection_name, dimension=4)
    with pytest.raises(EmbeddingStoreError, match="not a ragloom collection"):
        MilvusEmbeddingStore(client=milvus_client, collection_name=collection_name)


def test_reopening_the_database_file_keeps_everything(tmp_path: Path) -> None:
    path = str(tmp_path / "reopen.db")
    memory = InMemoryEmbeddingStore()
    rows: list[dict[str, object]] = [
        {"n": i, "s": f"v{i}", "u": uuid.UUID(int=i)} for i in range(30)
    ]
    condition = metadata_key("n").is_greater_than(10) & ~metadata_key("s").contains_string("2")
    with MilvusEmbeddingStore(path, "docs", dimension=DIM, batch_size=7) as store:
        _fill([store, memory], rows)
        before = _found(store, condition)
    with MilvusEmbeddingStore(path, "docs") as reopened:
        assert reopened.dimension == DIM
        assert len(reopened) == 30
        assert _found(reopened, condition) == before
        _same(reopened, memory, condition)


def test_concurrent_writers(store: MilvusEmbeddingStore) -> None:
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            for batch in range(5):
                vectors = _vectors(10, seed=worker * 100 + batch)
                ids = [f"w{worker}-{batch}-{i}" for i in range(10)]
                segments = [TextSegment(i, {"worker": worker}) for i in ids]
                store.add_all(vectors, segments, ids=ids)
                store.add_all(vectors[:2], segments[:2], ids=ids[:2])  # replace
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(store) == 200
    for worker in range(4):
        found = _found(store, metadata_key("worker").is_equal_to(worker), k=100)
        assert len(found) == 50


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "either uri"),
        ({"uri": "x.db", "client": "c"}, "either uri"),
        ({"uri": "localhost:19530"}, "neither a local Milvus Lite file"),
        ({"uri": ""}, "non-empty str"),
        ({"client": object()}, "pymilvus.MilvusClient"),
        ({"uri": "x.db", "collection_name": "bad-name"}, "collection_name"),
        ({"uri": "x.db", "collection_name": 'a"b'}, "collection_name"),
        ({"uri": "x.db", "dimension": 0}, "dimension"),
        ({"uri": "x.db", "batch_size": 0}, "batch_size"),
        ({"uri": "x.db", "token": 5}, "token"),
        ({"uri": "x.db", "expression_templates": "yes"}, "expression_templates"),
    ],
)
def test_settings_are_validated_at_the_edge(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(EmbeddingStoreError, match=message):
        MilvusEmbeddingStore(**kwargs)  # type: ignore[arg-type]


def test_collection_name_is_a_deprecated_alias_of_collection(
    milvus_client: MilvusClient, collection_name: str
) -> None:
    with pytest.warns(DeprecationWarning, match="collection_name is deprecated"):
        store = MilvusEmbeddingStore(client=milvus_client, collection_name=collection_name)
    assert store.collection == collection_name
    with pytest.warns(DeprecationWarning, match="collection_name is deprecated"):
        assert store.collection_name == collection_name
    deprecated = pytest.warns(DeprecationWarning, match="collection_name is deprecated")
    with pytest.raises(EmbeddingStoreError, match="not both"), deprecated:
        MilvusEmbeddingStore(client=milvus_client, collection="a", collection_name="b")


def test_an_unreachable_server_is_a_clear_error() -> None:
    with pytest.raises(EmbeddingStoreError, match="127.0.0.1:1"):
        MilvusEmbeddingStore("http://127.0.0.1:1", "c", dimension=4, timeout=2)


def test_without_type_checks_mismatches_match_neither_side(
    milvus_client: MilvusClient, collection_name: str
) -> None:
    """type_checks=False: random nested filters over a key holding every type agree with
    core's semantics where a mismatched leaf is false and so is its negation."""
    rng = random.Random(11)
    uid = uuid.UUID(int=3)
    pool: list[object] = [1, 0, 2.5, math.nan, "x", "2", "1", "a\nb", True, False, uid, str(uid)]
    rows: list[dict[str, object]] = [{"m": rng.choice(pool)} if i % 6 else {} for i in range(48)]
    store = MilvusEmbeddingStore(
        client=milvus_client, collection_name=collection_name, dimension=DIM, type_checks=False
    )
    # A collection written before stores refused mistyped writes: rows upserted directly.
    ids = [f"id{i}" for i in range(len(rows))]
    vectors = np.array([v.vector for v in _vectors(len(rows))], dtype=np.float32)
    texts: list[str | None] = [f"t{i}" for i in range(len(rows))]
    legacy = store._columns(ids, vectors, texts, rows).rows()  # type: ignore[arg-type]
    store.add_all(_vectors(1), ids=["first"])  # creates the collection
    store.remove("first")
    milvus_client.upsert(collection_name, legacy)
    key = metadata_key("m")

    def leaf() -> Filter:
        value = rng.choice([1, 2.0, "x", "2", "a\nb", True, False, uid, str(uid), 2**60, 0])
        options = [key.is_equal_to(value), key.is_not_equal_to(value), key.is_in([value])]
        options.append(key.is_not_in([value]))
        if isinstance(value, int | float | str) and not isinstance(value, bool):
            options += [key.is_greater_than(value), key.is_less_than_or_equal_to(value)]
        if isinstance(value, str):
            options += [key.contains_string(value), ~key.contains_string(value)]
        return rng.choice(options)

    for _ in range(300):
        condition = rng.choice([leaf(), ~leaf(), leaf() | ~leaf(), ~(leaf() & leaf())])
        expected = {
            i for i, row in zip(ids, rows, strict=True) if matches(condition, row, lenient=True)
        }
        assert {i for i, _ in _found(store, condition)} == expected, str(condition)


def test_minus_infinity_written_with_the_old_letter_still_reads_and_filters(
    milvus_client: MilvusClient, collection_name: str
) -> None:
    """Collections written before the one metadata codec stored -inf as kind "n" (now
    "m"): such rows still read back as -inf and compare as numbers."""
    store = MilvusEmbeddingStore(client=milvus_client, collection=collection_name, dimension=DIM)
    vectors = np.array([v.vector for v in _vectors(3)], dtype=np.float32)
    metadata: list[dict[str, MetadataValue]] = [{"x": -math.inf}, {"x": 1.5}, {"x": math.inf}]
    columns = store._columns(["old", "mid", "top"], vectors, ["a", "b", "c"], metadata)
    assert columns.kinds[0] == {"x": "m"}
    columns.kinds[0] = {"x": "n"}
    store._run(store._registry.register(columns.kinds))  # as the old writer did
    milvus_client.upsert(collection_name, columns.rows())
    request = EmbeddingSearchRequest(Embedding(vectors[0]), max_results=10)
    segments = {m.embedding_id: m.embedded for m in store.search(request).matches}
    old = segments["old"]
    assert old is not None
    assert old.metadata["x"] == -math.inf
    below = metadata_key("x").is_less_than(0)
    assert [id for id, _ in _found(store, below)] == ["old"]
    assert {id for id, _ in _found(store, metadata_key("x").is_greater_than(-1e308))} == {
        "mid",
        "top",
    }
    with pytest.raises(InvalidFilterError):
        _found(store, metadata_key("x").is_equal_to("a str"))


def test_contains_the_empty_string_matches_every_str(store: MilvusEmbeddingStore) -> None:
    """Milvus Lite's like "%" matches nothing; every str contains "" (was: no match)."""
    memory = InMemoryEmbeddingStore()
    _fill([store, memory], [{"s": "apple"}, {"s": ""}, {}])
    for condition in (
        metadata_key("s").contains_string(""),
        ~metadata_key("s").contains_string(""),
    ):
        _same(store, memory, condition)
    assert len(_found(store, metadata_key("s").contains_string(""))) == 2
