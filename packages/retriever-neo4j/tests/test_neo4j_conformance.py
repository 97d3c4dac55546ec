"""Neo4jContentRetriever passes the ContentRetrieverSuite unchanged, over a real Bolt server.

The chat model is the testkit's ScriptedChatModel writing a keyword-ranking Cypher query;
the retriever's prompt, Cypher check, READ transaction and row mapping are the real ones.
"""

from __future__ import annotations

import neo4j
import pytest
from neo4j_helpers import keyword_cypher, load_documents

from ragloom.core.document import Document
from ragloom.retrievers.neo4j import Neo4jContentRetriever
from ragloom.testkit import ContentRetrieverSuite, ScriptedChatModel

pytestmark = pytest.mark.integration


class TestNeo4jConformance(ContentRetrieverSuite):
    @pytest.fixture
    def retriever(self, driver: neo4j.Driver, corpus: list[Document]) -> Neo4jContentRetriever:
        """The suite's corpus as (:Document {text, topic}) nodes in an emptied graph."""
        load_documents(driver, corpus)
        return Neo4jContentRetriever(driver, ScriptedChatModel(keyword_cypher))
