"""AzureAiSearchContentRetriever passes the testkit suites unchanged, on a real server."""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

import pytest

from ragloom.core.document import Document
from ragloom.retrievers.azure_ai_search import AzureAiSearchContentRetriever
from ragloom.testkit import ContentRetrieverSuite

pytestmark = pytest.mark.integration

SERVER_URL = os.environ.get("RAGLOOM_AZURE_AI_SEARCH_URL", "http://127.0.0.1:20539")
START_HINT = "bash scripts/services/azure-ai-search.sh start"


@pytest.fixture(scope="session")
def server_url() -> str:
    """The server's URL; fails (never skips) with the command that starts it."""
    address = urlsplit(SERVER_URL)
    try:
        socket.create_connection((address.hostname, address.port), timeout=3).close()
    except OSError as exc:
        pytest.fail(
            f"azure-ai-search is not reachable at {SERVER_URL}: {exc}\n"
            f"Start it with `{START_HINT}` (from the repository root), "
            "or set RAGLOOM_AZURE_AI_SEARCH_URL to a running server.",
            pytrace=False,
        )
    return SERVER_URL


class TestAzureAiSearchConformance(ContentRetrieverSuite):
    @pytest.fixture
    def retriever(
        self, server_url: str, corpus: list[Document]
    ) -> AzureAiSearchContentRetriever:
        """The suite's corpus indexed in a fresh index (implement me: one per test)."""
        retriever = AzureAiSearchContentRetriever(server_url, max_results=5)
        retriever.add_documents(corpus)
        return retriever
