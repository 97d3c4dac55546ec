"""Fixtures for the pgvector tests: a real PostgreSQL + pgvector, one fresh table per test.

The server is started by ``bash scripts/services/pgvector.sh start`` (``scripts/test.sh``
does it); ``RAGLOOM_PG_DSN`` points the tests at another server. A missing server fails
the tests with that instruction; nothing is skipped.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg_pool import ConnectionPool

from ragloom.testkit.servers import local_service_setting, service_setting

DEFAULT_DSN = local_service_setting("RAGLOOM_PG_DSN")  # pgvector.sh's server
START_HINT = "bash scripts/services/pgvector.sh start"


def dsn() -> str:
    """The server the tests use: ``RAGLOOM_PG_DSN`` or the local test server."""
    return service_setting("RAGLOOM_PG_DSN")


def require_server(target: str) -> None:
    """Fail (not skip) with the command to run when no server answers at ``target``."""
    try:
        with psycopg.connect(target, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
        return
    except psycopg.OperationalError as exc:
        reason = str(exc).strip().splitlines()[0]
    pytest.fail(
        f"PostgreSQL with pgvector is not reachable at {target}: {reason}\n"
        f"Start it with `{START_HINT}` (from the repository root), "
        "or set RAGLOOM_PG_DSN to a PostgreSQL server with pgvector.",
        pytrace=False,
    )


@pytest.fixture(scope="session")
def server_check() -> Callable[[str], None]:
    """:func:`require_server`, for tests of the failure message (conftest is not importable
    under ``--import-mode=importlib``)."""
    return require_server


@pytest.fixture(scope="session")
def default_dsn() -> str:
    return DEFAULT_DSN


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    target = dsn()
    require_server(target)
    return target


@pytest.fixture(scope="session")
def pg_pool(pg_dsn: str) -> Iterator[ConnectionPool[Any]]:
    pool: ConnectionPool[Any] = ConnectionPool(
        pg_dsn, min_size=1, max_size=8, kwargs={"autocommit": True}, open=True, timeout=10
    )
    yield pool
    pool.close()


@pytest.fixture
def table_name(pg_dsn: str) -> Iterator[str]:
    """A fresh table name, dropped (with its staging leftovers) after the test."""
    name = f"test_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(name)))
