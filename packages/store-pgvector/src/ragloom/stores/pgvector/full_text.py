"""PgFullTextContentRetriever: PostgreSQL full-text search over a PgVector store's texts.

The retriever adds to the store's table a generated column
``tsv_<language> tsvector GENERATED ALWAYS AS (to_tsvector('<language>', coalesce(text, '')))``
with a GIN index (once; later retrievers reuse them), so every segment added through the
store is indexed for both vector and full-text search, and a hybrid retriever can combine
the two without leaving PostgreSQL.

A query matches a segment sharing any of its lexemes (the words of
``plainto_tsquery(language, query)`` joined by OR, so a long question still finds texts
that contain only some of its words); matches are ranked by ``ts_rank_cd`` (cover density:
more and closer query words rank higher), normalized to [0, 1) by ``rank / (rank + 1)``
(normalization flag 32, plus any flags given), ties in insertion order.

The language is a PostgreSQL text search configuration (``english``, ``german``,
``simple``, ...): the server resolves it from a bound parameter (an unknown name is an
error) and its canonical name then appears as a quoted literal in the column's DDL, which
takes no parameters.
"""

from __future__ import annotations

import hashlib
from typing import Any

import psycopg
from psycopg import sql

from ragloom.core.content import EMBEDDING_ID, SCORE, Content
from ragloom.core.document import TextSegment
from ragloom.core.errors import EmbeddingStoreError
from ragloom.core.filters import Filter
from ragloom.core.metadata import Metadata
from ragloom.core.query import Query
from ragloom.core.retrievers.dynamic import Dynamic, resolve_dynamic
from ragloom.core.stores.validation import check_max_results, check_min_score
from ragloom.stores.pgvector._async_database import AsyncConnection
from ragloom.stores.pgvector._database import Connection, describe
from ragloom.stores.pgvector._filters import compile_filter
from ragloom.stores.pgvector._metadata import decode_many
from ragloom.stores.pgvector.store import PgVectorEmbeddingStore, mismatch_probe, raise_mismatch

__all__ = ["PgFullTextContentRetriever"]

_MAX_IDENTIFIER_BYTES = 63


def _column_name(language: str) -> str:
    name = f"tsv_{language}"
    if "%" not in name and len(name.encode("utf-8")) <= _MAX_IDENTIFIER_BYTES:
        return name
    return f"tsv_{hashlib.sha1(language.encode('utf-8')).hexdigest()[:16]}"


