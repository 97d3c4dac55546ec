"""Fixtures: the local Ray cluster of scripts/services/ray.sh, and pgvector.

Both are real servers started outside the tests: ``bash scripts/services/ray.sh start``
(a head and a worker node, processes on 127.0.0.1) and ``bash scripts/services/pgvector.sh
start``; ``RAGLOOM_RAY_ADDRESS`` and ``RAGLOOM_PG_DSN`` point the tests at others. A
server that is not running fails the tests with the command that starts it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

import ragloom
from ragloom.testkit.servers import require_server, service_setting

RAY_SETTINGS = Path(service_setting("RAGLOOM_SERVICES_DIR")) / "ray" / "driver.env"


def use_cluster_settings(path: Path) -> None:
    """Take the driver settings ray.sh wrote (those not set already) into the environment.

    They are Ray's loopback mode (without it Ray turns 127.0.0.1 into the host's routable
    address, where the cluster does not listen) and the cluster's authentication token.
    Ray reads them when it is imported: this module does not import it, and the test
    modules are imported after it.
    """
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            key, sep, value = line.partition("=")
            if sep and not key.startswith("#") and key != "RAY_ADDRESS":
                os.environ.setdefault(key, value)


use_cluster_settings(RAY_SETTINGS)

RAY_ADDRESS = service_setting("RAGLOOM_RAY_ADDRESS")
RAY_START = "bash scripts/services/ray.sh start"


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[dict[str, float]]:
    """The driver connected to the running cluster; its alive nodes' ids and CPUs.

    The workers import ragloom from where this process does (the cluster may have been
    started from another checkout): its source directories go first on their PYTHONPATH.
    """
    import ray  # after use_cluster_settings

    require_server(f"tcp://{RAY_ADDRESS}", RAY_START, variable="RAGLOOM_RAY_ADDRESS")
    sources = [str(Path(portion).parent) for portion in ragloom.__path__]
    ray.init(
        address=RAY_ADDRESS,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(sources)}},
    )
    nodes = {
        node["NodeID"]: node["Resources"].get("CPU", 0.0) for node in ray.nodes() if node["Alive"]
    }
    if len(nodes) < 2:
        ray.shutdown()
        pytest.fail(
            f"the Ray cluster at {RAY_ADDRESS} has {len(nodes)} node(s), the tests need a "
            f"head and a worker node: `{RAY_START}` starts them",
            pytrace=False,
        )
    yield nodes
    ray.shutdown()


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    target = service_setting("RAGLOOM_PG_DSN")
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
