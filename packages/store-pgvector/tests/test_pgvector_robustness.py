"""Injection attempts, server restarts, concurrent writers, tables of another shape, errors."""

from __future__ import annotations

import asyncio
import subprocess
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg import sql
from psycopg_pool import ConnectionPool

from ragloom.core import (
    Embedding,
    EmbeddingSearchRequest,
    EmbeddingStoreError,
    InMemoryEmbeddingStore,
    InvalidFilterError,
    MetadataTypeError,
    Query,
    TextSegment,
    metadata_key,
)
from ragloom.core.filters import Filter
from ragloom.stores.pgvector import PgFullTextContentRetriever, PgVectorEmbeddingStore

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
SERVICE = REPO / "scripts" / "services" / "pgvector.sh"

NASTY = [
    "'",
    '"',
    "';--",
    "'); DROP TABLE canary; --",
    "x' OR '1'='1",
    "/* comment */",
    "-- comment",
    "$$",
    "$tag$ DROP TABLE canary; $tag$",
    "\\",
    "\\'",
    "%s",
    "%(x)s",
    "{}",
    "{0}",
    ";",
    "a\nb",
    "\t",
    "`",
    "ü",
    "😀",
    "\u202e",
    "Ω\u0301",
    "e'\\x41'",
    "k' ? 'k",
    "->>",
    "@>",
]


def _tables(conn: psycopg.Connection[Any]) -> set[str]:
    return {row[0] for row in conn.execute("SELECT relname FROM pg_class WHERE relkind = 'r'")}


def _ids(store: Any, condition: Filter | None = None, k: int = 1000) -> list[str]:
    request = EmbeddingSearchRequest(np.ones(4), max_results=k, filter=condition)
    return [m.embedding_id for m in store.search(request).matches]


@pytest.fixture
def canary(pg_dsn: str) -> Any:
    """A table that injected SQL would try to drop; checked after the test."""
    name = f"canary_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE TABLE {} (x int)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("INSERT INTO {} VALUES (1)").format(sql.Identifier(name)))
        before = _tables(conn)
    yield name
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        count = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(name)))
        assert count.fetchone() == (1,)
        after = _tables(conn)
        conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(name)))
    assert before - after <= {t for t in before if t.startswith("test_")}


# ---------------------------------------------------------------------- injection


def test_injection_in_metadata_keys_and_values_is_inert(
    pg_pool: ConnectionPool[Any], table_name: str, canary: str
) -> None:
    rows = [{text: text, "v": text, "n": i} for i, text in enumerate(NASTY)]
    rows.append({"v": "plain"})
    memory = InMemoryEmbeddingStore()
    vectors = [Embedding(v) for v in np.random.default_rng(0).normal(size=(len(rows), 4))]
    segments = [
        TextSegment(f"text {text}", row) for text, row in zip([*NASTY, "p"], rows, strict=True)
    ]
    ids = [f"id {text}" for text in [*NASTY, "p"]]
    with PgVectorEmbeddingStore(pg_pool, table_name, dimension=4) as store:
        for target in (store, memory):
            target.add_all(vectors, segments, ids=ids)
        for text in NASTY:
            conditions: list[Filter] = [
                metadata_key(text).is_equal_to(text),
                metadata_key(text).is_not_equal_to(text),
                metadata_key("v").is_equal_to(text),
                metadata_key("v").is_greater_than(text),
                metadata_key("v").is_less_than_or_equal_to(text),
                metadata_key("v").contains_string(text),
                metadata_key("v").is_in([text, "plain"]),
                metadata_key(text).is_not_in([text]),
                metadata_key(text).contains_string(text[:1]),
            ]
            for condition in conditions:
                assert set(_ids(store, condition)) == set(_ids(memory, condition)), condition
            with pytest.raises(InvalidFilterError):
                _ids(store, metadata_key(text).is_greater_than(1))  # str stored, int compared
        store.remove_all([f"id {NASTY[3]}"])
        store.remove_all(filter=metadata_key("v").is_equal_to(NASTY[8]))
        assert len(store) == len(rows) - 2
        found = {
            m.embedding_id: m
            for m in store.search(EmbeddingSearchRequest(np.ones(4), 1000)).matches
        }
        for text, row in zip(NASTY, rows[: len(NASTY)], strict=True):
            if f"id {text}" in found:
                embedded = found[f"id {text}"].embedded
                assert embedded is not None
                assert embedded.metadata.to_dict() == row
                assert embedded.text == f"text {text}"


