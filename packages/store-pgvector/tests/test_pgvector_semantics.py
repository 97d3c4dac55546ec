"""The pgvector store against the in-memory store: filters, scores, order, edge values.

The in-memory store is the reference: the same rows and the same filters must match the
same ids (or raise ``InvalidFilterError`` in both), and searches must return the same
ids with the same scores.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql
from psycopg_pool import ConnectionPool

from ragloom.core import (
    Embedding,
    EmbeddingSearchRequest,
    InMemoryEmbeddingStore,
    InvalidFilterError,
    MetadataTypeError,
    TextSegment,
    metadata_key,
)
from ragloom.core.filters import Filter, and_, not_, or_
from ragloom.stores.pgvector import PgVectorEmbeddingStore
from ragloom.stores.pgvector._metadata import encode_metadata

pytestmark = pytest.mark.integration

DIMENSION = 4
U1 = uuid.UUID("11111111-1111-4111-8111-111111111111")
U2 = uuid.UUID("22222222-2222-4222-8222-222222222222")

INTS = [0, 1, -1, 2, 3, 2**53, 2**53 + 1, 2**63, -(2**63) - 1, 2**70, 10**30, -(10**30)]
FLOATS = [
    0.0,
    -0.0,
    0.5,
    1.0,
    2.0,
    2.5,
    0.1,
    -3.75,
    2.0**53,
    2.0**70,
    1e-300,
    5e-324,
    1e300,
    -1e300,
]
NON_FINITE = [math.nan, math.inf, -math.inf]
STRS = ["", "a", "B", "b", "é", "\uffff", "😀", "a'b", "x;--", "$$", "nan", "A\u0300", "ab"]
STORED = [*INTS, *FLOATS, *NON_FINITE, *STRS, True, False, U1, U2, str(U1)]
FILTER_VALUES = [*INTS, *FLOATS, *STRS, True, False, U1, U2]


def _store_pair(
    pool: ConnectionPool[Any], table: str
) -> tuple[PgVectorEmbeddingStore, InMemoryEmbeddingStore]:
    return PgVectorEmbeddingStore(pool, table, dimension=DIMENSION), InMemoryEmbeddingStore()


def _fill(stores: tuple[Any, ...], rows: list[dict[str, Any]]) -> list[str]:
    rng = np.random.default_rng(len(rows))
    vectors = rng.uniform(-1, 1, size=(len(rows), DIMENSION)).astype(np.float32)
    ids = [f"r{i}" for i in range(len(rows))]
    segments = [TextSegment(f"row {i}", row) for i, row in enumerate(rows)]
    for store in stores:
        store.add_all([Embedding(v) for v in vectors], segments, ids=ids)
    return ids


def _legacy_fill(
    stores: tuple[PgVectorEmbeddingStore, InMemoryEmbeddingStore], rows: list[dict[str, Any]]
) -> tuple[PgVectorEmbeddingStore, InMemoryEmbeddingStore]:
    """The stores holding ``rows`` of mixed types per key, as tables and saves written
    before stores refused mistyped writes: SQL inserts, and a merged JSON document."""
    pg, _ = stores
    vector = [1.0] + [0.0] * (DIMENSION - 1)
    documents = []
    with pg.pool.connection() as conn:  # committed on exit
        for i, row in enumerate(rows):
            text, tags = encode_metadata(row)
            conn.execute(
                sql.SQL(
                    "INSERT INTO {} (id, embedding, text, metadata, metadata_kinds) "
                    "VALUES (%s, %s, %s, %s, %s)"
                ).format(pg.table),
                [f"r{i}", str(vector), f"row {i}", text, tags],
            )
            single = InMemoryEmbeddingStore()
            single.add_all([Embedding(vector)], [TextSegment(f"row {i}", row)], ids=[f"r{i}"])
            documents.append(json.loads(single.to_json()))
    merged = documents[0]
    merged["entries"] = [entry for document in documents for entry in document["entries"]]
    merged["count"] = len(merged["entries"])
    return pg, InMemoryEmbeddingStore.from_json(json.dumps(merged))


def _outcome(store: Any, condition: Filter) -> set[str] | str:
    request = EmbeddingSearchRequest(np.ones(DIMENSION), max_results=1000, filter=condition)
    try:
        return {m.embedding_id for m in store.search(request).matches}
    except InvalidFilterError:
        return "InvalidFilterError"


@pytest.fixture
def stores(
    pg_pool: ConnectionPool[Any], table_name: str
) -> Iterator[tuple[PgVectorEmbeddingStore, InMemoryEmbeddingStore]]:
    pg, memory = _store_pair(pg_pool, table_name)
    yield pg, memory
    pg.close()


# ---------------------------------------------------------------------- filters


def _leaf(key: str, operation: str, value: Any, values: list[Any]) -> Filter:
    builder = metadata_key(key)
    if operation == "in":
        return builder.is_in(values)
    if operation == "not_in":
        return builder.is_not_in(values)
    return getattr(builder, operation)(value)  # type: ignore[no-any-return]


_OPERATIONS = [
    "is_equal_to",
    "is_not_equal_to",
    "is_greater_than",
    "is_greater_than_or_equal_to",
    "is_less_than",
    "is_less_than_or_equal_to",
    "contains_string",
    "in",
    "not_in",
]


# Keys and the values they hold: one type per key (stores refuse a write of another type;
# the mismatch tests below write legacy tables to cover reading one).
KEY_VALUES: dict[str, list[Any]] = {
    "n": [*INTS, *FLOATS, *NON_FINITE],
    "s": STRS,
    "u": [U1, U2],
    "t": [str(U1), str(U2), "a"],  # str values that UUID filters may match
    "b": [True, False],
}
COMPARABLE: dict[str, list[Any]] = {
    "n": [*INTS, *FLOATS],
    "s": STRS,
    "u": [U1, U2],
    "t": [U1, U2, "a"],
    "b": [True, False],
    "missing": FILTER_VALUES,
}


@st.composite
def leaves(draw: st.DrawFn) -> Filter:
    key = draw(st.sampled_from([*COMPARABLE]))
    foreign = draw(st.integers(0, 9)) == 0
    value = draw(st.sampled_from(FILTER_VALUES if foreign else COMPARABLE[key]))
    allowed = ["is_equal_to", "is_not_equal_to", "in", "not_in"]
    if type(value) in (int, float, str):
        allowed += [op for op in _OPERATIONS if op.startswith("is_") and op not in allowed]
    if type(value) is str:
        allowed.append("contains_string")
    operation = draw(st.sampled_from(allowed))
    if type(value) is bool:
        pool: list[Any] = [True, False]
    elif type(value) in (int, float):
        pool = [*INTS, *FLOATS]
    else:
        pool = [v for v in FILTER_VALUES if type(v) is type(value)]
    values = [value, *draw(st.lists(st.sampled_from(pool), max_size=2))]
    return _leaf(key, operation, value, values)


filters = st.recursive(
    leaves(),
    lambda inner: st.one_of(
        st.builds(lambda a, b: a & b, inner, inner),
        st.builds(lambda a, b: a | b, inner, inner),
        st.builds(lambda a: ~a, inner),
    ),
    max_leaves=4,
)


@st.composite
def tables(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Rows holding each key with its kind, some keys missing."""
    rows: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 10))):
        row: dict[str, Any] = {}
        for key, values in KEY_VALUES.items():
            if draw(st.integers(0, 3)):
                row[key] = draw(st.sampled_from(values))
        rows.append(row)
    return rows


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(rows=tables(), conditions=st.lists(filters, min_size=1, max_size=4))
def test_filters_match_the_in_memory_store(
    stores: tuple[PgVectorEmbeddingStore, InMemoryEmbeddingStore],
    rows: list[dict[str, Any]],
    conditions: list[Filter],
) -> None:
    pg, _ = stores
    memory = InMemoryEmbeddingStore()
    pg.remove_all()
    _fill((pg, memory), rows)
    for condition in conditions:
        assert _outcome(pg, condition) == _outcome(memory, condition), f"{condition} on {rows}"


