"""ReadOnlyExecutor: run one statement under read-only rules the database itself enforces.

- PostgreSQL (psycopg 3): a ``READ ONLY`` transaction that always rolls back, a local
  ``statement_timeout``, and a snapshot taken before the statement so it cannot switch the
  transaction back to read-write; the statement is sent as a prepared statement, which the
  server refuses to hold more than one command. Superuser connections are refused unless
  allowed: a superuser can run ``COPY ... TO PROGRAM`` even in a read-only transaction.
- SQLite (sqlite3): ``PRAGMA query_only`` for the duration of the statement (and
  ``mode=ro`` when the retriever opened the file from a URL), no ``ATTACH``, a progress
  handler that interrupts the statement at the deadline; sqlite3 runs one statement only.

Other dialects are refused: read-only enforcement for them is not implemented.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from ragloom.core.errors import InvalidArgumentError, RetrievalError

__all__ = ["QueryResult", "ReadOnlyExecutor", "SqlExecutionError"]

# sqlglot's name for each SQLAlchemy dialect this module can make read-only.
SQLGLOT_DIALECTS = {"postgresql": "postgres", "sqlite": "sqlite"}


class SqlExecutionError(RetrievalError):
    """The database refused or failed the statement (its own message is included)."""


@dataclass(frozen=True, slots=True)
class QueryResult:
    """Column names, up to ``max_rows`` rows, and whether more rows were cut off."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    truncated: bool


class ReadOnlyExecutor:
    """Runs single statements on ``engine`` read-only, bounded in rows and time.

    It does not inspect the SQL: the database refuses writes. The retriever checks the
    statement with sqlglot first; this class is public so that the refusal by the
    database can be shown for statements that check would have stopped.
    """

    def __init__(
        self,
        engine: sa.Engine,
        *,
        max_rows: int = 100,
        timeout_seconds: float = 10.0,
        schema: str | None = None,
        allow_superuser: bool = False,
    ) -> None:
        if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
            raise InvalidArgumentError(f"max_rows must be an int >= 1, got {max_rows!r}")
        if (
            isinstance(timeout_seconds, bool)
            or not isinstance(timeout_seconds, int | float)
            or not 0 < timeout_seconds < 86_400
        ):
            raise InvalidArgumentError(
                f"timeout_seconds must be a number in (0, 86400), got {timeout_seconds!r}"
            )
        name = engine.dialect.name
        if name not in SQLGLOT_DIALECTS:
            raise InvalidArgumentError(
                f"dialect {name!r} of {engine.url!r} is not supported: read-only enforcement "
                f"is implemented for {sorted(SQLGLOT_DIALECTS)}"
            )
        if name == "postgresql" and engine.dialect.driver != "psycopg":
            raise InvalidArgumentError(
                f"PostgreSQL needs the psycopg (3) driver, got {engine.dialect.driver!r}: use "
                "a postgresql+psycopg:// URL (prepared statements keep it to one statement)"
            )
        self.engine = engine
        self.max_rows = max_rows
        self.timeout_seconds = float(timeout_seconds)
        self.schema = schema
        self.allow_superuser = allow_superuser
        self._checked_role = False

    @property
    def dialect(self) -> str:
        """The sqlglot dialect name of the engine (``postgres`` or ``sqlite``)."""
        return SQLGLOT_DIALECTS[self.engine.dialect.name]

    def run(self, sql: str, parameters: Sequence[Any] = ()) -> QueryResult:
        """Execute one statement read-only and fetch at most ``max_rows`` rows.

        Raises :class:`SqlExecutionError` with the database's message when it refuses or
        fails the statement (a write, a timeout, a syntax error, several statements).
        """
        runner = (
            self._run_postgres if self.engine.dialect.name == "postgresql" else (self._run_sqlite)
        )
        try:
            with self.engine.connect() as conn:
                return runner(conn.connection.dbapi_connection, sql, tuple(parameters))
        except SqlExecutionError:
            raise
        except sa.exc.SQLAlchemyError as exc:
            raise SqlExecutionError(f"cannot connect to {self.engine.url!r}: {exc}") from exc

    def _fetch(self, cursor: Any) -> QueryResult:
        if cursor.description is None:
            raise SqlExecutionError("the statement returned no result set (not a query)")
        columns = tuple(str(d[0]) for d in cursor.description)
        rows = [tuple(row) for row in cursor.fetchmany(self.max_rows + 1)]
        return QueryResult(columns, tuple(rows[: self.max_rows]), len(rows) > self.max_rows)

    def _run_postgres(self, conn: Any, sql: str, parameters: tuple[Any, ...]) -> QueryResult:
        import psycopg

        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            raise SqlExecutionError("the pooled connection is inside a transaction; expected idle")
        timeout_ms = f"{max(1, round(self.timeout_seconds * 1000))}ms"
        try:
            with conn.transaction(force_rollback=True), conn.cursor() as cursor:
                cursor.execute("SET TRANSACTION READ ONLY")
                # A query (hence a snapshot) before the statement: from now on the
                # transaction cannot be made read-write again.
                cursor.execute(
                    "SELECT set_config('statement_timeout', %s, true),"
                    " set_config('lock_timeout', %s, true),"
                    " current_setting('is_superuser')",
                    (timeout_ms, timeout_ms),
                )
                row = cursor.fetchone()
                if row is not None and row[2] == "on" and not self.allow_superuser:
                    raise SqlExecutionError(
                        f"refusing to query as a superuser ({conn.info.user!r}): a read-only "
                        "transaction does not stop a superuser's COPY ... TO PROGRAM or file "
                        "functions; connect as a role with SELECT privileges only "
                        "(or pass allow_superuser=True)"
                    )
                if self.schema is not None:
                    cursor.execute("SELECT set_config('search_path', %s, true)", (self.schema,))
                cursor.execute(sql, parameters or None, prepare=True)
                return self._fetch(cursor)
        except psycopg.Error as exc:
            raise SqlExecutionError(f"PostgreSQL refused the statement: {exc}") from exc

    @contextmanager
    def _sqlite_guard(self, conn: sqlite3.Connection) -> Iterator[None]:
        deadline = time.monotonic() + self.timeout_seconds
        attached = conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        conn.execute("PRAGMA query_only = ON")
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 1000)
        try:
            yield
        finally:
            conn.set_progress_handler(None, 0)
            if conn.in_transaction:
                conn.rollback()
            conn.execute("PRAGMA query_only = OFF")
            conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, attached)

    def _run_sqlite(self, conn: Any, sql: str, parameters: tuple[Any, ...]) -> QueryResult:
        try:
            with self._sqlite_guard(conn):
                cursor = conn.cursor()
                try:
                    cursor.execute(sql, parameters)
                    return self._fetch(cursor)
                finally:
                    cursor.close()
        except sqlite3.Error as exc:
            message = str(exc)
            if message == "interrupted":
                message = f"interrupted after the {self.timeout_seconds:g}s statement timeout"
            raise SqlExecutionError(f"SQLite refused the statement: {message}") from exc
