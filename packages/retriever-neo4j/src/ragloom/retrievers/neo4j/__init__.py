"""The ragloom ContentRetriever over a Neo4j graph: text-to-Cypher through a ChatModel."""

from ragloom.retrievers.neo4j.cypher import UnsafeCypherError, check_read_only, extract_cypher
from ragloom.retrievers.neo4j.retriever import (
    CYPHER,
    DEFAULT_PROMPT_TEMPLATE,
    Neo4jContentRetriever,
)
from ragloom.retrievers.neo4j.schema import GraphSchema, introspect_schema

__all__ = [
    "CYPHER",
    "DEFAULT_PROMPT_TEMPLATE",
    "GraphSchema",
    "Neo4jContentRetriever",
    "UnsafeCypherError",
    "check_read_only",
    "extract_cypher",
    "introspect_schema",
]
