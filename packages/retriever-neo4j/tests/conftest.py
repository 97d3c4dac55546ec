"""The Bolt server fixture shared by the integration tests.

pytest runs with ``--import-mode=importlib``, which does not put this directory on
``sys.path``; the tests import ``neo4j_helpers`` by name, so add it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import neo4j
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from neo4j_helpers import RESET, SERVER_URL, START_HINT

from ragloom.testkit.servers import exclusive_data


@pytest.fixture(scope="session")
def driver() -> Iterator[neo4j.Driver]:
    """A driver to the test server; fails (never skips) with the command that starts it.
    The session holds the server's data lock and starts on an emptied local graph (the
    tests empty and refill its one graph); it never restarts the shared server (that
    would break another user's run)."""
    auth = None
    if user := os.environ.get("RAGLOOM_NEO4J_USER"):
        auth = (user, os.environ.get("RAGLOOM_NEO4J_PASSWORD", ""))
    with exclusive_data("RAGLOOM_NEO4J_URL", reset=RESET):
        driver = neo4j.GraphDatabase.driver(
            SERVER_URL, auth=auth, max_transaction_retry_time=2, connection_timeout=5
        )
        try:
            driver.verify_connectivity()
        except Exception as exc:  # any failure to connect: say how to start the server
            driver.close()
            pytest.fail(
                f"no Bolt server at {SERVER_URL}: {exc}\nStart it with `{START_HINT}` "
                "(from the repository root), or set RAGLOOM_NEO4J_URL.",
                pytrace=False,
            )
        with driver:
            yield driver
