"""Fixtures: one local Ray cluster per session (processes on this machine) and pgvector.

pgvector is started by ``bash scripts/services/pgvector.sh start``; ``RAGLOOM_PG_DSN``
points the tests at another server. A missing server fails the tests with that command.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import psycopg
import pytest
import ray
from psycopg import sql

DEFAULT_DSN = (
    f"postgresql://postgres@127.0.0.1:{os.environ.get('RAGLOOM_PG_PORT', '55433')}/postgres"
)


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[None]:
    """A local Ray cluster on 2 CPUs, started once: its startup cost is paid per session."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield
    ray.shutdown()


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    target = os.environ.get("RAGLOOM_PG_DSN", DEFAULT_DSN)
    try:
        with psycopg.connect(target, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError as exc:
        pytest.fail(
            f"PostgreSQL with pgvector is not reachable at {target}: {exc}\n"
            "Start it with `bash scripts/services/pgvector.sh start`, "
            "or set RAGLOOM_PG_DSN to a PostgreSQL server with pgvector.",
            pytrace=False,
        )
    return target


@pytest.fixture
def table_name(pg_dsn: str) -> Iterator[str]:
    """A fresh table name, dropped after the test."""
    name = f"test_ray_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(name)))
