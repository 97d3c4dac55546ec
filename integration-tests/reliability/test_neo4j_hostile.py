"""The Neo4j retriever against hostile Cypher (issue 32, items 1 and 5), on the Bolt test
server (``bash scripts/services/neo4j.sh start``): each bypass of the old read-only check
is refused with the data left intact, and each query that held the caller past its
``timeout`` (or crashed it with a raw driver error) is now a ``RetrievalError`` in time."""

from __future__ import annotations

import time
from collections.abc import Iterator

import neo4j
import pytest

from ragloom.core.errors import RetrievalError
from ragloom.core.query import Query
from ragloom.retrievers.neo4j import CypherDeadlineError, Neo4jContentRetriever
from ragloom.testkit import ScriptedChatModel
from ragloom.testkit.servers import exclusive_data, require_server, service_setting

pytestmark = pytest.mark.integration

URL = service_setting("RAGLOOM_NEO4J_URL")
START = "bash scripts/services/neo4j.sh start"
RESET = "bash scripts/services/neo4j.sh reset"
TIMEOUT = 5.0
BOUND = TIMEOUT + 1.0  # the deadline, plus the worker's hand-over


@pytest.fixture(scope="module")
def driver() -> Iterator[neo4j.Driver]:
    """A driver to the test server, holding its data lock (the tests empty its one graph;
    the shared server is never restarted); fails, never skips, when it is down."""
    require_server(URL.replace("bolt://", "http://"), START, variable="RAGLOOM_NEO4J_URL")
    with (
        exclusive_data("RAGLOOM_NEO4J_URL", reset=RESET),
        neo4j.GraphDatabase.driver(URL, auth=None, connection_timeout=5) as own,
    ):
        own.execute_query("MATCH (n) DETACH DELETE n", routing_=neo4j.RoutingControl.WRITE)
        own.execute_query(
            "CREATE (:Document {text: 'kept', topic: 'a'})", routing_=neo4j.RoutingControl.WRITE
        )
        yield own


def nodes(driver: neo4j.Driver) -> list[str]:
    records, _, _ = driver.execute_query(
        "MATCH (n) RETURN n.text AS t ORDER BY t", routing_=neo4j.RoutingControl.READ
    )
    return [r["t"] for r in records]


def retriever(driver: neo4j.Driver, cypher: str) -> Neo4jContentRetriever:
    model = ScriptedChatModel([cypher])
    return Neo4jContentRetriever(
        driver, model, schema="(:Document)", timeout=TIMEOUT, max_retries=0
    )


@pytest.mark.parametrize(
    "attack",
    [
        "CALL `db.idx.fulltext.createNodeIndex`('Document', 'text')",
        "CALL `db.idx.fulltext.drop`('Document')",
        "CALL `apoc.load.json`('file:///etc/passwd')",
        "CALL `apoc`.`load`.`json`('file:///etc/passwd')",
        "CALL `dbms.security.createUser`('eve', 'secret', false)",
        "MATCH (d:Document) RETURN d.text AS t UNION CALL `db.idx.fulltext.drop`('Document')",
        "CALL db . `idx` . fulltext . createNodeIndex('Document', 'text')",
        "MATCH (d) RETURN d.text AS t UNION CREATE (:Document {text: 'planted'}) RETURN 1 AS t",
    ],
)
def test_backtick_procedure_bypasses_are_refused(driver: neo4j.Driver, attack: str) -> None:
    before = nodes(driver)
    with pytest.raises(RetrievalError, match="not allowed"):
        retriever(driver, attack).retrieve(Query("q"))
    assert nodes(driver) == before


@pytest.mark.parametrize(
    ("cypher", "text"),
    [
        ("MATCH (n:Document) RETURN n.set AS x", "x: None"),
        ("MATCH (n:Document) RETURN {set: 1, delete: 2} AS m", "m: {'set': 1, 'delete': 2}"),
    ],
)
def test_keywords_as_names_are_read(driver: neo4j.Driver, cypher: str, text: str) -> None:
    assert [c.text for c in retriever(driver, cypher).retrieve(Query("q"))] == [text]


def test_the_server_applies_the_row_limit(driver: neo4j.Driver) -> None:
    """A million rows (0.4 s to build) come back as ``max_rows``, in bounded time."""
    model = ScriptedChatModel(["UNWIND range(1, 1000000) AS x RETURN x"])
    started = time.monotonic()
    contents = Neo4jContentRetriever(driver, model, schema="x", max_rows=3).retrieve(Query("q"))
    assert [c.text for c in contents] == ["x: 1", "x: 2", "x: 3"]
    assert time.monotonic() - started < 3.0


@pytest.mark.parametrize(
    ("cypher", "error"),
    [
        ("UNWIND range(1,1000000000) AS x RETURN x", "range\\(\\) of 1000000000 elements"),
        ("RETURN range(1, 20000000)", "range\\(\\) of 20000000 elements"),
        # FalkorDB writes a list of > 65535 items the driver cannot decode (a raw ValueError)
        ("RETURN range(1, 100000)", "could not read the answer to 'RETURN range"),
    ],
)
def test_unbounded_results_are_retrieval_errors(
    driver: neo4j.Driver, cypher: str, error: str
) -> None:
    started = time.monotonic()
    with pytest.raises(RetrievalError, match=error):
        retriever(driver, cypher).retrieve(Query("q"))
    assert time.monotonic() - started < BOUND


def test_a_query_past_the_deadline_ends_the_call(driver: neo4j.Driver) -> None:
    """The server never answers this one (FalkorDB); the watchdog ends the call at the
    deadline, says the server ignored its timeout, and the next query still works."""
    cypher = "RETURN reduce(s='x', i IN range(1,27) | s+s)"
    started = time.monotonic()
    with (
        pytest.warns(RuntimeWarning, match="did not end Cypher query"),
        pytest.raises(CypherDeadlineError, match="passed the 5.0 s deadline") as caught,
    ):
        retriever(driver, cypher).retrieve(Query("q"))
    elapsed = time.monotonic() - started
    assert TIMEOUT - 0.5 < elapsed < BOUND
    assert cypher in str(caught.value)
    assert nodes(driver) == ["kept"]
