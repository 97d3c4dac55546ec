"""ReadOnlyExecutor: run one statement under read-only rules the database itself enforces.

- PostgreSQL (psycopg 3): a ``READ ONLY`` transaction that always rolls back, a local
  ``statement_timeout``, and a snapshot taken before the statement so it cannot switch the
  transaction back to read-write; the statement is sent as a prepared statement, which the
  server refuses to hold more than one command. Superuser connections are refused unless
  allowed: a superuser can run ``COPY ... TO PROGRAM`` even in a read-only transaction.
  Session-level advisory locks are released before the connection goes back to the pool.
- SQLite (sqlite3): ``PRAGMA query_only`` for the duration of the statement (and
  ``mode=ro`` when the retriever opened the file from a URL), no ``ATTACH``, a progress
  handler that interrupts the statement at the deadline; sqlite3 runs one statement only.

Every call ends within ``timeout_seconds`` (plus a second or so): connecting (psycopg's
``connect_timeout``, at least 2 s), the statement (``statement_timeout`` / the progress
handler) and fetching (a client-side deadline; on PostgreSQL a watchdog cancels the query,
then closes the socket of a server that does not answer). Rows are streamed and bounded in
bytes as well as in number: cells longer than ``max_cell_chars`` are cut (by the server
when PostgreSQL accepts the statement as a subquery) and fetching stops at
``max_result_bytes``. Other dialects are refused: read-only enforcement is not implemented.
"""

from __future__ import annotations

import contextlib
import logging
import math
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from ragloom.core.errors import InvalidArgumentError, RetrievalError

__all__ = ["QueryResult", "ReadOnlyExecutor", "SqlConnectionError", "SqlExecutionError"]

logger = logging.getLogger(__name__)

# sqlglot's name for each SQLAlchemy dialect this module can make read-only.
SQLGLOT_DIALECTS = {"postgresql": "postgres", "sqlite": "sqlite"}

# After the deadline, the PostgreSQL watchdog waits this long for the server's own
# statement_timeout, then as long for its cancel request, then closes the socket.
WATCHDOG_GRACE = 0.3

# PostgreSQL type OIDs whose values are small (bool, integers, floats, money, dates and
# times, uuid, void, numeric: at most ~147k digits): passed through uncut.
_SMALL_TYPES = frozenset(
    {16, 18, 20, 21, 23, 26, 700, 701, 790, 1082, 1083, 1114, 1184, 1186, 1266, 1700, 2278, 2950}
)
_TEXT_TYPES = frozenset({25, 1042, 1043})  # text, char(n), varchar: cut keeping the type
_BYTEA = 17

# The deadline of the call in progress, read by the connect hook of PostgreSQL engines.
_DEADLINE: ContextVar[float | None] = ContextVar("ragloom_sql_deadline", default=None)


class SqlExecutionError(RetrievalError):
    """The database refused or failed the statement (its own message is included)."""


class SqlConnectionError(SqlExecutionError):
    """The database could not be reached, or stopped answering, within the deadline.

    Not fed back to the model: no other SQL can fix it.
    """


@dataclass(frozen=True, slots=True)
class QueryResult:
    """Column names and the rows kept, with what was cut to respect the bounds.

    ``truncated``: more rows existed than were kept (``max_rows`` or ``max_result_bytes``);
    ``byte_limited``: fetching stopped at ``max_result_bytes``; ``cut_cells``: how many
    cells were longer than the cell cap and were cut to it.
    """

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    truncated: bool
    cut_cells: int = 0
    byte_limited: bool = False


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(f"{name} must be an int >= 1, got {value!r}")
    return value