@pytest.mark.parametrize(
    "name", ['t"; DROP TABLE canary; --', "T a b l e", "ünï-cødé $$", "x'y", "{0}{}"]
)
def test_injection_in_table_and_schema_names_is_inert(
    pg_pool: ConnectionPool[Any], pg_dsn: str, canary: str, name: str
) -> None:
    schema = f"s {name}"[:60]
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    try:
        with PgVectorEmbeddingStore(pg_pool, name, dimension=4, schema=schema) as store:
            store.add(Embedding([1, 0, 0, 0]), TextSegment(name, {"k": name}))
            assert _ids(store, metadata_key("k").is_equal_to(name))
            retriever = PgFullTextContentRetriever(store, language="simple")
            assert retriever.retrieve(Query(name))
        with psycopg.connect(pg_dsn) as conn:
            found = conn.execute(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relkind = 'r'",
                [schema],
            ).fetchall()
        assert found == [(name,)]
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def test_full_text_queries_with_operator_characters_are_plain_words(
    pg_pool: ConnectionPool[Any], table_name: str, canary: str
) -> None:
    texts = ["cats & dogs", "rock | roll", "not !this", "prefix:* match", "a <-> b", "it's fine"]
    with PgVectorEmbeddingStore(pg_pool, table_name, dimension=4) as store:
        store.add_all(
            [Embedding(v) for v in np.eye(4)[[0, 1, 2, 3, 0, 1]]],
            [TextSegment(text) for text in texts],
        )
        retriever = PgFullTextContentRetriever(store, max_results=10)
        for text in [*NASTY, *texts, "", "   ", "!!!", "&|!():*<->"]:
            contents = retriever.retrieve(Query(text))
            assert all(c.text in texts for c in contents)
        assert [c.text for c in retriever.retrieve(Query("dogs"))] == ["cats & dogs"]
        assert [c.text for c in retriever.retrieve(Query("'fine'"))] == ["it's fine"]


# ---------------------------------------------------------------------- full text


def test_full_text_filter_language_and_min_score(
    pg_pool: ConnectionPool[Any], table_name: str
) -> None:
    texts = {
        "en": ["The cats are running in the garden", "A dog runs", "Nothing here"],
        "de": ["Die Katzen laufen im Garten", "Ein Hund läuft"],
    }
    with PgVectorEmbeddingStore(pg_pool, table_name, dimension=4) as store:
        for lang, items in texts.items():
            store.add_all(
                [Embedding([1, 0, 0, 0])] * len(items),
                [TextSegment(text, {"lang": lang}) for text in items],
            )
        english = PgFullTextContentRetriever(
            store, filter=metadata_key("lang").is_equal_to("en"), max_results=5
        )
        found = english.retrieve(Query("running cats"))
        assert [c.text for c in found] == ["The cats are running in the garden", "A dog runs"]
        assert found[0].score is not None
        assert 0 < found[0].score < 1
        assert found[0].embedding_id is not None
        assert english.retrieve(Query("Katzen")) == []
        german = PgFullTextContentRetriever(
            store,
            language="german",
            filter=lambda query: metadata_key("lang").is_equal_to("de"),
        )
        assert [c.text for c in german.retrieve(Query("Katze"))] == ["Die Katzen laufen im Garten"]
        strict = PgFullTextContentRetriever(store, min_score=0.99)
        assert strict.retrieve(Query("cats")) == []
        with pytest.raises(InvalidFilterError):
            PgFullTextContentRetriever(store, filter=metadata_key("lang").is_equal_to(1)).retrieve(
                Query("cats")
            )
        with pytest.raises(EmbeddingStoreError, match="text search configuration"):
            PgFullTextContentRetriever(store, language="klingon'; DROP TABLE x; --")
        # Segments added after the retriever exists are indexed too (generated column).
        store.add(Embedding([0, 1, 0, 0]), TextSegment("cats everywhere", {"lang": "en"}))
        assert "cats everywhere" in [c.text for c in english.retrieve(Query("cats"))]


# ---------------------------------------------------------------------- restarts