class PgFullTextContentRetriever:
    """Full-text :class:`~ragloom.core.ContentRetriever` over a :class:`PgVectorEmbeddingStore`.

    ``language`` names a PostgreSQL text search configuration. ``max_results``,
    ``min_score`` (on the normalized rank, in [0, 1)) and ``filter`` (a metadata
    :class:`~ragloom.core.Filter`, with the store's semantics) may each be a value or a
    function of the :class:`~ragloom.core.Query`, as for ``EmbeddingStoreContentRetriever``.
    ``normalization`` is extra ``ts_rank_cd`` normalization flags (e.g. 1 or 2 to favour
    short texts); 32 is always added. Each :class:`Content` carries ``score`` and
    ``embedding_id`` in its metadata.
    """

    def __init__(
        self,
        store: PgVectorEmbeddingStore,
        *,
        language: str = "english",
        max_results: Dynamic[int] = 3,
        min_score: Dynamic[float] = 0.0,
        filter: Dynamic[Filter | None] = None,
        normalization: int = 0,
        display_name: str = "default",
    ) -> None:
        if not isinstance(store, PgVectorEmbeddingStore):
            raise EmbeddingStoreError(
                f"store must be a PgVectorEmbeddingStore, got {type(store).__name__}"
            )
        if not isinstance(language, str) or not language or "\x00" in language:
            raise EmbeddingStoreError(f"language must be a non-empty str, got {language!r}")
        if type(normalization) is not int or not 0 <= normalization < 64:
            raise EmbeddingStoreError(
                f"normalization must be ts_rank_cd flags (an int in [0, 64)), got {normalization!r}"
            )
        if not callable(max_results):
            check_max_results(max_results)
        if not callable(min_score):
            check_min_score(min_score)
        if store.dimension is None:
            raise EmbeddingStoreError(
                f"table {store.table_name} does not exist yet (a store opened without a "
                "dimension creates it on its first write): add embeddings first, or open "
                "the store with dimension="
            )
        self.store = store
        self.max_results = max_results
        self.min_score = min_score
        self.filter = filter
        self.display_name = display_name
        self._normalization = normalization | 32
        self.language = store._db.run(
            lambda conn: self._setup(conn, language),
            what=f"setting up full-text search ({language!r}) on {store.table_name}",
            write=True,
            idempotent=True,
        )
        self._column = sql.Identifier(_column_name(self.language))

    def _setup(self, conn: Connection, language: str) -> str:
        try:
            with conn.transaction():
                row = conn.execute("SELECT %s::regconfig::text", [language]).fetchone()
        except psycopg.Error as exc:
            raise EmbeddingStoreError(
                f"unknown text search configuration {language!r} ({describe(exc)}); "
                "see SELECT cfgname FROM pg_ts_config"
            ) from exc
        assert row is not None
        canonical: str = row[0]
        table = self.store.table
        column = _column_name(canonical)
        index = f"{self.store._table_name[:40]}_{column[:16]}_{_short_hash(column)}_idx"
        qualified = table.as_string(conn)
        present = conn.execute(
            "SELECT EXISTS (SELECT FROM pg_attribute WHERE attrelid = to_regclass(%s) "
            "AND attname = %s AND NOT attisdropped), "
            "EXISTS (SELECT FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = to_regclass(%s) AND c.relname = %s)",
            [qualified, column, qualified, index],
        ).fetchone()
        if present == (True, True):  # the usual case: no DDL, no table lock
            return canonical
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 7))", ["ragloom-pgvector"])
        conn.execute(
            sql.SQL(
                "ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} tsvector GENERATED ALWAYS "
                "AS (to_tsvector({language}::regconfig, coalesce(text, ''))) STORED"
            ).format(table=table, column=sql.Identifier(column), language=sql.Literal(canonical))
        )
        conn.execute(
            sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING gin ({})").format(
                sql.Identifier(index), table, sql.Identifier(column)
            )
        )
        return canonical

    def retrieve(self, query: Query) -> list[Content]:
        """The stored segments best matching ``query``'s words, most relevant first."""
        statement, params, condition, min_score = self._plan(query)

        def work(conn: Connection) -> list[tuple[Any, ...]]:
            return conn.execute(statement, params).fetchall()

        rows = self.store._db.run(work, what="full-text search", write=False, idempotent=True)
        return _contents(rows, condition, min_score)

    async def aretrieve(self, query: Query) -> list[Content]:
        """:meth:`retrieve` on the store's async connection pool."""
        statement, params, condition, min_score = self._plan(query)

        async def work(conn: AsyncConnection) -> list[tuple[Any, ...]]:
            cursor = await conn.execute(statement, params)
            return await cursor.fetchall()

        rows = await self.store._async_db.run(
            work, what="full-text search", write=False, idempotent=True
        )
        return _contents(rows, condition, min_score)

    def _plan(self, query: Query) -> tuple[sql.Composed, list[Any], Filter | None, float]:
        """The statement and parameters of a search, its filter and minimum score."""
        max_results = check_max_results(resolve_dynamic(self.max_results, query))
        min_score = check_min_score(resolve_dynamic(self.min_score, query))
        condition = resolve_dynamic(self.filter, query)
        compiled = None if condition is None else compile_filter(condition)
        params: list[Any] = [self._normalization, self.language, query.text]
        where: sql.Composable = sql.SQL("")
        if compiled is not None:
            where = sql.SQL(" AND ({})").format(compiled.condition)
            params += compiled.params
        params.append(max_results)
        table = self.store.table
        statement: sql.Composed = sql.SQL(
            "SELECT seq, id, text, metadata::text, rank FROM ("
            "SELECT seq, id, text, metadata, ts_rank_cd({column}, q.query, %s) AS rank "
            "FROM {table}, (SELECT replace(plainto_tsquery(%s::regconfig, %s)::text, ' & ', ' | ')"
            "::tsquery AS query) q "
            "WHERE {column} @@ q.query{where}) matches ORDER BY rank DESC, seq LIMIT %s"
        ).format(column=self._column, table=table, where=where)
        # plainto_tsquery's output is quoted lexemes joined by ' & '; the parser never puts
        # a space inside a lexeme, so the replace turns exactly those operators into ORs.
        if compiled is not None and compiled.mismatch_tags:
            statement = mismatch_probe(
                table, "NULL::bigint, NULL::text, NULL::text, metadata::text, NULL::real", statement
            )
            params.insert(0, compiled.mismatch_tags)
        return statement, params, condition, min_score

    def __repr__(self) -> str:
        return (
            f"PgFullTextContentRetriever({self.display_name!r}, table={self.store.table_name!r}, "
            f"language={self.language!r})"
        )


def _short_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:8]


def _contents(
    rows: list[tuple[Any, ...]], condition: Filter | None, min_score: float
) -> list[Content]:
    """The contents of a full-text search's rows (raising a filter type mismatch)."""
    if rows and rows[0][0] is None:
        assert condition is not None
        raise_mismatch(condition, rows[0][3])
    kept = [row for row in rows if float(row[4]) >= min_score]
    contents: list[Content] = []
    for (_, embedding_id, text, _, rank), metadata in zip(
        kept, decode_many([row[3] for row in kept]), strict=True
    ):
        segment = TextSegment(text, Metadata._trusted(metadata))
        contents.append(Content(segment, {SCORE: float(rank), EMBEDDING_ID: embedding_id}))
    return contents