EXACT_CASES: list[tuple[Any, Filter, bool]] = [
    (2**53 + 1, metadata_key("k").is_equal_to(2.0**53), False),
    (2**53, metadata_key("k").is_equal_to(2.0**53), True),
    (2**70, metadata_key("k").is_equal_to(2.0**70), True),
    (2**70 + 1, metadata_key("k").is_greater_than(2.0**70), True),
    (2.0**70, metadata_key("k").is_less_than(2**70 + 1), True),
    (0.1, metadata_key("k").is_equal_to(0.1), True),
    (0.1, metadata_key("k").is_greater_than(0), True),
    (0.30000000000000004, metadata_key("k").is_greater_than(0.3), True),
    (-0.0, metadata_key("k").is_equal_to(0), True),
    (math.nan, metadata_key("k").is_not_equal_to(1.0), True),
    (math.nan, metadata_key("k").is_greater_than(-1e308), False),
    (math.nan, metadata_key("k").is_less_than(1e308), False),
    (math.inf, metadata_key("k").is_greater_than(1e308), True),
    (-math.inf, metadata_key("k").is_less_than(-(10**400)), True),
    (math.inf, metadata_key("k").is_in([1.0, 2]), False),
    (5e-324, metadata_key("k").is_greater_than(0), True),
    (10**30, metadata_key("k").is_in([1e30]), False),
    (10**30, metadata_key("k").is_greater_than(1e30), False),  # 1e30 > 10**30 as a float
    ("B", metadata_key("k").is_less_than("a"), True),  # code point order, not a locale's
    ("\uffff", metadata_key("k").is_less_than("😀"), True),  # not UTF-16 order
    ("é", metadata_key("k").is_greater_than("z"), True),
    ("A\u0300", metadata_key("k").is_equal_to("À"), False),  # no normalization
    ("100%", metadata_key("k").contains_string("0%"), True),
    ("a_c", metadata_key("k").contains_string("_"), True),
    ("abc", metadata_key("k").contains_string("a%c"), False),
    ("abc", metadata_key("k").contains_string(""), True),
    (str(U1), metadata_key("k").is_in([U2, U1]), True),
    (U1, metadata_key("k").is_not_in([U1]), False),
    (True, metadata_key("k").is_in([False]), False),
]


