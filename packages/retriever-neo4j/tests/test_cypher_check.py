"""Unit tests of Cypher extraction and the read-only check (no server)."""

from __future__ import annotations

import pytest

from ragloom.core.errors import RetrievalError
from ragloom.retrievers.neo4j import UnsafeCypherError, check_read_only, extract_cypher


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
