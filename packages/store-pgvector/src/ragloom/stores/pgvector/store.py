"""PgVectorEmbeddingStore: the EmbeddingStore contract on PostgreSQL with pgvector.

Table (one per store, created on first use unless ``create_table=False``)::

    id              text PRIMARY KEY          caller's id, or a generated UUID4 string
    seq             bigint IDENTITY           insertion order: ties, like in memory
    embedding       vector(<dimension>)       the vector as added (not normalized)
    text            text                      the segment's text; NULL without a segment
    metadata        jsonb                     typed values (see ``_metadata``)
    metadata_kinds  text[]                    "<kind>:<key>" per key, for type checks

with an HNSW (or IVFFlat) cosine index on ``embedding`` and GIN indexes on ``metadata``
(``jsonb_path_ops``, for equality filters) and ``metadata_kinds``.

Search is one statement: the index orders candidates by pgvector's cosine distance
(``ORDER BY embedding <=> q, seq LIMIT k``; an incremental sort breaks exact ties by
``seq``), then the matches are rescored in float64 from the stored float32 vectors, with
the in-memory store's formula, and sorted by (score desc, seq): the scores are the
in-memory store's, bit for bit, for the same candidates. With a filter, the same
statement also probes the ``metadata_kinds`` index for a stored value the filter cannot
compare (type mismatch), in the same snapshot, and ``InvalidFilterError`` is raised like
in memory. HNSW is approximate: on large tables a true top-k entry can be missed (recall
is measured by ``scripts/bench/bench_pgvector.py``); ``ef_search`` trades speed for recall.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from ragloom.core.aio import AsyncAddMixin
from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding
from ragloom.core.errors import EmbeddingStoreError, InvalidFilterError
from ragloom.core.filters import Filter
from ragloom.core.kit.metadata_codec import KIND_LETTERS
from ragloom.core.kit.remote_store import new_entries, renamed_option
from ragloom.core.metadata import Metadata
from ragloom.core.stores.base import (
    EmbeddingMatch,
    EmbeddingSearchRequest,
    EmbeddingSearchResult,
    EmbeddingStore,
)
from ragloom.core.stores.metadata_types import (
    BatchKinds,
    check_held_row,
    conflicting_kinds,
)
from ragloom.core.stores.metadata_types import metadata_schema as metadata_schema_kinds
from ragloom.core.stores.scores import exact_cosines, relevance_score
from ragloom.core.stores.validation import (
    check_filter,
    validate_ids,
)
from ragloom.stores.pgvector._async_database import AsyncConnection, AsyncDatabase
from ragloom.stores.pgvector._copy import Batch
from ragloom.stores.pgvector._database import (
    Connection,
    Database,
    VectorParam,
    decode_vectors,
    describe,
)
from ragloom.stores.pgvector._filters import compile_filter
from ragloom.stores.pgvector._metadata import (
    check_text,
    decode_many,
    decode_metadata,
    encode_metadata,
    kind_tag,
)

__all__ = [
    "IndexType",
    "IterativeScan",
    "PgVectorEmbeddingStore",
    "mismatch_probe",
    "raise_mismatch",
]

IndexType = Literal["hnsw", "ivfflat", "none"]
IterativeScan = Literal["off", "strict_order", "relaxed_order"]

_MAX_IDENTIFIER_BYTES = 63
_MAX_DIMENSION = 16000  # pgvector's limit for the vector type
_EF_SEARCH_MAX = 1000  # pgvector's limit for hnsw.ef_search
_LETTER = KIND_LETTERS  # core kinds -> _metadata's tags
_STAGING_FROM = 64  # batches with ids of at least this size go through COPY + upsert
_COLUMNS = ("id", "embedding", "text", "metadata", "metadata_kinds")
# A transaction's lock on one metadata key of one table (see _kind_locks).
_KIND_LOCK = "SELECT pg_advisory_xact_lock(%s)"
_EXPECTED_TYPES = {
    "id": "text",
    "seq": "bigint",
    "text": "text",
    "metadata": "jsonb",
    "metadata_kinds": "text[]",
}
_VECTOR_HEADER = struct.Struct(">HH")
# The type-mismatch probe: rows holding a filtered key with a kind the filter cannot compare
# (GIN index on metadata_kinds). MATERIALIZED keeps the planner from treating it as a
# LIMIT 1 query that a sequential scan would end early (it never does: usually no row
# matches); a CTE is still read lazily, so at most one row is fetched.
_WITH_MISMATCH = (
    "WITH mismatch AS MATERIALIZED (SELECT metadata FROM {table} WHERE metadata_kinds && %s) "
    "(SELECT {probe} FROM mismatch LIMIT 1) UNION ALL ({statement})"
)
_NEXT_SEQS = "SELECT nextval(%s::regclass) FROM generate_series(1, %s)"
_STATEMENT_CACHE = 256  # search statements kept, by (filter, zero query)
_SEARCH = sql.SQL(
    "SELECT seq, id, embedding, text, metadata::text FROM {table}{where} ORDER BY {order} LIMIT %s"
)

Matrix = npt.NDArray[np.float32]


def _identifier(name: object, what: str) -> str:
    if not isinstance(name, str) or not name:
        raise EmbeddingStoreError(f"{what} must be a non-empty str, got {name!r}")
    check_text(name, what)
    if "%" in name:  # psycopg reads % in a composed query as a placeholder marker
        raise EmbeddingStoreError(f"{what} {name!r} contains '%', which is not supported")
    if len(name.encode("utf-8")) > _MAX_IDENTIFIER_BYTES:
        raise EmbeddingStoreError(
            f"{what} {name!r} is longer than PostgreSQL's {_MAX_IDENTIFIER_BYTES} bytes"
        )
    return name


def _index_name(table: str, suffix: str) -> str:
    """``<table>_<suffix>``, shortened with a hash of the table name to fit 63 bytes."""
    name = f"{table}_{suffix}"
    if len(name.encode("utf-8")) <= _MAX_IDENTIFIER_BYTES:
        return name
    digest = hashlib.sha1(table.encode("utf-8")).hexdigest()[:8]
    tail = f"_{digest}_{suffix}"
    head = table.encode("utf-8")[: _MAX_IDENTIFIER_BYTES - len(tail)].decode("utf-8", "ignore")
    return head + tail


def _positive_int(value: object, what: str, upper: int | None = None) -> int:
    if type(value) is not int or value < 1 or (upper is not None and value > upper):
        limit = f" <= {upper}" if upper is not None else ""
        raise EmbeddingStoreError(f"{what} must be an int >= 1{limit}, got {value!r}")
    return value


class PgVectorEmbeddingStore(EmbeddingStore, AsyncAddMixin):
    """An :class:`~ragloom.core.EmbeddingStore` in a PostgreSQL table with pgvector.

    ``connection`` is a libpq connection string or URI (the store then owns a pool of
    ``pool_size`` connections; close it with :meth:`close` or a ``with`` block) or a
    :class:`psycopg_pool.ConnectionPool` you own. ``dimension`` is fixed when the table is
    created; for an existing table it may be omitted (read from the table) and, when
    given, must match it. ``index`` is ``"hnsw"`` (default), ``"ivfflat"`` (build it after
    loading data, see :meth:`create_index`) or ``"none"`` (exact scans). Metadata is stored
    as typed JSONB; filters run in SQL with the in-memory store's semantics. A metadata
    key keeps one type (``metadata_schema`` declares some, e.g. ``{"tenant": str}``; else
    the first write fixes it): a write with another type raises ``MetadataTypeError``.

    Thread-safe: each call takes a pooled connection. A connection broken by a server
    restart is replaced, and the call retried when that is safe.
    """

    def __init__(
        self,
        connection: str | ConnectionPool[Any],
        collection: str | None = None,
        *,
        dimension: int | None = None,
        schema: str | None = None,
        create_table: bool = True,
        drop_table_first: bool = False,
        create_extension: bool = True,
        index: IndexType = "hnsw",
        hnsw_m: int = 16,
        hnsw_ef_construction: int = 64,
        ef_search: int = 40,
        ivfflat_lists: int = 100,
        ivfflat_probes: int = 10,
        iterative_scan: IterativeScan = "strict_order",
        metadata_index: bool = True,
        batch_size: int = 1000,
        pool_size: int = 4,
        timeout: float = 10.0,
        metadata_schema: Mapping[str, type] | None = None,
        table: str | None = None,
    ) -> None:
        name = renamed_option(collection, "collection", table, "table")
        self._table_name = _identifier("ragloom_embeddings" if name is None else name, "table name")
        self._schema = None if schema is None else _identifier(schema, "schema name")
        self._table = (
            sql.Identifier(self._schema, self._table_name)
            if self._schema is not None
            else sql.Identifier(self._table_name)
        )
        if dimension is not None:
            _positive_int(dimension, "dimension", _MAX_DIMENSION)
        if index not in ("hnsw", "ivfflat", "none"):
            raise EmbeddingStoreError(f"index must be 'hnsw', 'ivfflat' or 'none', got {index!r}")
        if iterative_scan not in ("off", "strict_order", "relaxed_order"):
            raise EmbeddingStoreError(
                "iterative_scan must be 'off', 'strict_order' or 'relaxed_order', "
                f"got {iterative_scan!r}"
            )
        self._index: IndexType = index
        self._hnsw_m = _positive_int(hnsw_m, "hnsw_m", 100)
        self._hnsw_ef_construction = _positive_int(hnsw_ef_construction, "hnsw_ef_construction")
        self._ef_search = _positive_int(ef_search, "ef_search", _EF_SEARCH_MAX)
        self._ivfflat_lists = _positive_int(ivfflat_lists, "ivfflat_lists", 32768)
        self._metadata_index = bool(metadata_index)
        self._batch_size = _positive_int(batch_size, "batch_size")
        self._declared = metadata_schema_kinds(metadata_schema)
        # (key, kind) pairs this store has committed: writing them again needs no lock.
        self._written_kinds: set[tuple[str, str]] = set()
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
            raise EmbeddingStoreError(f"timeout must be a positive number, got {timeout!r}")
        settings = {
            "hnsw.ef_search": str(self._ef_search),
            "hnsw.iterative_scan": iterative_scan,
            "ivfflat.probes": str(_positive_int(ivfflat_probes, "ivfflat_probes", 32768)),
            "ivfflat.iterative_scan": "off" if iterative_scan == "off" else "relaxed_order",
        }
        self._statements: dict[tuple[Filter | None, bool], tuple[sql.SQL, list[Any]]] = {}
        self._db = Database(
            connection,
            pool_size=_positive_int(pool_size, "pool_size"),
            timeout=float(timeout),
            settings=settings,
        )
        self._async_db = AsyncDatabase(
            self._db,
            connection if isinstance(connection, str) else _conninfo(connection),
            self._db.pool.max_size,
        )
        try:
            self._dimension: int = self._db.run(
                lambda conn: self._setup(
                    conn, dimension, create_table, drop_table_first, create_extension
                ),
                what=f"opening table {self.table_name}",
                write=True,
                idempotent=True,
                prepare=False,
            )
        except BaseException:
            self._db.close()
            raise

    # ------------------------------------------------------------------ properties

    @property
    def dimension(self) -> int:
        """The vector dimension of the table."""
        return self._dimension

    @property
    def collection(self) -> str:
        """The table's name (without its schema)."""
        return self._table_name

    @property
    def table_name(self) -> str:
        """The table, as ``schema.table`` when a schema was given."""
        return f"{self._schema}.{self._table_name}" if self._schema else self._table_name

    @property
    def table(self) -> sql.Identifier:
        """The table as a quoted SQL identifier (for your own queries)."""
        return self._table

    @property
    def pool(self) -> ConnectionPool[Any]:
        """The connection pool the store uses."""
        return self._db.pool

    def __repr__(self) -> str:
        return f"PgVectorEmbeddingStore(table={self.table_name!r}, dimension={self._dimension})"

    def __len__(self) -> int:
        query = sql.SQL("SELECT count(*) FROM {}").format(self._table)

        def work(conn: Connection) -> int:
            row = conn.execute(query).fetchone()
            return int(row[0]) if row else 0

        return self._db.run(work, what="counting entries", write=False, idempotent=True)

    @property
    def async_pool(self) -> AsyncConnectionPool[Any] | None:
        """The async connection pool the async methods use (opened by the first of them, in
        its event loop, with the sync pool's size and connection string; None before)."""
        return self._async_db.pool

    def close(self) -> None:
        """Close the connection pool, if the store created it (see :meth:`aclose`)."""
        self._db.close()

    async def aclose(self) -> None:
        """Close the async pool of the running event loop, then the sync pool as
        :meth:`close` does; use it (or ``async with``) when you used the async methods."""
        await self._async_db.close()
        self._db.close()

    async def __aenter__(self) -> PgVectorEmbeddingStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __enter__(self) -> PgVectorEmbeddingStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ schema

    def _setup(
        self,
        conn: Connection,
        dimension: int | None,
        create_table: bool,
        drop_table_first: bool,
        create_extension: bool,
    ) -> int:
        qualified = self._table.as_string(conn)
        # Serialize concurrent setups of one table (and of the extension).
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 7))", ["ragloom-pgvector"])
        if create_extension:
            try:
                with conn.transaction():
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.Error as exc:
                raise EmbeddingStoreError(
                    f"cannot create the pgvector extension ({describe(exc)}); install pgvector "
                    "and run CREATE EXTENSION vector as a privileged user"
                ) from exc
        row = conn.execute("SELECT to_regtype('vector')::oid").fetchone()
        if row is None or row[0] is None:
            raise EmbeddingStoreError(
                "the pgvector extension is not installed in this database "
                "(CREATE EXTENSION vector), or not on the search_path"
            )
        self._db.set_vector_oid(int(row[0]))
        if drop_table_first:
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(self._table))
        columns = self._columns(conn, qualified)
        if columns is None:
            if not create_table:
                raise EmbeddingStoreError(
                    f"table {self.table_name} does not exist (and create_table=False)"
                )
            if dimension is None:
                raise EmbeddingStoreError(
                    f"table {self.table_name} does not exist: give the dimension to create it"
                )
            self._create(conn, dimension)
            stored = dimension
        else:
            stored = self._check_table(columns, dimension)
        row = conn.execute("SELECT pg_get_serial_sequence(%s, 'seq')", [qualified]).fetchone()
        if row is None or row[0] is None:
            raise EmbeddingStoreError(
                f"table {self.table_name}: column seq is not an identity column"
            )
        self._sequence: str = row[0]
        return stored

    @staticmethod
    def _columns(conn: Connection, qualified: str) -> dict[str, tuple[str, int]] | None:
        exists = conn.execute("SELECT to_regclass(%s)::oid", [qualified]).fetchone()
        if exists is None or exists[0] is None:
            return None
        rows = conn.execute(
            "SELECT attname, format_type(atttypid, atttypmod), atttypmod FROM pg_attribute "
            "WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped",
            [exists[0]],
        ).fetchall()
        return {name: (type_name, typmod) for name, type_name, typmod in rows}

    def _check_table(self, columns: dict[str, tuple[str, int]], dimension: int | None) -> int:
        problems = [
            f"{name} {expected}"
            for name, expected in _EXPECTED_TYPES.items()
            if columns.get(name, ("", 0))[0] != expected
        ]
        embedding = columns.get("embedding")
        if embedding is None or not embedding[0].startswith("vector"):
            problems.append("embedding vector(<dimension>)")
        if problems:
            raise EmbeddingStoreError(
                f"table {self.table_name} exists but is not a ragloom pgvector table: it lacks "
                f"the columns {', '.join(problems)}; use another table or drop_table_first=True"
            )
        assert embedding is not None
        stored = embedding[1]
        if stored < 1:
            raise EmbeddingStoreError(
                f"table {self.table_name}: column embedding has no fixed dimension ({embedding[0]})"
            )
        if dimension is not None and dimension != stored:
            raise EmbeddingStoreError(
                f"table {self.table_name} holds vectors of dimension {stored}, but this store "
                f"was opened with dimension {dimension}; use another table, the same dimension, "
                "or drop_table_first=True to recreate it (deleting its data)"
            )
        return stored

    def _create(self, conn: Connection, dimension: int) -> None:
        conn.execute(
            sql.SQL(
                "CREATE TABLE {table} ("
                "id text PRIMARY KEY, "
                "seq bigint GENERATED ALWAYS AS IDENTITY, "
                "embedding vector({dimension}) NOT NULL, "
                "text text, "
                "metadata jsonb NOT NULL DEFAULT '{{}}', "
                "metadata_kinds text[] NOT NULL DEFAULT '{{}}')"
            ).format(table=self._table, dimension=sql.Literal(dimension))
        )
        if self._metadata_index:
            conn.execute(
                sql.SQL("CREATE INDEX {} ON {} USING gin (metadata jsonb_path_ops)").format(
                    sql.Identifier(_index_name(self._table_name, "metadata_idx")), self._table
                )
            )
        conn.execute(
            sql.SQL("CREATE INDEX {} ON {} USING gin (metadata_kinds)").format(
                sql.Identifier(_index_name(self._table_name, "kinds_idx")), self._table
            )
        )
        if self._index != "none":
            self._create_vector_index(conn, self._index)

    def _create_vector_index(self, conn: Connection, index: IndexType) -> None:
        index_name = _index_name(self._table_name, "embedding_idx")
        name = sql.Identifier(index_name)
        conn.execute(
            sql.SQL("DROP INDEX IF EXISTS {}").format(
                name if self._schema is None else sql.Identifier(self._schema, index_name)
            )
        )
        if index == "hnsw":
            conn.execute(
                sql.SQL(
                    "CREATE INDEX {} ON {} USING hnsw (embedding vector_cosine_ops) "
                    "WITH (m = {}, ef_construction = {})"
                ).format(
                    name,
                    self._table,
                    sql.Literal(self._hnsw_m),
                    sql.Literal(self._hnsw_ef_construction),
                )
            )
        elif index == "ivfflat":
            conn.execute(
                sql.SQL(
                    "CREATE INDEX {} ON {} USING ivfflat (embedding vector_cosine_ops) "
                    "WITH (lists = {})"
                ).format(name, self._table, sql.Literal(self._ivfflat_lists))
            )

    def create_index(self, index: IndexType | None = None) -> None:
        """(Re)build the vector index: ``index`` or the store's configured one.

        IVFFlat learns its lists from the rows present, so build it after loading data;
        HNSW can be built before (inserts then maintain it, more slowly) or after a bulk load
        (faster). ``"none"`` drops the index (exact scans).
        """
        index = self._index if index is None else index
        if index not in ("hnsw", "ivfflat", "none"):
            raise EmbeddingStoreError(f"index must be 'hnsw', 'ivfflat' or 'none', got {index!r}")

        def work(conn: Connection) -> None:
            self._create_vector_index(conn, index)

        self._db.run(work, what=f"building the {index} index", write=True, idempotent=True)
        self._index = index

    # ------------------------------------------------------------------ adding

    def add_all(
        self,
        embeddings: Sequence[Embedding] | npt.NDArray[np.floating[Any]],
        segments: Sequence[TextSegment] | None = None,
        *,
        ids: Sequence[str] | None = None,
    ) -> list[str]:
        """Add a batch in one transaction; existing ids are replaced (keeping their order).

        ``embeddings`` is a sequence of :class:`Embedding` or an ``(n, dimension)`` array.
        Everything is validated before anything is written; on error nothing is added.
        Without ``ids`` the rows are streamed with binary ``COPY``; with ``ids``, an upsert
        (``INSERT ... ON CONFLICT``) in pipelined batches, or ``COPY`` into a temporary
        table and one upsert from it for large batches.
        """
        batch, upsert, kinds = self._batch(embeddings, segments, ids)
        if batch is None:
            return []

        def work(conn: Connection) -> None:
            for lock in self._kind_locks(kinds):  # in the writing transaction
                conn.execute(_KIND_LOCK, [lock])
            self._check_kinds(conn, kinds)
            if upsert:
                self._upsert(conn, batch)
            else:
                self._copy(conn, self._table, batch)

        what = f"adding {len(batch)} embeddings"
        self._db.run(work, what=what, write=True, idempotent=upsert)
        self._written_kinds.update((key, kind) for key, (kind, _) in kinds.items())
        return batch.ids

    async def aadd_all(
        self,
        embeddings: Sequence[Embedding] | npt.NDArray[np.floating[Any]],
        segments: Sequence[TextSegment] | None = None,
        *,
        ids: Sequence[str] | None = None,
    ) -> list[str]:
        """:meth:`add_all` on the store's async connection pool (same statements)."""
        batch, upsert, kinds = self._batch(embeddings, segments, ids)
        if batch is None:
            return []

        async def work(conn: AsyncConnection) -> None:
            for lock in self._kind_locks(kinds):
                await conn.execute(_KIND_LOCK, [lock])
            probe = self._kinds_probe(kinds)
            if probe is not None:
                cursor = await conn.execute(*probe)
                self._refuse_held(kinds, await cursor.fetchone())
            if upsert:
                await self._aupsert(conn, batch)
            else:
                await self._acopy(conn, self._table, batch)

        what = f"adding {len(batch)} embeddings"
        await self._async_db.run(work, what=what, write=True, idempotent=upsert)
        self._written_kinds.update((key, kind) for key, (kind, _) in kinds.items())
        return batch.ids

    def _batch(
        self,
        embeddings: Sequence[Embedding] | npt.NDArray[np.floating[Any]],
        segments: Sequence[TextSegment] | None,
        ids: Sequence[str] | None,
    ) -> tuple[Batch | None, bool, BatchKinds]:
        """The validated rows to write (None for none), whether to upsert (ids given) and
        the metadata types they bring (checked against the table's when written)."""
        entries = new_entries(embeddings, segments, ids, self._dimension, self._declared)
        if entries is None:
            return None, False, {}
        texts, metadata = entries.texts, entries.metadata or [{}] * len(entries.ids)
        documents: list[str] = []
        tags: list[list[str]] = []
        for entry in metadata:
            document, entry_tags = encode_metadata(entry)
            documents.append(document)
            tags.append(entry_tags)
        for position, text in enumerate(texts):
            if text is not None:
                check_text(text, f"text of segment {position}")
        entry_ids = entries.ids if entries.generated else _storable_ids(entries.ids)
        batch = Batch(entry_ids, entries.vectors, texts, documents, tags)
        return batch, not entries.generated, entries.kinds

    @staticmethod
    def _copy_statement(table: sql.Composable) -> sql.Composed:
        return sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
            table, sql.SQL(", ").join(map(sql.Identifier, _COLUMNS))
        )

    def _kind_locks(self, kinds: BatchKinds) -> list[int]:
        """The advisory locks to hold before the type probe: one per key the batch gives a
        type this store has not committed yet. The probe alone cannot see a concurrent
        writer's uncommitted rows, so two writers giving a new key two types would both
        pass it; with the key's lock the second waits for the first's commit and its probe
        sees those rows. Sorted, so that writers take them in one order (no deadlock);
        a pair once committed is not locked again (writes of known types stay parallel)."""
        return sorted(
            _lock_id(self._schema, self._table_name, key)
            for key, (kind, _) in kinds.items()
            if (key, kind) not in self._written_kinds
        )

    def _check_kinds(self, conn: Connection, kinds: BatchKinds) -> None:
        """Refuse the batch if the table holds one of its keys with another type: one probe
        of the ``metadata_kinds`` GIN index, in the writing transaction."""
        probe = self._kinds_probe(kinds)
        if probe is not None:
            self._refuse_held(kinds, conn.execute(*probe).fetchone())

    def _kinds_probe(self, kinds: BatchKinds) -> tuple[sql.Composed, list[Any]] | None:
        """The query finding one row that holds a key of ``kinds`` with another type."""
        if not kinds:
            return None
        other = [
            kind_tag(_LETTER[kind], key)
            for key, kinds_to_avoid in conflicting_kinds(kinds).items()
            for kind in kinds_to_avoid
        ]
        query = sql.SQL("SELECT metadata::text FROM {} WHERE metadata_kinds && %s LIMIT 1")
        return query.format(self._table), [other]

    @staticmethod
    def _refuse_held(kinds: BatchKinds, row: tuple[Any, ...] | None) -> None:
        if row is not None:
            check_held_row(kinds, decode_metadata(row[0]))

    def _copy(self, conn: Connection, table: sql.Composable, batch: Batch) -> None:
        """Binary ``COPY`` of ``batch`` into ``table`` (our stream on UTF-8 connections)."""
        with conn.cursor() as cursor, cursor.copy(self._copy_statement(table)) as copy:
            if conn.info.encoding == "utf-8":
                for chunk in batch.copy_chunks():
                    copy.write(chunk)
                return
            assert self._db.vector_oid is not None
            copy.set_types(["text", self._db.vector_oid, "text", "jsonb", "text[]"])
            for row in batch.param_rows():
                copy.write_row(row)

    async def _acopy(self, conn: AsyncConnection, table: sql.Composable, batch: Batch) -> None:
        """:meth:`_copy` on an async connection."""
        async with conn.cursor() as cursor, cursor.copy(self._copy_statement(table)) as copy:
            if conn.info.encoding == "utf-8":
                for chunk in batch.copy_chunks():
                    await copy.write(chunk)
                return
            assert self._db.vector_oid is not None
            copy.set_types(["text", self._db.vector_oid, "text", "jsonb", "text[]"])
            for row in batch.param_rows():
                await copy.write_row(row)

    def _upsert_sql(self) -> tuple[sql.Composed, sql.Composed]:
        """The (SET list, column list) of the upserts."""
        update = sql.SQL(", ").join(
            sql.SQL("{0} = EXCLUDED.{0}").format(sql.Identifier(column)) for column in _COLUMNS[1:]
        )
        return update, sql.SQL(", ").join(map(sql.Identifier, _COLUMNS))

    def _values_upsert(self) -> sql.Composed:
        """The row-by-row upsert of a small batch (with its seq drawn beforehand)."""
        update, columns = self._upsert_sql()
        return sql.SQL(
            "INSERT INTO {} (seq, {}) OVERRIDING SYSTEM VALUE "
            "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET {}"
        ).format(self._table, columns, update)

    def _staging_upsert(self, staging: sql.Identifier) -> tuple[sql.Composed, sql.Composed]:
        """The statements creating the staging table and upserting from it."""
        update, columns = self._upsert_sql()
        create = sql.SQL(
            "CREATE TEMPORARY TABLE {} "
            "(LIKE {} INCLUDING DEFAULTS INCLUDING IDENTITY) ON COMMIT DROP"
        ).format(staging, self._table)
        # nextval runs after the inner ORDER BY (input order); the outer one is the lock order.
        insert = sql.SQL(
            "INSERT INTO {table} (seq, {columns}) OVERRIDING SYSTEM VALUE "
            "SELECT new_seq, {columns} FROM ("
            "SELECT nextval(%s::regclass) AS new_seq, {columns} FROM {staging} "
            "ORDER BY seq OFFSET 0) batch "
            'ORDER BY id COLLATE "C" '
            "ON CONFLICT (id) DO UPDATE SET {update}"
        ).format(table=self._table, columns=columns, staging=staging, update=update)
        return create, insert

    def _ordered_rows(self, batch: Batch, seqs: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        """The rows of a small batch with their seq, in id (lock) order."""
        rows = batch.param_rows()
        return sorted(
            ((seq, *row) for (seq,), row in zip(seqs, rows, strict=True)), key=lambda row: row[1]
        )

    def _upsert(self, conn: Connection, batch: Batch) -> None:
        """Insert or replace ``rows`` (id first), deadlock-free among concurrent upserts.

        New rows take their ``seq`` (insertion order) in input order, from values drawn
        first; the rows are then written in id order (code point order, the same as
        ``COLLATE "C"`` on UTF-8), so that concurrent upserts of overlapping ids lock them
        in one global order and never deadlock. Replaced rows keep their ``seq``.
        """
        if len(batch) < _STAGING_FROM:
            seqs = conn.execute(_NEXT_SEQS, [self._sequence, len(batch)]).fetchall()
            ordered = self._ordered_rows(batch, seqs)
            statement = self._values_upsert()
            with conn.cursor() as cursor:
                for start in range(0, len(ordered), self._batch_size):
                    cursor.executemany(statement, ordered[start : start + self._batch_size])
            return
        staging = sql.Identifier(f"ragloom_staging_{uuid.uuid4().hex}")
        create, insert = self._staging_upsert(staging)
        conn.execute(create)
        self._copy(conn, staging, batch)
        conn.execute(insert, [self._sequence])

    async def _aupsert(self, conn: AsyncConnection, batch: Batch) -> None:
        """:meth:`_upsert` on an async connection."""
        if len(batch) < _STAGING_FROM:
            cursor = await conn.execute(_NEXT_SEQS, [self._sequence, len(batch)])
            ordered = self._ordered_rows(batch, await cursor.fetchall())
            statement = self._values_upsert()
            async with conn.cursor() as writer:
                for start in range(0, len(ordered), self._batch_size):
                    await writer.executemany(statement, ordered[start : start + self._batch_size])
            return
        staging = sql.Identifier(f"ragloom_staging_{uuid.uuid4().hex}")
        create, insert = self._staging_upsert(staging)
        await conn.execute(create)
        await self._acopy(conn, staging, batch)
        await conn.execute(insert, [self._sequence])

    # ------------------------------------------------------------------ searching

    def search(self, request: EmbeddingSearchRequest) -> EmbeddingSearchResult:
        """The best matches by cosine (HNSW/IVFFlat approximate, exact without an index)."""
        statement, params, settings = self._search_plan(request)

        def work(conn: Connection) -> list[tuple[Any, ...]]:
            return conn.execute(statement, params, binary=True).fetchall()

        rows = self._db.run(work, what="searching", write=False, idempotent=True, settings=settings)
        return self._search_result(request, rows)

    async def asearch(self, request: EmbeddingSearchRequest) -> EmbeddingSearchResult:
        """:meth:`search` on the store's async connection pool (psycopg's async API)."""
        statement, params, settings = self._search_plan(request)

        async def work(conn: AsyncConnection) -> list[tuple[Any, ...]]:
            cursor = await conn.execute(statement, params, binary=True)
            return await cursor.fetchall()

        rows = await self._async_db.run(
            work, what="searching", write=False, idempotent=True, settings=settings
        )
        return self._search_result(request, rows)

    def _search_plan(
        self, request: EmbeddingSearchRequest
    ) -> tuple[sql.SQL, list[Any], dict[str, str] | None]:
        """The statement, its parameters and the session settings a search needs."""
        if not isinstance(request, EmbeddingSearchRequest):
            raise EmbeddingStoreError(
                f"search takes an EmbeddingSearchRequest, got {type(request).__name__}"
            )
        query = request.query_embedding.vector
        if query.shape[0] != self._dimension:
            raise EmbeddingStoreError(
                f"query dimension {query.shape[0]} does not match the table's {self._dimension}"
            )
        k = request.max_results
        query64 = query.astype(np.float64)
        query_norm = math.sqrt(float(query64 @ query64))
        statement, params = self._search_statement(request.filter, query, query_norm, k)
        settings = None
        if k > self._ef_search:
            settings = {"hnsw.ef_search": str(min(k, _EF_SEARCH_MAX))}
        return statement, params, settings

    def _search_result(
        self, request: EmbeddingSearchRequest, rows: list[tuple[Any, ...]]
    ) -> EmbeddingSearchResult:
        """The matches of a search's rows, rescored exactly and ordered."""
        k = request.max_results
        query64 = request.query_embedding.vector.astype(np.float64)
        if rows and rows[0][0] is None:
            assert request.filter is not None
            raise_mismatch(request.filter, rows[0][4])
        if not rows:
            return EmbeddingSearchResult([])
        vectors = decode_vectors([row[2] for row in rows], self._dimension)
        cosines: list[float] = exact_cosines(vectors, query64).tolist()
        order = sorted(range(len(rows)), key=lambda i: (-cosines[i], rows[i][0]))[:k]
        min_score = request.min_score
        kept = [(i, score) for i in order if (score := relevance_score(cosines[i])) >= min_score]
        metadata = decode_many([rows[i][4] for i, _ in kept])
        trusted_embedding, trusted_metadata = Embedding._trusted, Metadata._trusted
        matches: list[EmbeddingMatch] = []
        for (position, score), entry in zip(kept, metadata, strict=True):
            row = rows[position]
            text = row[3]
            matches.append(
                EmbeddingMatch(
                    score,
                    row[1],
                    # A row of a fresh float32 matrix, finite (pgvector refuses others).
                    trusted_embedding(vectors[position]),
                    None if text is None else TextSegment(text, trusted_metadata(entry)),
                )
            )
        return EmbeddingSearchResult(matches)

    def _search_statement(
        self, condition: Filter | None, query: Matrix, query_norm: float, k: int
    ) -> tuple[sql.SQL, list[Any]]:
        """The search statement and its parameters; the SQL (and a filter's parameters) are
        composed once per filter and cached (equal filters give equal SQL)."""
        zero = query_norm == 0.0
        key = (condition, zero)
        cached = self._statements.get(key)
        if cached is None:
            cached = self._compose_search(condition, zero)
            if len(self._statements) >= _STATEMENT_CACHE:
                self._statements.clear()
            self._statements[key] = cached
        statement, prefix = cached
        params = list(prefix)
        if not zero:
            params.append(VectorParam(_vector_payload(query)))
        params.append(k)
        return statement, params

    def _compose_search(self, condition: Filter | None, zero: bool) -> tuple[sql.SQL, list[Any]]:
        # A zero query has cosine 0 with everything: all tie, insertion order wins.
        order = sql.SQL("seq" if zero else "embedding <=> %s, seq")
        if condition is None:
            text = _SEARCH.format(table=self._table, where=sql.SQL(""), order=order).as_string()
            return sql.SQL(text), []
        compiled = compile_filter(condition)
        where = sql.SQL(" WHERE {}").format(compiled.condition)
        statement: sql.Composed = _SEARCH.format(table=self._table, where=where, order=order)
        params = list(compiled.params)
        if compiled.mismatch_tags:
            statement = mismatch_probe(
                self._table,
                "NULL::bigint, NULL::text, NULL::vector, NULL::text, metadata::text",
                statement,
            )
            params.insert(0, compiled.mismatch_tags)
        return sql.SQL(statement.as_string()), params

    # ------------------------------------------------------------------ removing

    def remove(self, id: str) -> None:
        """Remove the entry with this id; an unknown id is ignored."""
        self.remove_all(validate_ids([id], 1))

    def remove_all(self, ids: Iterable[str] | None = None, *, filter: Filter | None = None) -> None:
        """Remove ``ids``, or the entries matching ``filter``, or (neither) everything.

        Removing everything is ``TRUNCATE`` (fast, resets the index; it briefly locks out
        concurrent readers of the table).
        """
        plan = self._remove_plan(ids, filter)
        if plan is None:
            return
        statement, params, what = plan
        self._written_kinds.clear()  # the rows holding them may go: lock the next writes

        def work(conn: Connection) -> tuple[Any, ...] | None:
            cursor = conn.execute(statement, params)
            return cursor.fetchone() if cursor.description else None

        self._check_removed(filter, self._db.run(work, what=what, write=True, idempotent=True))

    async def aremove_all(
        self, ids: Iterable[str] | None = None, *, filter: Filter | None = None
    ) -> None:
        """:meth:`remove_all` on the store's async connection pool."""
        plan = self._remove_plan(ids, filter)
        if plan is None:
            return
        statement, params, what = plan
        self._written_kinds.clear()

        async def work(conn: AsyncConnection) -> tuple[Any, ...] | None:
            cursor = await conn.execute(statement, params)
            return await cursor.fetchone() if cursor.description else None

        row = await self._async_db.run(work, what=what, write=True, idempotent=True)
        self._check_removed(filter, row)

    def _remove_plan(
        self, ids: Iterable[str] | None, filter: Filter | None
    ) -> tuple[sql.Composed, list[Any], str] | None:
        """The statement, parameters and description of a removal (None: nothing to do)."""
        if ids is not None and filter is not None:
            raise EmbeddingStoreError("remove_all takes ids or a filter, not both")
        if ids is None and filter is None:
            return sql.SQL("TRUNCATE {}").format(self._table), [], "removing everything"
        if ids is not None:
            if isinstance(ids, str):
                raise EmbeddingStoreError("remove_all takes a collection of ids, not one str")
            id_list = _storable_ids(validate_ids(ids, unique=False))
            if not id_list:
                return None
            statement = sql.SQL("DELETE FROM {} WHERE id = ANY(%s)").format(self._table)
            return statement, [id_list], f"removing {len(id_list)} ids"
        compiled = compile_filter(check_filter(filter))
        statement = sql.SQL(
            "WITH mismatch AS MATERIALIZED ("
            "SELECT metadata FROM {table} WHERE metadata_kinds && %s), "
            "gone AS (DELETE FROM {table} WHERE ({condition}) "
            "AND NOT EXISTS (SELECT FROM mismatch) RETURNING 1) "
            "SELECT (SELECT metadata::text FROM mismatch LIMIT 1), (SELECT count(*) FROM gone)"
        ).format(table=self._table, condition=compiled.condition)
        return statement, [compiled.mismatch_tags, *compiled.params], "removing by filter"

    @staticmethod
    def _check_removed(filter: Filter | None, row: tuple[Any, ...] | None) -> None:
        """Raise the core's error when a filter removal met metadata it cannot compare."""
        if filter is not None and row is not None and row[0] is not None:
            raise_mismatch(filter, row[0])


# ---------------------------------------------------------------------- helpers


def mismatch_probe(table: sql.Composable, probe: str, statement: sql.Composable) -> sql.Composed:
    """``statement`` preceded by a row ``probe`` of one stored value a filter cannot compare
    (first parameter: the filter's mismatch tags)."""
    return sql.SQL(_WITH_MISMATCH).format(table=table, probe=sql.SQL(probe), statement=statement)


def raise_mismatch(condition: Filter, metadata_text: str) -> None:
    """Raise the core's error for the stored metadata the filter cannot compare."""
    condition.test(decode_metadata(metadata_text))  # raises InvalidFilterError
    raise InvalidFilterError(  # pragma: no cover - test() raises for a mismatching row
        f"filter {condition} cannot be compared with stored metadata {metadata_text}"
    )


def _vector_payload(vector: Matrix) -> bytes:
    return _VECTOR_HEADER.pack(vector.shape[0], 0) + vector.astype(">f4").tobytes()


def _storable_ids(ids: list[str]) -> list[str]:
    """``ids`` if PostgreSQL text can hold each one (no NUL, no lone surrogate)."""
    for embedding_id in ids:
        check_text(embedding_id, "embedding id")
    return ids


def _conninfo(pool: ConnectionPool[Any]) -> str | None:
    """The connection string of a given pool (None when it is computed by a function)."""
    return pool.conninfo if isinstance(pool.conninfo, str) else None


def _lock_id(schema: str | None, table: str, key: str) -> int:
    """The advisory lock (a signed 64-bit id) of metadata key ``key`` of one table."""
    name = json.dumps([schema, table, key]).encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(name, digest_size=8).digest(), "big", signed=True)