@pytest.mark.parametrize(
    ("stored", "condition", "expected"),
    EXACT_CASES,
    ids=[f"{i}-{c}" for i, (_, c, _) in enumerate(EXACT_CASES)],
)
def test_exact_value_semantics(
    stores: tuple[PgVectorEmbeddingStore, InMemoryEmbeddingStore],
    stored: Any,
    condition: Filter,
    expected: bool,
) -> None:
    assert condition.test({"k": stored}) is expected
    ids = _fill(stores, [{"k": stored}, {"other": 1}])
    matched = ids[0] in _outcome(stores[0], condition)
    assert matched is expected
    assert _outcome(stores[0], condition) == _outcome(stores[1], condition)


def test_nul_in_filter_keys_and_values_matches_like_in_memory(
    stores: tuple[PgVectorEmbeddingStore, InMemoryEmbeddingStore],
) -> None:
    _fill(stores, [{"k": "ab"}, {"k": "a"}, {"k": "abc"}, {"k": "b"}, {}])
    for condition in [
        metadata_key("k\x00").is_equal_to("ab"),
        metadata_key("k\x00").is_not_equal_to("ab"),
        metadata_key("k").is_equal_to("ab\x00"),
        metadata_key("k").is_not_in(["ab\x00", "b"]),
        metadata_key("k").contains_string("\x00"),
        metadata_key("k").is_greater_than("ab\x00c"),
        metadata_key("k").is_greater_than_or_equal_to("ab\x00"),
        metadata_key("k").is_less_than("ab\x00"),
        metadata_key("k").is_less_than_or_equal_to("ab\x00z"),
        metadata_key("k").is_equal_to("\ud800"),  # a lone surrogate: no stored str equals it
    ]:
        assert _outcome(stores[0], condition) == _outcome(stores[1], condition), str(condition)


def test_a_mismatch_anywhere_raises_even_when_another_branch_excludes_the_row(
    stores: tuple[PgVectorEmbeddingStore, InMemoryEmbeddingStore],
) -> None:
    legacy = _legacy_fill(stores, [{"k": 1, "t": "x"}, {"k": "one", "t": "y"}])
    condition = metadata_key("t").is_equal_to("x") & metadata_key("k").is_greater_than(0)
    for store in legacy:
        with pytest.raises(InvalidFilterError, match="'k'"):
            store.search(EmbeddingSearchRequest(np.ones(DIMENSION), filter=condition))
        with pytest.raises(InvalidFilterError):
            store.remove_all(filter=condition)
    assert len(stores[0]) == 2


