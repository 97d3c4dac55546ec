"""Unit tests of Cypher extraction and the read-only check (no server)."""

from __future__ import annotations

import pytest

from ragloom.core.errors import RetrievalError
from ragloom.retrievers.neo4j import (
    UnsafeCypherError,
    bound_rows,
    check_range_sizes,
    check_read_only,
    extract_cypher,
)


@pytest.mark.parametrize(
    ("reply", "cypher"),
    [
        ("MATCH (n) RETURN n", "MATCH (n) RETURN n"),
        ("```cypher\nMATCH (n) RETURN n;\n```", "MATCH (n) RETURN n"),
        ("Here it is:\n```\nMATCH (n)\nRETURN n\n```\nDone.", "MATCH (n)\nRETURN n"),
        ("```Cypher MATCH (n) RETURN n```", "MATCH (n) RETURN n"),
    ],
)
def test_extract_cypher(reply: str, cypher: str) -> None:
    assert extract_cypher(reply) == cypher


def test_empty_reply_is_an_error() -> None:
    with pytest.raises(RetrievalError, match="no Cypher"):
        extract_cypher("```cypher\n```")


@pytest.mark.parametrize(
    "cypher",
    [
        "MATCH (d:Document) WHERE d.text CONTAINS 'DELETE me; SET x' RETURN d.text",
        "MATCH (d:`SET`) RETURN d",
        'MATCH (p:Person {name: "Merge"}) RETURN p.name AS created',
        "MATCH (n) RETURN n // DELETE in a comment",
        "CALL db.labels()",
        "MATCH (n) WITH n.settings AS reset RETURN reset",
    ],
)
def test_read_queries_pass(cypher: str) -> None:
    check_read_only(cypher)


@pytest.mark.parametrize(
    ("cypher", "reason"),
    [
        ("CREATE (:X)", "CREATE"),
        ("MATCH (n) MERGE (n)-[:R]->(:Y)", "MERGE"),
        ("MATCH (n) DETACH DELETE n", "DELETE|DETACH"),
        ("MATCH (n) SET n.x = 1", "SET"),
        ("MATCH (n) REMOVE n.x", "REMOVE"),
        ("match (n) delete n", "DELETE"),
        ("MATCH (n) RETURN n /* hidden */ DELETE n", "DELETE"),
        ("MATCH (n) RETURN n //\nDELETE n", "DELETE"),
        ("MATCH (n) FOREACH (x IN [1] | CREATE (:Y))", "CREATE|FOREACH"),
        ("LOAD CSV FROM 'file:///etc/passwd' AS row RETURN row", "LOAD CSV"),
        ("CALL apoc.periodic.iterate('MATCH (n) RETURN n', 'DELETE n', {})", "apoc"),
        ("CALL apoc.cypher.runWrite('CREATE (:X)', {})", "apoc"),
        ("CALL dbms.killQueries([])", "dbms"),
        ("CALL db.createLabel('X')", "db.createLabel"),
        ("MATCH (n) CALL { WITH n RETURN n } RETURN n", "subqueries"),
        ("MATCH (n) RETURN n; MATCH (m) DETACH DELETE m", "DELETE|more than one"),
        ("MATCH (n) RETURN n; MATCH (m) RETURN m", "more than one"),
        ("SHOW DATABASES", "SHOW"),
        ("DROP INDEX idx", "DROP"),
        ("MATCH (n) WHERE n.x = 'unterminated RETURN n", "unterminated"),
    ],
)
def test_writes_and_admin_are_rejected(cypher: str, reason: str) -> None:
    with pytest.raises(UnsafeCypherError, match=reason):
        check_read_only(cypher)


@pytest.mark.parametrize(
    "cypher",
    [
        "MATCH (n) RETURN n.set",
        "MATCH (n) RETURN n.delete AS d, n.`create` AS c",
        "RETURN {set: 1, merge: 2} AS m",
        "MATCH (n:Person) WHERE n.name = 'x\\'; DELETE n' RETURN n",
        "CALL `db`.`labels`() YIELD label RETURN label",
        "RETURN date.truncate('day', date()) AS d",
    ],
)
def test_keywords_used_as_names_pass(cypher: str) -> None:
    check_read_only(cypher)


@pytest.mark.parametrize(
    ("cypher", "reason"),
    [
        ("CALL `db.idx.fulltext.createNodeIndex`('Document','text')", "db.idx.fulltext.create"),
        ("CALL `apoc`.`load`.`json`('file:///etc/passwd')", "procedure apoc.load.json"),
        ("CALL `dbms.security.createUser`('u', 'p', false)", "dbms.security.createUser"),
        ("MATCH (n) RETURN n UNION CALL `db.idx.fulltext.drop`('D')", "db.idx.fulltext.drop"),
        ("CALL `apo``c`.x()", "procedure apo`c.x"),
        ("RETURN apoc.text.join(['a'], '') AS j", "function apoc.text.join"),
        ("USING PERIODIC COMMIT LOAD CSV FROM 'f' AS r RETURN r", "USING"),
        ("MATCH (n) CALL (n) { DELETE n } RETURN 1", "subqueries"),
        ("MATCH (n) RETURN n `unterminated", "unterminated"),
        ("MATCH (n) RETURN n /* unterminated", "unterminated"),
    ],
)
def test_backticks_and_hidden_writes_are_rejected(cypher: str, reason: str) -> None:
    with pytest.raises(UnsafeCypherError, match=reason):
        check_read_only(cypher)


@pytest.mark.parametrize(
    ("cypher", "bounded"),
    [
        ("MATCH (d) RETURN d.t ORDER BY d.t", "MATCH (d) RETURN d.t ORDER BY d.t LIMIT 5"),
        ("MATCH (d) RETURN d LIMIT 100 // all", "MATCH (d) RETURN d LIMIT 5 // all"),
        ("MATCH (d) RETURN d SKIP 1 LIMIT 2", "MATCH (d) RETURN d SKIP 1 LIMIT 2"),
        (
            "MATCH (d) WHERE EXISTS { MATCH (d)--() RETURN 1 } RETURN d UNION RETURN 1 AS d",
            "MATCH (d) WHERE EXISTS { MATCH (d)--() RETURN 1 } RETURN d LIMIT 5 UNION "
            "RETURN 1 AS d LIMIT 5",
        ),
        ("CALL db.labels()", "CALL db.labels()"),
    ],
)
def test_bound_rows(cypher: str, bounded: str) -> None:
    assert bound_rows(cypher, 5) == bounded


def test_range_sizes() -> None:
    check_range_sizes("UNWIND range(1, 1000000) AS x RETURN x")
    check_range_sizes("UNWIND range(1, toInteger('9999999999')) AS x RETURN x")  # computed
    with pytest.raises(UnsafeCypherError, match="range\\(\\) of 500000001 elements"):
        check_range_sizes("UNWIND range(0, 1000000000, 2) AS x RETURN x")