def _restart_server() -> None:
    result = subprocess.run(
        ["bash", str(SERVICE), "restart"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_store_reconnects_after_the_server_restarts(
    pg_dsn: str, default_dsn: str, pg_pool: ConnectionPool[Any], table_name: str
) -> None:
    if pg_dsn != default_dsn:
        pytest.fail(f"this test restarts the local server; unset RAGLOOM_PG_DSN ({pg_dsn})")
    owned = PgVectorEmbeddingStore(pg_dsn, table_name, dimension=4, pool_size=3)
    shared = PgVectorEmbeddingStore(pg_pool, table_name, dimension=4)
    try:
        ids = owned.add_all([Embedding([1, 0, 0, i]) for i in range(5)])
        assert len(shared) == 5
        _restart_server()
        # Every pooled connection is now dead: the stores replace them and carry on.
        assert set(_ids(owned, k=10)) == set(ids)
        assert set(_ids(shared, k=10)) == set(ids)
        owned.add(Embedding([0, 1, 0, 0]), id="after-restart")  # not idempotent-safe by id
        shared.add_all([Embedding([0, 0, 1, 0])])  # generated ids: retried before commit
        shared.remove_all([ids[1]])
        assert len(owned) == 6
        _restart_server()
        owned.remove_all(filter=metadata_key("k").is_equal_to(1))
        assert len(shared) == 6
    finally:
        owned.close()
        shared.close()


# ---------------------------------------------------------------------- concurrency


def test_concurrent_writers_and_readers(pg_pool: ConnectionPool[Any], table_name: str) -> None:
    with PgVectorEmbeddingStore(pg_pool, table_name, dimension=4) as store:
        shared_ids = [f"shared-{i}" for i in range(40)]
        errors: list[BaseException] = []
        generated: list[str] = []
        lock = threading.Lock()

        def writer(seed: int) -> None:
            rng = np.random.default_rng(seed)
            try:
                for _ in range(8):
                    batch = rng.normal(size=(25, 4)).astype(np.float32)
                    new = store.add_all(batch, [TextSegment(f"w{seed}", {"writer": seed})] * 25)
                    with lock:
                        generated.extend(new)
                    # Overlapping upserts of the same ids, in different orders (deadlocks
                    # are retried), large enough for the COPY + upsert path half the time.
                    order = list(rng.permutation(shared_ids))
                    size = 70 if seed % 2 else 10
                    ids = (order * 2)[:size] if size <= len(order) else order
                    store.add_all(
                        rng.normal(size=(len(ids), 4)).astype(np.float32),
                        [TextSegment("s", {"writer": seed})] * len(ids),
                        ids=ids,
                    )
            except BaseException as exc:  # reported below
                errors.append(exc)

        def reader() -> None:
            try:
                for _ in range(30):
                    store.search(
                        EmbeddingSearchRequest(
                            np.ones(4), 5, filter=metadata_key("writer").is_in([0, 1, 2])
                        )
                    )
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(seed,)) for seed in range(4)]
        threads += [threading.Thread(target=reader) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not errors, errors
        assert len(generated) == len(set(generated)) == 4 * 8 * 25
        all_ids = set(_ids(store, k=1000))
        assert set(generated) <= all_ids
        assert all_ids - set(generated) == set(shared_ids)
        assert len(store) == 800 + 40


def _race(writes: dict[PgVectorEmbeddingStore, object], key: str) -> list[BaseException | None]:
    """Each store adds 2,000 rows giving ``key`` its value, all released at once; what each
    raised (None: it wrote)."""
    rows = np.ones((2000, 4), dtype=np.float32)
    barrier = threading.Barrier(len(writes))
    outcomes: list[BaseException | None] = [None] * len(writes)

    def write(position: int, store: PgVectorEmbeddingStore, value: object) -> None:
        segments = [TextSegment("t", {key: value})] * len(rows)
        barrier.wait()
        try:
            store.add_all(rows, segments)
        except BaseException as exc:  # judged by the caller
            outcomes[position] = exc

    threads = [
        threading.Thread(target=write, args=(position, store, value))
        for position, (store, value) in enumerate(writes.items())
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return outcomes


def test_writers_racing_to_give_a_new_key_two_types_one_wins(
    pg_pool: ConnectionPool[Any], table_name: str
) -> None:
    """Two stores (as two processes would) write a key new to the table at the same
    instant, one as a str, one as an int: exactly one may succeed, every round. A probe
    alone sees neither uncommitted batch, so both passed (in most rounds, without a lock)."""
    with (
        PgVectorEmbeddingStore(pg_pool, table_name, dimension=4) as first,
        PgVectorEmbeddingStore(pg_pool, table_name, dimension=4) as second,
    ):
        for round_ in range(6):
            key = f"k{round_}"
            outcomes = _race({first: "text", second: 7}, key)
            errors = [exc for exc in outcomes if exc is not None]
            assert len(errors) == 1, f"round {round_}: {outcomes}"
            assert isinstance(errors[0], MetadataTypeError), errors[0]
            assert key in str(errors[0])
            assert len(first) == 2000 * (round_ + 1)  # the loser wrote nothing


# ---------------------------------------------------------------------- table shape


def test_a_table_of_another_dimension_is_a_clear_error(
    pg_pool: ConnectionPool[Any], table_name: str
) -> None:
    with PgVectorEmbeddingStore(pg_pool, table_name, dimension=3) as store:
        store.add(Embedding([1, 2, 3]))
    with pytest.raises(EmbeddingStoreError) as error:
        PgVectorEmbeddingStore(pg_pool, table_name, dimension=4)
    message = str(error.value)
    assert table_name in message
    assert "dimension 3" in message
    assert "dimension 4" in message
    with PgVectorEmbeddingStore(pg_pool, table_name) as reopened:  # dimension read back
        assert reopened.dimension == 3
        assert len(reopened) == 1
    with PgVectorEmbeddingStore(pg_pool, table_name, dimension=4, drop_table_first=True) as new:
        assert new.dimension == 4
        assert len(new) == 0


def test_tables_that_are_not_ours_or_missing_are_clear_errors(
    pg_pool: ConnectionPool[Any], pg_dsn: str, table_name: str
) -> None:
    with pytest.raises(EmbeddingStoreError, match="does not exist"):
        PgVectorEmbeddingStore(pg_pool, table_name, dimension=4, create_table=False)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE TABLE {} (id int)").format(sql.Identifier(table_name)))
    with pytest.raises(EmbeddingStoreError, match="not a ragloom pgvector table"):
        PgVectorEmbeddingStore(pg_pool, table_name, dimension=4)


def test_table_is_a_deprecated_alias_of_collection(
    pg_pool: ConnectionPool[Any], table_name: str
) -> None:
    with (
        pytest.warns(DeprecationWarning, match="table is deprecated"),
        PgVectorEmbeddingStore(pg_pool, table=table_name, dimension=4) as store,
    ):
        assert store.collection == table_name == store.table_name
    deprecated = pytest.warns(DeprecationWarning, match="table is deprecated")
    with pytest.raises(EmbeddingStoreError, match="not both"), deprecated:
        PgVectorEmbeddingStore(pg_pool, "a", table="b", dimension=4)


def test_bad_input_is_rejected_before_writing(
    pg_pool: ConnectionPool[Any], table_name: str
) -> None:
    with PgVectorEmbeddingStore(pg_pool, table_name, dimension=4) as store:
        store.add(Embedding([1, 0, 0, 0]), id="keep")
        bad_batches: list[dict[str, Any]] = [
            {"segments": [TextSegment("nul \x00 text")]},
            {"segments": [TextSegment("t", {"k\x00": 1})]},
            {"segments": [TextSegment("t", {"k": "v\x00"})]},
            {"segments": [TextSegment("t", {"k": "\ud800"})]},
            {"ids": ["nul\x00id"]},
        ]
        for kwargs in bad_batches:
            with pytest.raises(EmbeddingStoreError):
                store.add_all([Embedding([0, 1, 0, 0])], **kwargs)
        with pytest.raises(EmbeddingStoreError):
            store.add_all(np.array([[1, 2, 3, np.inf]]))
        with pytest.raises(EmbeddingStoreError):
            store.add_all(np.ones((2, 5)))
        with pytest.raises(EmbeddingStoreError):
            store.remove_all("keep")
        with pytest.raises(EmbeddingStoreError):
            store.search("not a request")  # type: ignore[arg-type]
        assert _ids(store) == ["keep"]
    with pytest.raises(EmbeddingStoreError, match="'%'"):
        PgVectorEmbeddingStore(pg_pool, "t%s", dimension=4)
    with pytest.raises(EmbeddingStoreError, match="63 bytes"):
        PgVectorEmbeddingStore(pg_pool, "x" * 64, dimension=4)
    with pytest.raises(EmbeddingStoreError, match="index"):
        PgVectorEmbeddingStore(pg_pool, table_name, dimension=4, index="flat")  # type: ignore[arg-type]


# ---------------------------------------------------------------------- server absent


def test_an_absent_server_fails_with_the_command_to_start_it(
    server_check: Callable[[str], None],
) -> None:
    with pytest.raises(pytest.fail.Exception) as failure:
        server_check("postgresql://postgres@127.0.0.1:1/postgres")
    assert "bash scripts/services/pgvector.sh start" in str(failure.value)


def test_store_on_an_absent_server_is_a_clear_error() -> None:
    with pytest.raises(EmbeddingStoreError, match="is the server running"):
        PgVectorEmbeddingStore(
            "postgresql://postgres@127.0.0.1:1/postgres?connect_timeout=1",
            "t",
            dimension=4,
            timeout=1,
        )


def _exists(pg_dsn: str, table_name: str) -> bool:
    with psycopg.connect(pg_dsn) as conn:
        row = conn.execute("SELECT to_regclass(%s)::oid", [table_name]).fetchone()
    return row is not None and row[0] is not None


def test_without_a_dimension_the_first_write_creates_the_table(
    pg_pool: ConnectionPool[Any], pg_dsn: str, table_name: str
) -> None:
    with PgVectorEmbeddingStore(pg_pool, table_name) as store:
        assert store.dimension is None
        assert not _exists(pg_dsn, table_name)
        # Before the first write: an empty store (no statement needs the table).
        assert len(store) == 0
        assert store.search(EmbeddingSearchRequest(Embedding([1.0, 0.0, 0.0]))).matches == []
        assert store.get(["a"]) == []
        store.remove_all(["a"])
        store.remove_all()
        store.create_index("none")  # remembered for the table the first write creates
        with pytest.raises(EmbeddingStoreError, match="does not exist yet"):
            PgFullTextContentRetriever(store)
        assert not _exists(pg_dsn, table_name)
        store.add_all([Embedding([1.0, 0.0, 0.0]), Embedding([0.0, 1.0, 0.0])], ids=["a", "b"])
        assert store.dimension == 3
        assert _exists(pg_dsn, table_name)
        found = store.search(EmbeddingSearchRequest(Embedding([1.0, 0.1, 0.0]), max_results=1))
        assert [match.embedding_id for match in found.matches] == ["a"]
        with pytest.raises(EmbeddingStoreError, match="dimension"):
            store.add_all([Embedding([1.0, 0.0])])
    with psycopg.connect(pg_dsn) as conn:
        indexes = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = %s", [table_name]
        ).fetchall()
    assert not any("hnsw" in definition for (definition,) in indexes)  # index="none" kept
    with PgVectorEmbeddingStore(pg_pool, table_name) as reopened:  # dimension read back
        assert reopened.dimension == 3
        assert [entry.embedding_id for entry in reopened.get(["b", "a"])] == ["b", "a"]


def test_without_a_dimension_two_stores_adopt_one_table(
    pg_pool: ConnectionPool[Any], table_name: str
) -> None:
    with (
        PgVectorEmbeddingStore(pg_pool, table_name) as first,
        PgVectorEmbeddingStore(pg_pool, table_name) as second,
    ):
        first.add_all([Embedding([1.0, 2.0])], ids=["x"])
        with pytest.raises(EmbeddingStoreError, match="dimension 2"):
            second.add_all([Embedding([1.0, 2.0, 3.0])])
        second.add_all([Embedding([2.0, 1.0])], ids=["y"])
        assert second.dimension == 2
        assert len(first) == 2


def test_without_a_dimension_the_first_async_write_creates_the_table(
    pg_dsn: str, table_name: str
) -> None:
    async def scenario() -> list[str]:
        async with PgVectorEmbeddingStore(pg_dsn, table_name, pool_size=2) as store:
            assert store.dimension is None
            assert await store.aget(["a"]) == []
            await store.aadd_all([Embedding([0.0, 1.0]), Embedding([1.0, 0.0])], ids=["a", "b"])
            assert store.dimension == 2
            result = await store.asearch(EmbeddingSearchRequest(Embedding([1.0, 0.0])))
            return [match.embedding_id for match in result.matches]

    assert asyncio.run(scenario()) == ["b", "a"]


def test_a_failed_write_rolls_back_and_leaves_no_lock_on_the_pooled_connection(
    pg_dsn: str, table_name: str
) -> None:
    # One connection: every write runs on it, and it goes back to the pool after each.
    with PgVectorEmbeddingStore(pg_dsn, table_name, dimension=2, pool_size=1) as store:
        store.add_all([Embedding([1.0, 0.0])], [TextSegment("a", {"tenant": "t"})], ids=["a"])
        batch = [Embedding([0.0, 1.0]), Embedding([1.0, 1.0])]
        segments = [TextSegment("b", {"year": 1}), TextSegment("c", {"tenant": 7})]
        with pytest.raises(MetadataTypeError):  # after the key locks were taken
            store.add_all(batch, segments, ids=["b", "c"])
        assert [entry.embedding_id for entry in store.get(["a", "b", "c"])] == ["a"]
        with store.pool.connection() as conn:
            held = conn.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                "AND pid = pg_backend_pid()"
            ).fetchone()
        assert held == (0,)
        assert len(store) == 1