def test_remove_by_filter_matches_the_in_memory_store(
    stores: tuple[PgVectorEmbeddingStore, InMemoryEmbeddingStore],
) -> None:
    rows = [{"n": i, "s": f"v{i % 3}", "f": i / 2} for i in range(30)]
    _fill(stores, rows)
    condition = or_(
        and_(metadata_key("n").is_greater_than(20), metadata_key("s").is_not_equal_to("v0")),
        not_(metadata_key("f").is_less_than(3)) & metadata_key("s").is_in(["v1"]),
    )
    for store in stores:
        store.remove_all(filter=condition)
    assert _outcome(stores[0], metadata_key("n").is_not_in([-1])) == _outcome(
        stores[1], metadata_key("n").is_not_in([-1])
    )


# ---------------------------------------------------------------------- metadata round trip


def test_metadata_values_round_trip_with_their_types(pg_pool: Any, table_name: str) -> None:
    metadata = {
        "big": 2**70,
        "neg_big": -(10**40),
        "f_big": 2.0**70,
        "f_tiny": 5e-324,
        "f_small": 1e-300,
        "f_int": 3.0,
        "nan": math.nan,
        "inf": math.inf,
        "ninf": -math.inf,
        "uuid": U1,
        "uuid_text": str(U2),
        "bool": False,
        "empty": "",
        "unicode": "日本語 😀 \u202e",
        "quote'key\"": "a'b\"c\\d",
        "😀": "emoji key",
    }
    with PgVectorEmbeddingStore(pg_pool, table_name, dimension=DIMENSION) as store:
        store.add(Embedding([1, 0, 0, 0]), TextSegment("t", metadata))
        match = store.search(EmbeddingSearchRequest([1, 0, 0, 0])).matches[0]
    assert match.embedded is not None
    got = match.embedded.metadata.to_dict()
    assert set(got) == set(metadata)
    for key, value in metadata.items():
        assert type(got[key]) is type(value), key
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(got[key])  # type: ignore[arg-type]
        else:
            assert got[key] == value, key


# ---------------------------------------------------------------------- scores and order


@pytest.mark.parametrize("index", ["hnsw", "none", "ivfflat"])
def test_scores_and_order_equal_the_in_memory_store(
    pg_pool: Any, table_name: str, index: str
) -> None:
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(300, 16)).astype(np.float32)
    vectors[10] = vectors[3]  # exact ties, kept in insertion order
    vectors[200] = vectors[3] * 2
    ids = [f"id{i}" for i in range(300)]
    memory = InMemoryEmbeddingStore()
    memory.add_all(vectors, ids=ids)
    with PgVectorEmbeddingStore(
        pg_pool,
        table_name,
        dimension=16,
        index=index,
        ivfflat_lists=4,
        ivfflat_probes=4,  # type: ignore[arg-type]
    ) as store:
        store.add_all(vectors, ids=ids)
        if index == "ivfflat":
            store.create_index()
        for query in [vectors[3], *rng.normal(size=(5, 16)).astype(np.float32), np.zeros(16)]:
            for k, min_score in [(1, 0.0), (10, 0.0), (50, 0.55)]:
                request = EmbeddingSearchRequest(query, max_results=k, min_score=min_score)
                expected = [(m.embedding_id, m.score) for m in memory.search(request).matches]
                got = [(m.embedding_id, m.score) for m in store.search(request).matches]
                assert got == expected


def test_numpy_batches_and_the_copy_upsert_path_keep_insertion_order(
    pg_pool: Any, table_name: str
) -> None:
    memory = InMemoryEmbeddingStore()
    same = np.ones((150, DIMENSION), dtype=np.float32)  # every score ties: order is all
    first = [f"a{i}" for i in range(150)]
    second = [f"a{i}" for i in range(100, 250)]  # 50 replaced, 100 new, via COPY + upsert
    segments = [TextSegment(f"second {i}", {"i": i}) for i in range(150)]
    with PgVectorEmbeddingStore(pg_pool, table_name, dimension=DIMENSION) as store:
        generated = []
        for target in (memory, store):
            target.add_all(same, ids=first)
            target.add_all(same * 2, segments, ids=second)
            generated = target.add_all(same[:3])  # generated ids, COPY straight into the table
        request = EmbeddingSearchRequest(np.ones(DIMENSION), max_results=1000)
        expected = memory.search(request).matches
        got = store.search(request).matches
        assert len(store) == len(memory) == 253
    assert [m.embedding_id for m in got[:250]] == [m.embedding_id for m in expected[:250]]
    assert [m.embedding_id for m in got[250:]] == generated
    assert [m.embedded for m in got] == [m.embedded for m in expected]


