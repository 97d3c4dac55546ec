"""SQL retriever under hostile SQL and servers (issue 32, items 3, 6 and 9).

Session state left in a pooled connection (an advisory lock), a server that accepts and
never answers, a call held past its deadline by huge cells, and results bounded in rows
but not in bytes. PostgreSQL is the server of ``bash scripts/services/pgvector.sh start``
(or ``RAGLOOM_PG_DSN``); the PostgreSQL tests fail, never skip, when it is down.
"""

from __future__ import annotations

import gc
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psutil
import psycopg
import pytest
import sqlalchemy as sa
from psycopg import sql

from ragloom.core.query import Query
from ragloom.retrievers.sql import SqlDatabaseContentRetriever, SqlExecutionError, UnsafeSqlError
from ragloom.testkit import ScriptedChatModel
from ragloom.testkit.servers import require_server, service_setting

PG_DSN = service_setting("RAGLOOM_PG_DSN")
START = "bash scripts/services/pgvector.sh start"
MB = 1024 * 1024


@contextmanager
def peak_rss_growth() -> Iterator[list[int]]:
    """``[bytes]``: the peak RSS growth of this process during the block (psutil, 2 ms)."""
    gc.collect()
    process = psutil.Process()
    base = process.memory_info().rss
    peak = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], process.memory_info().rss - base)
            stop.wait(0.002)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield peak
    finally:
        stop.set()
        sampler.join()


@pytest.fixture(scope="module")
def pg_reader() -> Iterator[str]:
    """A DSN of a fresh non-superuser role (the retriever refuses superusers)."""
    require_server(PG_DSN.replace("postgresql://", "http://", 1), START, variable="RAGLOOM_PG_DSN")
    role = f"sqlhostile_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_DSN, autocommit=True, connect_timeout=3) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER").format(sql.Identifier(role)))
    user_at = PG_DSN.split("://", 1)[1].split("@", 1)[1]
    yield f"postgresql+psycopg://{role}@{user_at}"
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,)
        )
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


@pytest.fixture
def pg_engine(pg_reader: str) -> Iterator[sa.Engine]:
    engine = sa.create_engine(pg_reader, pool_size=1, max_overflow=0)
    yield engine
    engine.dispose()


def advisory_locks_held(key: int) -> int:
    with psycopg.connect(PG_DSN) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = %s", (key,)
        ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.integration
@pytest.mark.parametrize(
    "reply",
    [
        "SELECT pg_advisory_lock(4242)",
        "SELECT pg_catalog.pg_advisory_lock(4242)",
        'SELECT "pg_try_advisory_lock"(4242)',
        "SELECT 1 AS x WHERE pg_advisory_lock_shared(4242) IS NOT NULL",
        "SELECT set_config('search_path', 'elsewhere', false)",
        "SELECT pg_terminate_backend(pg_backend_pid())",
    ],
)
def test_pg_lock_and_session_functions_are_refused(pg_engine: sa.Engine, reply: str) -> None:
    retriever = SqlDatabaseContentRetriever(pg_engine, ScriptedChatModel([reply]), sample_rows=0)
    with pytest.raises(UnsafeSqlError, match=r"function .*\(\) is not allowed"):
        retriever.retrieve(Query("lock something"))
    assert advisory_locks_held(4242) == 0


@pytest.mark.integration
def test_pg_session_lock_is_released_before_the_connection_is_pooled(
    pg_engine: sa.Engine,
) -> None:
    """Past the sqlglot check (run directly), the lock is still not left behind."""
    retriever = SqlDatabaseContentRetriever(pg_engine, ScriptedChatModel())
    assert retriever.executor.run("SELECT pg_advisory_lock(4242) IS NULL AS x").rows == ((False,),)
    assert advisory_locks_held(4242) == 0
    # the pooled connection is still usable
    assert retriever.executor.run("SELECT 2 AS y").rows == ((2,),)


