"""Helpers of the integration tests: the server address, writes, a keyword-Cypher model."""

from __future__ import annotations

import re
from collections.abc import Sequence

import neo4j

from ragloom.core.chat.messages import ChatMessage
from ragloom.core.document import Document
from ragloom.testkit.servers import service_setting

SERVER_URL = service_setting("RAGLOOM_NEO4J_URL")
START_HINT = "bash scripts/services/neo4j.sh start"
RESET = "bash scripts/services/neo4j.sh reset"  # run under the data lock (conftest.py)


def write(driver: neo4j.Driver, cypher: str) -> None:
    """Run a write query in a managed WRITE transaction."""
    driver.execute_query(cypher, routing_=neo4j.RoutingControl.WRITE)


def literal(text: str) -> str:
    """``text`` as a Cypher string literal (FalkorDB's Bolt listener takes no parameters)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def load_documents(driver: neo4j.Driver, documents: Sequence[Document]) -> None:
    """An emptied graph holding ``documents`` as (:Document {text, topic}) nodes."""
    write(driver, "MATCH (n) DETACH DELETE n")
    for document in documents:
        topic = str(document.metadata["topic"])
        text = literal(document.text)
        write(driver, f"CREATE (:Document {{text: {text}, topic: {literal(topic)}}})")


def count(driver: neo4j.Driver, cypher: str = "MATCH (n) RETURN count(n) AS c") -> int:
    records, _, _ = driver.execute_query(cypher, routing_=neo4j.RoutingControl.READ)
    return int(records[0]["c"])


def question_of(messages: Sequence[ChatMessage]) -> str:
    """The question in the retriever's first prompt."""
    return messages[0].text.rsplit("Question: ", 1)[1]


def keyword_cypher(messages: Sequence[ChatMessage]) -> str:
    """What a model might write: documents ranked by how many question words they contain."""
    words = sorted({w for w in re.findall(r"[a-z]+", question_of(messages).lower()) if len(w) > 3})
    listed = ", ".join(f"'{w}'" for w in words)
    return (
        "```cypher\n"
        f"WITH [{listed}] AS words MATCH (d:Document) "
        "WITH d, size([w IN words WHERE toLower(d.text) CONTAINS w]) AS hits "
        "WHERE hits > 0 RETURN d.text AS text, d.topic AS topic ORDER BY hits DESC, topic\n"
        "```"
    )