def test_large_k_uses_a_larger_ef_search(pg_pool: Any, table_name: str) -> None:
    vectors = np.random.default_rng(9).normal(size=(1500, 8)).astype(np.float32)
    with PgVectorEmbeddingStore(pg_pool, table_name, dimension=8, ef_search=10) as store:
        store.add_all(vectors)
        for k in (5, 700, 1200, 3):
            request = EmbeddingSearchRequest(vectors[0], max_results=k)
            assert len(store.search(request).matches) == k


def test_search_plan_uses_the_hnsw_index(pg_pool: Any, table_name: str) -> None:
    vectors = np.random.default_rng(1).normal(size=(5000, 8)).astype(np.float32)
    segments = [TextSegment("x", {"t": f"t{i % 10}"}) for i in range(5000)]
    with PgVectorEmbeddingStore(pg_pool, table_name, dimension=8, index="none") as store:
        store.add_all(vectors, segments)
        store.create_index("hnsw")
        with pg_pool.connection() as conn:
            conn.execute(f"ANALYZE {table_name}")
        for condition in (None, metadata_key("t").is_not_equal_to("t1")):
            statement, params = store._search_statement(condition, vectors[0], 1.0, 10)
            with pg_pool.connection() as conn:
                store._db.prepare(conn)
                plan = "\n".join(
                    row[0]
                    for row in conn.execute(
                        b"EXPLAIN " + statement.as_bytes(conn), params
                    ).fetchall()
                )
            assert f"Index Scan using {table_name}_embedding_idx" in plan, plan
            if condition is not None:  # the type-mismatch probe reads the kinds index
                assert f"Bitmap Index Scan on {table_name}_kinds_idx" in plan, plan


def test_removed_entries_do_not_cause_type_mismatches(pg_pool: Any, table_name: str) -> None:
    """Only live entries count for the type check. (The in-memory store still counts a
    removed entry until it compacts: a core bug, reported; this is the intended result.)"""
    with PgVectorEmbeddingStore(pg_pool, table_name, dimension=DIMENSION) as store:
        store, _ = _legacy_fill(
            (store, InMemoryEmbeddingStore()), [{"k": "x"}] + [{"k": i} for i in range(9)]
        )
        ids = [f"r{i}" for i in range(10)]
        condition = metadata_key("k").is_greater_than(0)
        with pytest.raises(InvalidFilterError):
            _outcome_or_raise(store, condition)
        store.remove(ids[0])
        assert _outcome(store, condition) == set(ids[2:])
        store.remove_all(filter=condition)
        assert _outcome(store, metadata_key("k").is_equal_to(0)) == {ids[1]}


def _outcome_or_raise(store: Any, condition: Filter) -> set[str]:
    request = EmbeddingSearchRequest(np.ones(DIMENSION), max_results=1000, filter=condition)
    return {m.embedding_id for m in store.search(request).matches}


def test_key_types_hold_across_store_objects_and_declarations(
    pg_pool: Any, table_name: str
) -> None:
    """A reopened table knows its key types (from its rows); a declaration binds up front."""
    with PgVectorEmbeddingStore(pg_pool, table_name, dimension=DIMENSION) as first:
        first.add_all([Embedding(np.ones(DIMENSION))], [TextSegment("a", {"tenant": "a"})])
    with PgVectorEmbeddingStore(pg_pool, table_name, metadata_schema={"year": int}) as again:
        with pytest.raises(MetadataTypeError, match=r"'tenant'.*str.*int"):
            again.add(Embedding(np.ones(DIMENSION)), TextSegment("b", {"tenant": 7}))
        with pytest.raises(MetadataTypeError, match=r"'year' is declared int/float.*str"):
            again.add(Embedding(np.ones(DIMENSION)), TextSegment("b", {"year": "2020"}))
        again.add(Embedding(np.ones(DIMENSION)), TextSegment("b", {"tenant": "b", "year": 2020}))
        assert len(again) == 2
