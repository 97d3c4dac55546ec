"""PgVectorEmbeddingStore: the EmbeddingStore contract on PostgreSQL with pgvector.

Table (one per store, created by the first write, or when the store is opened with a
``dimension``, unless ``create_table=False``)::

    id              text PRIMARY KEY          caller's id, or a generated UUID4 string
    seq             bigint IDENTITY           insertion order: ties, like in memory
    embedding       vector(<dimension>)       the vector as added (not normalized)
    text            text                      the segment's text; NULL without a segment
    metadata        jsonb                     typed values (see ``_metadata``)
    metadata_kinds  text[]                    "<kind>:<key>" per key, for type checks

with an HNSW (or IVFFlat) cosine index on ``embedding`` and GIN indexes on ``metadata``
(``jsonb_path_ops``, for equality filters) and ``metadata_kinds``.

The store sits on core's remote-store base (:mod:`ragloom.core.kit.remote_store`): each
operation is written once as steps (a generator of client calls), run in one transaction
on one pooled connection, sync or async (:class:`~ragloom.stores.pgvector._session.Transaction`).

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
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Literal, TypeVar

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding
from ragloom.core.errors import EmbeddingStoreError, InvalidFilterError
from ragloom.core.filters import Filter
from ragloom.core.kit.metadata_codec import KIND_LETTERS
from ragloom.core.kit.remote_store import (
    Compiled,
    NewEntries,
    RemoteEmbeddingStore,
    positive_int,
    renamed_option,
)
from ragloom.core.kit.steps import ClientCall, Steps, arun_steps, run_steps
from ragloom.core.metadata import Metadata, MetadataValue
from ragloom.core.stores.arguments import get_ids, removal_target
from ragloom.core.stores.base import (
    EmbeddingMatch,
    EmbeddingSearchRequest,
    EmbeddingSearchResult,
    StoredEmbedding,
)
from ragloom.core.stores.metadata_types import BatchKinds
from ragloom.core.stores.validation import validate_ids
from ragloom.stores.pgvector._async_database import AsyncDatabase
from ragloom.stores.pgvector._copy import Batch
from ragloom.stores.pgvector._database import (
    Connection,
    Database,
    VectorParam,
    decode_vectors,
    describe,
)
from ragloom.stores.pgvector._filters import CompiledFilter, compile_filter, storable_text
from ragloom.stores.pgvector._metadata import (
    check_text,
    decode_many,
    decode_metadata,
    encode_metadata,
    kind_tag,
)
from ragloom.stores.pgvector._session import AsyncSession, Session, Transaction

__all__ = [
    "IndexType",
    "IterativeScan",
    "PgVectorEmbeddingStore",
    "mismatch_probe",
    "raise_mismatch",
]

IndexType = Literal["hnsw", "ivfflat", "none"]
IterativeScan = Literal["off", "strict_order", "relaxed_order"]

T = TypeVar("T")
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
_TRUNCATE = sql.SQL("TRUNCATE {}")
_DELETE_WHERE = sql.SQL(
    "WITH mismatch AS MATERIALIZED ("
    "SELECT metadata FROM {table} WHERE metadata_kinds && %s), "
    "gone AS (DELETE FROM {table} WHERE ({condition}) "
    "AND NOT EXISTS (SELECT FROM mismatch) RETURNING 1) "
    "SELECT (SELECT metadata::text FROM mismatch LIMIT 1), (SELECT count(*) FROM gone)"
)
_GET = sql.SQL("SELECT id, text, metadata::text FROM {} WHERE id = ANY(%s)")
_GET_WITH_VECTORS = sql.SQL("SELECT id, text, metadata::text, embedding FROM {} WHERE id = ANY(%s)")
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


def _no_statement(step: ClientCall) -> Any:
    """The client of steps run outside a transaction (they must not yield a call)."""
    raise EmbeddingStoreError(f"{step.what}: a statement outside a transaction (internal error)")


class PgVectorEmbeddingStore(RemoteEmbeddingStore):
    """An :class:`~ragloom.core.EmbeddingStore` in a PostgreSQL table with pgvector.

    ``connection`` is a libpq connection string or URI (the store then owns a pool of
    ``pool_size`` connections; close it with :meth:`close` or a ``with`` block) or a
    :class:`psycopg_pool.ConnectionPool` you own. ``dimension`` is fixed when the table is
    created: by the store's first write when omitted (as in the Milvus and Qdrant
    stores), at opening when given; an existing table's is read (and, when given, must
    match). ``index`` is ``"hnsw"`` (default), ``"ivfflat"`` (build it after loading
    data, see :meth:`create_index`) or ``"none"`` (exact scans). Metadata is stored as
    typed JSONB; filters run in SQL with the in-memory store's semantics. A metadata key
    keeps one type (``metadata_schema`` declares some, e.g. ``{"tenant": str}``; else the
    first write fixes it): a write with another type raises ``MetadataTypeError``.

    Thread-safe: each call takes a pooled connection. A connection broken by a server
    restart is replaced, and the call retried when that is safe.
    """

    _label: ClassVar[str] = "pgvector table"

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
        table_name = _identifier("ragloom_embeddings" if name is None else name, "table name")
        super().__init__(table_name, metadata_schema=metadata_schema)
        self._table_name = table_name
        self._schema = None if schema is None else _identifier(schema, "schema name")
        self._table = (
            sql.Identifier(self._schema, self._table_name)
            if self._schema is not None
            else sql.Identifier(self._table_name)
        )
        if dimension is not None:
            positive_int(dimension, "dimension", _MAX_DIMENSION)
        if index not in ("hnsw", "ivfflat", "none"):
            raise EmbeddingStoreError(f"index must be 'hnsw', 'ivfflat' or 'none', got {index!r}")
        if iterative_scan not in ("off", "strict_order", "relaxed_order"):
            raise EmbeddingStoreError(
                "iterative_scan must be 'off', 'strict_order' or 'relaxed_order', "
                f"got {iterative_scan!r}"
            )
        self._index: IndexType = index
        self._hnsw_m = positive_int(hnsw_m, "hnsw_m", 100)
        self._hnsw_ef_construction = positive_int(hnsw_ef_construction, "hnsw_ef_construction")
        self._ef_search = positive_int(ef_search, "ef_search", _EF_SEARCH_MAX)
        self._ivfflat_lists = positive_int(ivfflat_lists, "ivfflat_lists", 32768)
        self._metadata_index = bool(metadata_index)
        self._batch_size = positive_int(batch_size, "batch_size")
        self._sequence: str | None = None  # the seq column's sequence, once the table exists
        # (key, kind) pairs this store has committed: writing them again needs no lock.
        self._written_kinds: set[tuple[str, str]] = set()
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
            raise EmbeddingStoreError(f"timeout must be a positive number, got {timeout!r}")
        settings = {
            "hnsw.ef_search": str(self._ef_search),
            "hnsw.iterative_scan": iterative_scan,
            "ivfflat.probes": str(positive_int(ivfflat_probes, "ivfflat_probes", 32768)),
            "ivfflat.iterative_scan": "off" if iterative_scan == "off" else "relaxed_order",
        }
        self._statements: dict[tuple[Filter | None, bool], tuple[sql.SQL, list[Any]]] = {}
        self._db = Database(
            connection,
            pool_size=positive_int(pool_size, "pool_size"),
            timeout=float(timeout),
            settings=settings,
        )
        self._async_db = AsyncDatabase(
            self._db,
            connection if isinstance(connection, str) else _conninfo(connection),
            self._db.pool.max_size,
        )
        try:
            self._dimension = self._db.run(
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

    @property
    def async_pool(self) -> AsyncConnectionPool[Any] | None:
        """The async connection pool the async methods use (opened by the first of them, in
        its event loop, with the sync pool's size and connection string; None before)."""
        return self._async_db.pool

    def __repr__(self) -> str:
        return f"PgVectorEmbeddingStore(table={self.table_name!r}, dimension={self._dimension})"

    def __len__(self) -> int:
        if self._dimension is None:
            return 0
        query = sql.SQL("SELECT count(*) FROM {}").format(self._table)

        def work(conn: Connection) -> int:
            row = conn.execute(query).fetchone()
            return int(row[0]) if row else 0

        return self._db.run(work, what="counting entries", write=False, idempotent=True)

    def close(self) -> None:
        """Close the connection pool, if the store created it (see :meth:`aclose`)."""
        self._db.close()

    async def _close_async(self) -> None:
        """Close the async pool of the running event loop."""
        await self._async_db.close()

    # ------------------------------------------------------------------ transactions

    def _run(self, steps: Steps[T]) -> T:
        """Steps in one transaction on a pooled connection (a rolled-back one runs again:
        see :class:`Transaction`)."""
        if not isinstance(steps, Transaction):
            return run_steps(steps, _no_statement)
        transaction: Transaction[T] = steps
        oid = self._db.vector_oid

        def work(conn: Connection) -> T:
            return run_steps(transaction.again(), Session(conn, oid).perform)

        result = self._db.run(
            work,
            what=transaction.what,
            write=transaction.write,
            idempotent=transaction.idempotent,
            settings=transaction.settings,
        )
        if transaction.committed is not None:
            transaction.committed()
        return result

    async def _arun(self, steps: Steps[T]) -> T:
        """:meth:`_run` on the running event loop's async pool."""
        if not isinstance(steps, Transaction):
            return run_steps(steps, _no_statement)
        transaction: Transaction[T] = steps
        oid = self._db.vector_oid

        async def work(conn: psycopg.AsyncConnection[Any]) -> T:
            return await arun_steps(transaction.again(), AsyncSession(conn, oid).perform)

        result = await self._async_db.run(
            work,
            what=transaction.what,
            write=transaction.write,
            idempotent=transaction.idempotent,
            settings=transaction.settings,
        )
        if transaction.committed is not None:
            transaction.committed()
        return result

    # ------------------------------------------------------------------ schema

    def _setup(
        self,
        conn: Connection,
        dimension: int | None,
        create_table: bool,
        drop_table_first: bool,
        create_extension: bool,
    ) -> int | None:
        """Check (or create) the extension and the table; the table's dimension (None: no
        table yet, and no dimension to create it with)."""
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
                return None  # created by the first write (_ensure_collection)
            self._create(conn, dimension)
            stored = dimension
        else:
            stored = self._check_table(columns, dimension)
        row = conn.execute("SELECT pg_get_serial_sequence(%s, 'seq')", [qualified]).fetchone()
        if row is None or row[0] is None:
            raise EmbeddingStoreError(
                f"table {self.table_name}: column seq is not an identity column"
            )
        self._sequence = row[0]
        return stored

    def _ensure_collection(self, dimension: int) -> None:
        """Create the table on the first write (or adopt one another store made since)."""
        if self._dimension is not None:
            return
        with self._lock:
            if self._dimension is None:
                self._dimension = self._db.run(
                    lambda conn: self._setup(conn, dimension, True, False, False),
                    what=f"creating table {self.table_name}",
                    write=True,
                    idempotent=True,
                    prepare=False,
                )

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
        if self._dimension is None:  # no table yet: the first write builds this index
            self._index = index
            return

        def work(conn: Connection) -> None:
            self._create_vector_index(conn, index)

        self._db.run(work, what=f"building the {index} index", write=True, idempotent=True)
        self._index = index

    # ------------------------------------------------------------------ adding

    def _prepare(self, entries: NewEntries) -> Batch:
        """The checked rows to write (PostgreSQL text holds no NUL or lone surrogate)."""
        if self._dimension is None:
            positive_int(int(entries.vectors.shape[1]), "dimension", _MAX_DIMENSION)
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
        return Batch(entry_ids, entries.vectors, texts, documents, tags)

    def _write(self, entries: NewEntries, batch: Batch) -> Steps[None]:
        """Add a batch in one transaction; existing ids are replaced (keeping their order).

        Without ids the rows are streamed with binary ``COPY``; with ids, an upsert
        (``INSERT ... ON CONFLICT``) in pipelined batches, or ``COPY`` into a temporary
        table and one upsert from it for large batches.
        """
        kinds, upsert = entries.kinds, not entries.generated
        what = f"adding {len(batch)} embeddings"

        def steps() -> Steps[None]:
            for lock in self._kind_locks(kinds):  # in the writing transaction
                yield ClientCall.of(what, "execute", _KIND_LOCK, [lock])
            yield from self._check_kinds(kinds)
            if upsert:
                yield from self._upsert(what, batch)
            else:
                yield ClientCall.of(what, "copy", self._copy_statement(self._table), batch)

        def committed() -> None:
            self._written_kinds.update((key, kind) for key, (kind, _) in kinds.items())

        return Transaction(what, steps, write=True, idempotent=upsert, committed=committed)

    def _kind_locks(self, kinds: BatchKinds) -> list[int]:
        """The advisory locks to hold before the type probe: one per key the batch gives a
        type this store has not committed yet. The probe alone cannot see a concurrent
        writer's uncommitted rows, so two writers giving a new key two types would both
        pass it; with the key's lock the second waits for the first's commit and its probe
        sees those rows. Sorted, so that writers take them in one order (no deadlock);
        a pair once committed is not locked again (writes of known types stay parallel).
        Transaction-level locks: the commit or rollback releases them, none outlives the
        write on a pooled connection."""
        return sorted(
            _lock_id(self._schema, self._table_name, key)
            for key, (kind, _) in kinds.items()
            if (key, kind) not in self._written_kinds
        )

    def _held_metadata(
        self, conflicts: Mapping[str, list[str]]
    ) -> Steps[list[dict[str, MetadataValue]]]:
        """One row holding a key of the batch with another type: one probe of the
        ``metadata_kinds`` GIN index, in the writing transaction."""
        other = [
            kind_tag(_LETTER[kind], key)
            for key, kinds_to_avoid in conflicts.items()
            for kind in kinds_to_avoid
        ]
        query = sql.SQL("SELECT metadata::text FROM {} WHERE metadata_kinds && %s LIMIT 1")
        row = yield ClientCall.of(
            "checking metadata types", "row", query.format(self._table), [other]
        )
        return [] if row is None else [decode_metadata(row[0])]

    @staticmethod
    def _copy_statement(table: sql.Composable) -> sql.Composed:
        return sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
            table, sql.SQL(", ").join(map(sql.Identifier, _COLUMNS))
        )

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

    def _upsert(self, what: str, batch: Batch) -> Steps[None]:
        """Insert or replace ``rows`` (id first), deadlock-free among concurrent upserts.

        New rows take their ``seq`` (insertion order) in input order, from values drawn
        first; the rows are then written in id order (code point order, the same as
        ``COLLATE "C"`` on UTF-8), so that concurrent upserts of overlapping ids lock them
        in one global order and never deadlock. Replaced rows keep their ``seq``.
        """
        if len(batch) < _STAGING_FROM:
            seqs = yield ClientCall.of(what, "rows", _NEXT_SEQS, [self._sequence, len(batch)])
            ordered = self._ordered_rows(batch, seqs)
            statement = self._values_upsert()
            for start in range(0, len(ordered), self._batch_size):
                chunk = ordered[start : start + self._batch_size]
                yield ClientCall.of(what, "executemany", statement, chunk)
            return
        staging = sql.Identifier(f"ragloom_staging_{uuid.uuid4().hex}")
        create, insert = self._staging_upsert(staging)
        yield ClientCall.of(what, "execute", create)
        yield ClientCall.of(what, "copy", self._copy_statement(staging), batch)
        yield ClientCall.of(what, "execute", insert, [self._sequence])

    # ------------------------------------------------------------------ reading

    def _search(self, request: EmbeddingSearchRequest) -> Steps[EmbeddingSearchResult]:
        """The best matches by cosine (HNSW/IVFFlat approximate, exact without an index):
        one statement, rescored exactly."""
        query = self._checked_query(request)
        if self._dimension is None:
            return _done(EmbeddingSearchResult([]))
        k = request.max_results
        query64 = query.astype(np.float64)
        query_norm = math.sqrt(float(query64 @ query64))
        statement, params = self._search_statement(request.filter, query, query_norm, k)
        settings = None
        if k > self._ef_search:
            settings = {"hnsw.ef_search": str(min(k, _EF_SEARCH_MAX))}

        def steps() -> Steps[EmbeddingSearchResult]:
            rows = yield ClientCall.of("searching", "rows", statement, params, binary=True)
            return self._search_result(request, query, rows)

        return Transaction("searching", steps, write=False, idempotent=True, settings=settings)

    def _search_result(
        self, request: EmbeddingSearchRequest, query: Matrix, rows: list[tuple[Any, ...]]
    ) -> EmbeddingSearchResult:
        """The matches of a search's rows, rescored exactly and ordered."""
        if rows and rows[0][0] is None:
            assert request.filter is not None
            raise_mismatch(request.filter, rows[0][4])
        if not rows:
            return EmbeddingSearchResult([])
        assert self._dimension is not None
        vectors = decode_vectors([row[2] for row in rows], self._dimension)
        cosines = self._cosines(vectors, query)
        seqs = [row[0] for row in rows]
        kept = list(self._ranked(cosines, seqs, request.max_results, request.min_score))
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

    def _remove(self, ids: Iterable[str] | Filter | None, filter: Filter | None) -> Steps[None]:
        """The base's removal (``ids``, the entries matching ``filter``, or everything) in
        one transaction. Removing everything is ``TRUNCATE`` (fast, resets the index; it
        briefly locks out concurrent readers of the table)."""
        id_list, checked = removal_target(ids, filter)
        if self._dimension is None or id_list == []:
            return _done(None)
        self._written_kinds.clear()  # the rows holding them may go: lock the next writes
        what = "removing by filter" if checked is not None else "removing everything"
        if id_list is not None:
            what = f"removing {len(id_list)} ids"
        parent = super()._remove
        return Transaction(what, lambda: parent(id_list, checked), write=True, idempotent=True)

    def _compile(self, condition: Filter) -> Steps[Compiled]:
        """``condition`` in SQL (exact: SQL selects exactly its entries)."""
        return Compiled((condition, compile_filter(condition)))
        yield  # pragma: no cover - makes this a generator

    def _keys(self, ids: list[str]) -> list[str]:
        """The ids PostgreSQL text can hold (no other can be stored)."""
        return [embedding_id for embedding_id in ids if storable_text(embedding_id)]

    def _delete_keys(self, keys: list[str]) -> Steps[None]:
        statement = sql.SQL("DELETE FROM {} WHERE id = ANY(%s)").format(self._table)
        yield ClientCall.of(f"removing {len(keys)} ids", "execute", statement, [keys])

    def _delete_where(self, native: tuple[Filter, CompiledFilter] | None) -> Steps[None]:
        """``TRUNCATE`` (None), or one statement deleting a filter's rows unless the table
        holds a value the filter cannot compare (then nothing is deleted and the core's
        error is raised, as in memory)."""
        if native is None:
            yield ClientCall.of("removing everything", "execute", _TRUNCATE.format(self._table))
            return
        condition, compiled = native
        statement = _DELETE_WHERE.format(table=self._table, condition=compiled.condition)
        params = [compiled.mismatch_tags, *compiled.params]
        row = yield ClientCall.of("removing by filter", "row", statement, params)
        if row is not None and row[0] is not None:
            raise_mismatch(condition, row[0])

    # ------------------------------------------------------------------ lookup by id

    def _get(self, ids: Iterable[str], embeddings: bool) -> Steps[list[StoredEmbedding]]:
        """The base's lookup (``get``/``aget``): one ``WHERE id = ANY(%s)`` query, put in
        the order asked."""
        wanted = get_ids(ids)
        if self._dimension is None or not self._keys(wanted):
            return _done([])
        parent = super()._get
        return Transaction(
            "reading by id", lambda: parent(wanted, embeddings), write=False, idempotent=True
        )

    def _rows_of(self, keys: list[str], embeddings: bool) -> Steps[list[tuple[Any, ...]]]:
        statement = _GET_WITH_VECTORS if embeddings else _GET
        rows: list[tuple[Any, ...]] = yield ClientCall.of(
            "reading by id", "rows", statement.format(self._table), [keys], binary=True
        )
        return rows

    def _stored(self, row: tuple[Any, ...]) -> tuple[str, TextSegment | None]:
        entry_id, text, metadata = row[0], row[1], row[2]
        if text is None:
            return entry_id, None
        return entry_id, TextSegment(text, Metadata._trusted(decode_metadata(metadata)))

    def _vectors(self, rows: list[tuple[Any, ...]]) -> Matrix:
        assert self._dimension is not None
        return decode_vectors([row[3] for row in rows], self._dimension)


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


def _done(value: T) -> Steps[T]:
    """Steps that need no statement: ``value`` at once."""
    return value
    yield  # pragma: no cover - makes this a generator


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
