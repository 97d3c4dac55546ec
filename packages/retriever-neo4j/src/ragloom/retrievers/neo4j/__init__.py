"""The ragloom ContentRetriever over a Neo4j graph: text-to-Cypher through a ChatModel."""

from ragloom.retrievers.neo4j.cypher import (
    MAX_RANGE,
    READ_PROCEDURES,
    UnsafeCypherError,
    bound_rows,
    check_range_sizes,
    check_read_only,
    extract_cypher,
    tokenize,
)
from ragloom.retrievers.neo4j.retriever import (
    CYPHER,
    DEFAULT_PROMPT_TEMPLATE,
    CypherDeadlineError,
    Neo4jContentRetriever,
)
from ragloom.retrievers.neo4j.schema import GraphSchema, introspect_schema

__all__ = [
    "CYPHER",
    "DEFAULT_PROMPT_TEMPLATE",
    "MAX_RANGE",
    "READ_PROCEDURES",
    "CypherDeadlineError",
    "GraphSchema",
    "Neo4jContentRetriever",
    "UnsafeCypherError",
    "bound_rows",
    "check_range_sizes",
    "check_read_only",
    "extract_cypher",
    "introspect_schema",
    "tokenize",
]
