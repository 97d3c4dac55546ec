"""scripts/services/neo4j.sh bounds FalkorDB's memory: a hostile computed range() ends the
server (an allocation failure under its address-space limit), not the machine; and its
server keeps answering new connections after drivers close theirs (epoll_readd.c)."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import neo4j
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "services" / "neo4j.sh"
MEMORY_MB = 1024


def free_port() -> int:
    """A free port below 32768 (FalkorDB's limit)."""
    for port in range(31000, 32000):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free port in 31000..32000")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A FalkorDB of neo4j.sh under a 1 GB address-space limit: (bolt URL, its files)."""
    port = free_port()
    environment = {
        **os.environ,
        "RAGLOOM_NEO4J_PORT": str(port),
        "RAGLOOM_SERVICES_DIR": str(tmp_path),
        "RAGLOOM_NEO4J_MEMORY_MB": str(MEMORY_MB),
    }
    started = service(environment, "start")
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        yield f"bolt://127.0.0.1:{port}", tmp_path / "neo4j"
    finally:
        service(environment, "stop")


def service(environment: dict[str, str], action: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), action],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_computed_range_ends_the_capped_server(server: tuple[str, Path]) -> None:
    url, files = server
    pid = int((files / "neo4j.pid").read_text())
    limits = Path(f"/proc/{pid}/limits").read_text()
    assert f"Max address space         {MEMORY_MB * 1024 * 1024}" in limits
    with neo4j.GraphDatabase.driver(url, connection_timeout=5) as driver:
        driver.verify_connectivity()
        failures = (neo4j.exceptions.DriverError, neo4j.exceptions.Neo4jError)
        with driver.session() as session, pytest.raises(failures):
            # 10^8 elements of 16 bytes: 1.6 GB, past the 1 GB limit (uncapped it takes it)
            session.run("WITH 100000000 AS n RETURN size(range(1, n)) AS s").consume()
    log = (files / "neo4j.log").read_text(errors="replace")
    assert "Out Of Memory allocating" in log


def test_connections_after_closed_ones_are_answered(server: tuple[str, Path]) -> None:
    """Each driver's close sends GOODBYE; without epoll_readd.so the next connection, given
    the closed one's fd number, never had its handshake answered (a 5 s timeout each time)."""
    url, _ = server
    for attempt in range(4):
        with neo4j.GraphDatabase.driver(
            url, connection_timeout=3, max_transaction_retry_time=0
        ) as driver:
            records, _, _ = driver.execute_query(
                f"RETURN {attempt} AS n", routing_=neo4j.RoutingControl.READ
            )
            assert records[0]["n"] == attempt