def _bound_connect(
    dialect: sa.Dialect, record: object, cargs: list[Any], cparams: dict[str, Any]
) -> None:
    """Give a new PostgreSQL connection the time left in the current call (libpq: >= 2 s)."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return
    seconds = max(2, math.floor(deadline - time.monotonic()))
    given = cparams.get("connect_timeout")
    if given is None or not 0 < float(given) <= seconds:
        cparams["connect_timeout"] = seconds


def _cut(value: Any, cap: int) -> tuple[Any, bool]:
    """``value`` cut to ``cap`` characters (text) or bytes (binary), and whether it was."""
    if isinstance(value, str | bytes | bytearray | memoryview) and len(value) > cap:
        cut = value[:cap]
        return (bytes(cut) if not isinstance(cut, str) else cut), True
    return value, False


def _size(value: Any) -> int:
    """Bytes a cell counts against ``max_result_bytes`` (UTF-8 for text)."""
    if value is None:
        return 0
    if isinstance(value, bytes | bytearray | memoryview):
        return len(value)
    text = value if isinstance(value, str) else str(value)
    return len(text.encode("utf-8", "surrogatepass"))


class _Watchdog:
    """Calls ``stop`` in a timer thread once ``deadline`` passes, unless the call ended."""

    def __init__(self, deadline: float, stop: Callable[[threading.Event], None]) -> None:
        self.fired = False
        self.done = threading.Event()
        self._stop = stop
        self._timer = threading.Timer(max(0.0, deadline - time.monotonic()), self._fire)
        self._timer.daemon = True

    def _fire(self) -> None:
        if not self.done.is_set():
            self.fired = True
            self._stop(self.done)

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self._timer.cancel()


def _stop_postgres(conn: Any, done: threading.Event) -> bool:
    """Cancel the running query; if the server does not end it, shut the socket down."""
    with contextlib.suppress(Exception):
        conn.cancel_safe(timeout=WATCHDOG_GRACE)
    if done.wait(WATCHDOG_GRACE):
        return False
    with (
        contextlib.suppress(OSError),
        socket.fromfd(conn.pgconn.socket, socket.AF_INET, socket.SOCK_STREAM) as sock,
    ):
        sock.shutdown(socket.SHUT_RDWR)
    return True


class ReadOnlyExecutor:
    """Runs single statements on ``engine`` read-only, bounded in rows, bytes and time.

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
        max_cell_chars: int = 65_536,
        max_result_bytes: int = 4 * 1024 * 1024,
        schema: str | None = None,
        allow_superuser: bool = False,
    ) -> None:
        self.max_rows = _positive_int("max_rows", max_rows)
        self.max_cell_chars = _positive_int("max_cell_chars", max_cell_chars)
        self.max_result_bytes = _positive_int("max_result_bytes", max_result_bytes)
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
        if name == "postgresql" and not sa.event.contains(engine, "do_connect", _bound_connect):
            sa.event.listen(engine, "do_connect", _bound_connect)
        self.engine = engine
        self.timeout_seconds = float(timeout_seconds)
        self.schema = schema
        self.allow_superuser = allow_superuser

    @property
    def dialect(self) -> str:
        """The sqlglot dialect name of the engine (``postgres`` or ``sqlite``)."""
        return SQLGLOT_DIALECTS[self.engine.dialect.name]

    @contextmanager
    def connect(self) -> Iterator[sa.Connection]:
        """A pooled connection, opened within ``timeout_seconds`` (else SqlConnectionError)."""
        token = _DEADLINE.set(time.monotonic() + self.timeout_seconds)
        try:
            try:
                conn = self.engine.connect()
            except sa.exc.SQLAlchemyError as exc:
                raise SqlConnectionError(
                    f"cannot connect to {self.engine.url!r} within timeout_seconds="
                    f"{self.timeout_seconds:g}: {getattr(exc, 'orig', None) or exc}"
                ) from exc
            with conn:
                yield conn
        finally:
            _DEADLINE.reset(token)

    def run(self, sql: str, parameters: Sequence[Any] = ()) -> QueryResult:
        """Execute one statement read-only and fetch at most ``max_rows`` rows.

        Raises :class:`SqlExecutionError` with the database's message when it refuses or
        fails the statement (a write, a timeout, a syntax error, several statements), and
        :class:`SqlConnectionError` when the database cannot be reached in time.
        """
        deadline = time.monotonic() + self.timeout_seconds
        with self.connect() as conn:
            if self.engine.dialect.name == "postgresql":
                return self._run_postgres(conn, sql, tuple(parameters), deadline)
            return self._run_sqlite(conn, sql, tuple(parameters), deadline)

    def _cell_cap(self, columns: int) -> int:
        """Characters kept of one cell: every row fits in ``max_result_bytes`` on its own."""
        return max(1, min(self.max_cell_chars, self.max_result_bytes // max(1, columns)))

    def _collect(
        self, columns: tuple[str, ...], rows: Iterable[Sequence[Any]], deadline: float
    ) -> QueryResult:
        """Keep rows until ``max_rows``, ``max_result_bytes`` or the deadline; cut cells."""
        cap = self._cell_cap(len(columns))
        kept: list[tuple[Any, ...]] = []
        size = cut_cells = 0
        truncated = byte_limited = False
        for row in rows:
            if time.monotonic() > deadline:
                raise SqlExecutionError(
                    f"fetching the rows did not finish within timeout_seconds="
                    f"{self.timeout_seconds:g} ({len(kept)} rows read)"
                )
            if len(kept) == self.max_rows:
                truncated = True
                break
            cells = [_cut(value, cap) for value in row]
            cut_cells += sum(was_cut for _, was_cut in cells)
            row_size = sum(_size(value) for value, _ in cells)
            if size + row_size > self.max_result_bytes:
                truncated = byte_limited = True
                break
            size += row_size
            kept.append(tuple(value for value, _ in cells))
        if cut_cells or byte_limited:
            logger.warning(
                "SQL result cut: %d cells over %d characters shortened%s",
                cut_cells,
                cap,
                f"; rows after the first {len(kept)} dropped (max_result_bytes="
                f"{self.max_result_bytes})"
                if byte_limited
                else "",
            )
        return QueryResult(columns, tuple(kept), truncated, cut_cells, byte_limited)

    def _run_postgres(
        self, conn: sa.Connection, sql: str, parameters: tuple[Any, ...], deadline: float
    ) -> QueryResult:
        import psycopg

        raw: Any = conn.connection.dbapi_connection
        if raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            raise SqlExecutionError("the pooled connection is inside a transaction; expected idle")
        shut = threading.Event()

        def stop(done: threading.Event) -> None:
            if _stop_postgres(raw, done):
                shut.set()

        with _Watchdog(deadline + WATCHDOG_GRACE, stop) as watchdog:
            try:
                return self._query_postgres(raw, sql, parameters, deadline)
            except psycopg.Error as exc:
                if shut.is_set():
                    raise SqlConnectionError(
                        f"PostgreSQL did not answer within timeout_seconds="
                        f"{self.timeout_seconds:g}, nor to the cancel request; the "
                        "connection was closed"
                    ) from exc
                if watchdog.fired:
                    raise SqlExecutionError(
                        f"the statement did not finish within timeout_seconds="
                        f"{self.timeout_seconds:g}: cancelled by the client ({exc})"
                    ) from exc
                raise SqlExecutionError(f"PostgreSQL refused the statement: {exc}") from exc
            finally:
                if watchdog.fired or not self._reset_postgres(raw):
                    conn.invalidate()

    @staticmethod
    def _reset_postgres(raw: Any) -> bool:
        """Release session-level advisory locks (a rollback keeps them); False if it fails."""
        import psycopg

        try:
            raw.execute("SELECT pg_advisory_unlock_all()")
            raw.rollback()
        except psycopg.Error:
            return False
        return True

    def _query_postgres(
        self, raw: Any, sql: str, parameters: tuple[Any, ...], deadline: float
    ) -> QueryResult:
        import psycopg

        remaining_ms = max(1, round((deadline - time.monotonic()) * 1000))
        timeout_ms = f"{remaining_ms}ms"
        with raw.transaction(force_rollback=True), raw.cursor() as cursor:
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
                    f"refusing to query as a superuser ({raw.info.user!r}): a read-only "
                    "transaction does not stop a superuser's COPY ... TO PROGRAM or file "
                    "functions; connect as a role with SELECT privileges only "
                    "(or pass allow_superuser=True)"
                )
            if self.schema is not None:
                cursor.execute("SELECT set_config('search_path', %s, true)", (self.schema,))
            if parameters:  # quoted by psycopg, so that the statement can be described
                sql = psycopg.ClientCursor(raw).mogrify(sql, parameters)
            columns, query = self._server_cut(raw, sql)
            # Extended protocol (one command only), one row at a time.
            with contextlib.closing(cursor.stream(query)) as rows:
                if columns is None:
                    next(rows, None)  # raises the server's refusal, if any
                    raise SqlExecutionError("the statement returned no result set (not a query)")
                return self._collect(columns, rows, deadline)

    def _server_cut(self, raw: Any, sql: str) -> tuple[tuple[str, ...] | None, str]:
        """The columns of ``sql`` and the query to run: ``sql`` wrapped so that PostgreSQL
        cuts long cells and stops after ``max_rows + 1`` rows.

        No columns when PostgreSQL does not describe ``sql`` as a query; ``sql`` itself
        when it does not accept it as a subquery (a data-modifying WITH): it then runs as
        it is, so the server's own refusal is the error, and cells are cut as they arrive.
        """
        import psycopg

        try:
            described = _describe(raw, sql)
        except psycopg.Error:
            return None, sql  # the server's error comes from running it
        if not described.nfields:
            return None, sql
        encoding = raw.info.encoding
        columns = tuple(
            described.fname(i).decode(encoding, "replace") for i in range(described.nfields)
        )
        cap = self._cell_cap(len(columns)) + 1  # one more: tells a cut cell
        names, cells = [], []
        for i in range(described.nfields):
            name, oid = f"c{i}", described.ftype(i)
            names.append(name)
            if oid in _SMALL_TYPES:
                cell = name
            elif oid in _TEXT_TYPES:
                cell = f"left({name}, {cap})"
            elif oid == _BYTEA:
                cell = f"substring({name} from 1 for {cap})"
            else:
                cell = f"left({name}::text, {cap})"
            cells.append(f"{cell} AS {_quote(columns[i])}")
        wrapped = (
            f"SELECT {', '.join(cells)} FROM (\n{sql}\n) AS ragloom_q({', '.join(names)})"
            f" LIMIT {self.max_rows + 1}"
        )
        try:
            _describe(raw, wrapped)
        except psycopg.Error:
            return columns, sql
        return columns, wrapped

    @contextmanager
    def _sqlite_guard(self, conn: sqlite3.Connection, deadline: float) -> Iterator[None]:
        attached = conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        (query_only,) = conn.execute("PRAGMA query_only").fetchone()
        (busy_ms,) = conn.execute("PRAGMA busy_timeout").fetchone()
        conn.execute("PRAGMA query_only = ON")
        # A locked database waits at most until the deadline (the progress handler does
        # not run while SQLite sleeps on a lock).
        conn.execute(f"PRAGMA busy_timeout = {max(1, round((deadline - time.monotonic()) * 1000))}")
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 1000)
        try:
            yield
        finally:
            conn.set_progress_handler(None, 0)
            if conn.in_transaction:
                conn.rollback()
            conn.execute(f"PRAGMA busy_timeout = {int(busy_ms)}")
            conn.execute(f"PRAGMA query_only = {int(query_only)}")
            conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, attached)

    def _run_sqlite(
        self, conn: sa.Connection, sql: str, parameters: tuple[Any, ...], deadline: float
    ) -> QueryResult:
        raw: Any = conn.connection.dbapi_connection
        try:
            with self._sqlite_guard(raw, deadline):
                cursor = raw.cursor()
                try:
                    cursor.execute(sql, parameters)
                    if cursor.description is None:
                        raise SqlExecutionError(
                            "the statement returned no result set (not a query)"
                        )
                    columns = tuple(str(d[0]) for d in cursor.description)
                    return self._collect(columns, cursor, deadline)
                finally:
                    cursor.close()
        except sqlite3.Error as exc:
            message = str(exc)
            if message == "interrupted":
                message = f"interrupted after the {self.timeout_seconds:g}s statement timeout"
            raise SqlExecutionError(f"SQLite refused the statement: {message}") from exc


def _describe(raw: Any, sql: str) -> Any:
    """PostgreSQL's description of ``sql`` (prepared unnamed, not run), in a savepoint so
    that a refusal leaves the transaction usable; raises the server's error."""
    import psycopg

    encoding = raw.info.encoding
    with raw.transaction():
        prepared = raw.pgconn.prepare(b"", sql.encode(encoding))
        if prepared.status != psycopg.pq.ExecStatus.COMMAND_OK:
            raise psycopg.errors.error_from_result(prepared, encoding)
        described = raw.pgconn.describe_prepared(b"")
        if described.status != psycopg.pq.ExecStatus.COMMAND_OK:
            raise psycopg.errors.error_from_result(described, encoding)
    return described


def _quote(name: str) -> str:
    """``name`` as a quoted PostgreSQL identifier."""
    return '"' + name.replace('"', '""') + '"'