@contextmanager
def silent_server() -> Iterator[int]:
    """The port of a TCP server that accepts connections and never sends a byte."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for conn in accepted:
            conn.close()
        listener.close()


def test_pg_server_that_never_answers_fails_within_the_timeout() -> None:
    outcome: list[BaseException | None] = []
    with silent_server() as port:
        engine = sa.create_engine(f"postgresql+psycopg://reader@127.0.0.1:{port}/shop")
        retriever = SqlDatabaseContentRetriever(
            engine, ScriptedChatModel(["SELECT 1"]), timeout_seconds=2
        )

        def call() -> None:
            try:
                retriever.retrieve(Query("anything"))
            except BaseException as exc:  # handed to the test thread
                outcome.append(exc)
            else:
                outcome.append(None)

        started = time.monotonic()
        worker = threading.Thread(target=call, daemon=True)
        worker.start()
        worker.join(6)
        elapsed = time.monotonic() - started
    assert not worker.is_alive(), "retrieve() still waiting for a silent server after 6 s"
    [error] = outcome
    assert isinstance(error, SqlExecutionError)
    assert "timeout_seconds=2" in str(error)
    assert f":{port}/" in str(error)
    assert elapsed < 3.0, elapsed


@pytest.mark.integration
def test_pg_huge_cells_are_cut_by_the_server(pg_engine: sa.Engine) -> None:
    """60 cells of 10 MB: the client never holds them (it held all 600 MB before)."""
    reply = "SELECT i, repeat('x', 10000000) AS body FROM generate_series(1, 60) AS i"
    retriever = SqlDatabaseContentRetriever(
        pg_engine, ScriptedChatModel([reply]), content_per_row=True, timeout_seconds=30
    )
    with peak_rss_growth() as peak:
        contents = retriever.retrieve(Query("bodies"))
    assert len(contents) == 60
    assert contents[0].metadata["cut_cells"] == 60
    assert contents[0].text_segment.metadata["body"] == "x" * 65_536
    assert peak[0] < 40 * MB, f"peak RSS growth {peak[0] / MB:.0f} MB"


@pytest.mark.integration
def test_pg_byte_budget_stops_fetching(pg_engine: sa.Engine) -> None:
    reply = "SELECT i, repeat('y', 100000) AS body FROM generate_series(1, 60) AS i ORDER BY i"
    retriever = SqlDatabaseContentRetriever(
        pg_engine, ScriptedChatModel([reply]), max_result_bytes=MB
    )
    [content] = retriever.retrieve(Query("bodies"))
    assert content.metadata["row_count"] == 15  # 15 rows of 65,538 bytes fit in 1 MiB
    assert content.metadata["truncated"] is True
    assert content.metadata["cut_cells"] == 16  # the 16th row was cut, then did not fit
    assert content.text.splitlines()[-1] == "(only the first 15 rows: the result's byte limit)"


def sqlite_huge(megabytes: int) -> str:
    """101 rows of ``megabytes`` MB cells, built by SQLite itself (no file); each cell
    depends on its row, so SQLite builds every one (a constant is built once)."""
    return (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 101)"
        f" SELECT i, replace(hex(zeroblob({megabytes * 500_000} + i)), '0', 'x') AS body FROM n"
    )


def test_sqlite_huge_cells_stay_within_the_byte_budget() -> None:
    retriever = SqlDatabaseContentRetriever(
        "sqlite://", ScriptedChatModel([sqlite_huge(4)]), timeout_seconds=60
    )
    with peak_rss_growth() as peak:
        [content] = retriever.retrieve(Query("bodies"))
    # 64 rows of 65,536 + 1-3 bytes fit in 4 MiB
    assert content.metadata["row_count"] == 63
    assert content.metadata["truncated"] is True
    assert content.metadata["cut_cells"] == 64
    # one row at a time (SQLite's values and Python's copy), never 404 MB
    assert peak[0] < 64 * MB, f"peak RSS growth {peak[0] / MB:.0f} MB"


def test_sqlite_deadline_covers_fetching_huge_cells() -> None:
    """101 rows of 16 MB take SQLite about as many steps as one progress-handler period
    (1000), so the deadline is checked between rows too; before, the rows came back past
    the deadline. A row's own cost (one SQLite step and its copy) cannot be interrupted."""
    retriever = SqlDatabaseContentRetriever(
        "sqlite://", ScriptedChatModel(), timeout_seconds=0.2, max_result_bytes=64 * MB
    )
    started = time.monotonic()
    with pytest.raises(SqlExecutionError, match=r"did not finish within timeout_seconds=0\.2"):
        retriever.executor.run(sqlite_huge(16))
    assert time.monotonic() - started < 0.7
