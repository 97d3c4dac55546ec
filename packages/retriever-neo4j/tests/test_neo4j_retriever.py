"""Neo4jContentRetriever against the Bolt server: schema in the prompt, retries, rejected
writes (data intact), row limit, rows as Contents, an absent server."""

from __future__ import annotations

import neo4j
import pytest
from neo4j_helpers import SERVER_URL, count, load_documents, write

from ragloom.core.document import Document
from ragloom.core.errors import InvalidArgumentError, PromptTemplateError, RetrievalError
from ragloom.core.query import Query
from ragloom.retrievers.neo4j import CYPHER, Neo4jContentRetriever, introspect_schema
from ragloom.testkit import ScriptedChatModel

pytestmark = pytest.mark.integration

GOOD = "MATCH (d:Document) RETURN d.text AS text, d.topic AS topic ORDER BY topic"
DOCS = [Document(f"text about {t}", {"topic": t}) for t in ("alpha", "beta", "gamma")]


@pytest.fixture
def graph(driver: neo4j.Driver) -> neo4j.Driver:
    load_documents(driver, DOCS)
    write(
        driver,
        "MATCH (a:Document {topic: 'alpha'}), (b:Document {topic: 'beta'}) "
        "CREATE (a)-[:CITES {year: 2024}]->(b)",
    )
    return driver


def snapshot(driver: neo4j.Driver) -> list[tuple[str, str]]:
    records, _, _ = driver.execute_query(
        "MATCH (d:Document) RETURN d.text AS text, d.topic AS topic ORDER BY topic",
        routing_=neo4j.RoutingControl.READ,
    )
    return [(r["text"], r["topic"]) for r in records]


def test_schema_is_introspected_into_the_prompt(graph: neo4j.Driver) -> None:
    schema = introspect_schema(graph)
    assert schema.node_properties == {"Document": {"text": "STRING", "topic": "STRING"}}
    assert schema.relationship_properties == {"CITES": {"year": "INTEGER"}}
    assert list(schema.patterns) == [("Document", "CITES", "Document")]
    model = ScriptedChatModel([GOOD])
    retriever = Neo4jContentRetriever(
        graph, model, examples=[("Which topics?", "MATCH (d:Document) RETURN d.topic")]
    )
    retriever.retrieve(Query("list the documents"))
    prompt = model.prompts[0]
    for part in (
        "(:Document {text: STRING, topic: STRING})",
        "[:CITES {year: INTEGER}]",
        "(:Document)-[:CITES]->(:Document)",
        "Example question: Which topics?",
        "MATCH (d:Document) RETURN d.topic",
        "Question: list the documents",
    ):
        assert part in prompt


def test_rows_become_contents(graph: neo4j.Driver) -> None:
    retriever = Neo4jContentRetriever(graph, ScriptedChatModel([f"```cypher\n{GOOD}\n```"]))
    contents = retriever.retrieve(Query("all documents"))
    assert [c.text for c in contents] == [
        f"text: text about {t}\ntopic: {t}" for t in ("alpha", "beta", "gamma")
    ]
    assert contents[0].text_segment.metadata == {"text": "text about alpha", "topic": "alpha"}
    assert contents[0].metadata[CYPHER] == GOOD


def test_nodes_become_their_properties(graph: neo4j.Driver) -> None:
    cypher = "MATCH (d:Document {topic: 'beta'}) RETURN d"
    contents = Neo4jContentRetriever(graph, ScriptedChatModel([cypher])).retrieve(Query("b"))
    assert contents[0].text_segment.metadata == {"d.text": "text about beta", "d.topic": "beta"}


def test_a_failing_query_is_fed_back_and_retried(graph: neo4j.Driver) -> None:
    model = ScriptedChatModel(["MATCH (d:Document RETURN d.text", GOOD])
    # Its own driver: FalkorDB's Bolt listener stalls a connection that saw a failure
    # until that connection closes (see the README).
    with neo4j.GraphDatabase.driver(SERVER_URL, auth=None) as own:
        contents = Neo4jContentRetriever(own, model).retrieve(Query("all documents"))
    assert len(contents) == 3
    assert len(model.requests) == 2
    retry = model.requests[1].messages
    assert retry[1].text == "MATCH (d:Document RETURN d.text"  # the model's own answer
    assert "That query failed" in retry[2].text


@pytest.mark.parametrize(
    "attack",
    [
        "MATCH (n) DETACH DELETE n",
        "MATCH (d:Document) SET d.text = 'owned' RETURN d",
        "MATCH (d:Document) REMOVE d.topic RETURN d",
        "CREATE (:Document {text: 'planted', topic: 'x'})",
        "MERGE (:Document {text: 'planted', topic: 'x'})",
        "MATCH (d:Document) RETURN d.text; MATCH (n) DETACH DELETE n",
        "MATCH (d:Document) RETURN d.text /* */ DELETE d",
        "CALL apoc.periodic.iterate('MATCH (n) RETURN n', 'DETACH DELETE n', {})",
        "LOAD CSV FROM 'file:///etc/passwd' AS row CREATE (:Leak {line: row})",
        "MATCH (d) CALL { WITH d DETACH DELETE d } IN TRANSACTIONS RETURN 1",
    ],
)
def test_writes_are_rejected_and_data_stays_intact(graph: neo4j.Driver, attack: str) -> None:
    before = snapshot(graph)
    nodes = count(graph)
    model = ScriptedChatModel([attack, attack])
    with pytest.raises(RetrievalError, match="no working Cypher after 2 attempt"):
        Neo4jContentRetriever(graph, model, max_retries=1).retrieve(Query("drop it all"))
    assert "not allowed" in model.requests[1].messages[2].text  # the model is told why
    assert snapshot(graph) == before
    assert count(graph) == nodes


def test_row_limit(graph: neo4j.Driver) -> None:
    retriever = Neo4jContentRetriever(graph, ScriptedChatModel([GOOD]), max_rows=2)
    assert [c.text_segment.metadata["topic"] for c in retriever.retrieve(Query("q"))] == [
        "alpha",
        "beta",
    ]


def test_no_rows_is_an_empty_list(graph: neo4j.Driver) -> None:
    cypher = "MATCH (d:Document {topic: 'none'}) RETURN d.text AS text"
    assert Neo4jContentRetriever(graph, ScriptedChatModel([cypher])).retrieve(Query("q")) == []


def test_absent_server_is_a_retrieval_error_without_retries() -> None:
    driver = neo4j.GraphDatabase.driver(
        "bolt://127.0.0.1:1", auth=None, max_transaction_retry_time=0, connection_timeout=2
    )
    model = ScriptedChatModel([GOOD, GOOD, GOOD])
    retriever = Neo4jContentRetriever(driver, model, schema="(:Document {text: STRING})")
    with pytest.raises(RetrievalError, match="Neo4j driver error"):
        retriever.retrieve(Query("q"))
    assert len(model.requests) == 1
    with pytest.raises(RetrievalError, match="cannot read the graph schema"):
        _ = Neo4jContentRetriever(driver, model).schema
    driver.close()


def test_bad_settings(driver: neo4j.Driver) -> None:
    model = ScriptedChatModel([])
    for settings in ({"max_rows": 0}, {"max_retries": -1}, {"timeout": 0}, {"max_rows": True}):
        with pytest.raises(InvalidArgumentError):
            Neo4jContentRetriever(driver, model, **settings)  # type: ignore[arg-type]
    with pytest.raises(PromptTemplateError, match="question"):
        Neo4jContentRetriever(driver, model, prompt_template="{schema} only")
