"""WebSearchContentRetriever passes the testkit suites unchanged, on a real server."""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

import pytest

from ragloom.core.document import Document
from ragloom.retrievers.web_search import WebSearchContentRetriever
from ragloom.testkit import ContentRetrieverSuite

pytestmark = pytest.mark.integration

SERVER_URL = os.environ.get("RAGLOOM_WEB_SEARCH_URL", "http://127.0.0.1:37730")
START_HINT = "bash scripts/services/web-search.sh start"


@pytest.fixture(scope="session")
def server_url() -> str:
    """The server's URL; fails (never skips) with the command that starts it."""
    address = urlsplit(SERVER_URL)
    try:
        socket.create_connection((address.hostname, address.port), timeout=3).close()
    except OSError as exc:
        pytest.fail(
            f"web-search is not reachable at {SERVER_URL}: {exc}\n"
            f"Start it with `{START_HINT}` (from the repository root), "
            "or set RAGLOOM_WEB_SEARCH_URL to a running server.",
            pytrace=False,
        )
    return SERVER_URL


class TestWebSearchConformance(ContentRetrieverSuite):
    @pytest.fixture
    def retriever(
        self, server_url: str, corpus: list[Document]
    ) -> WebSearchContentRetriever:
        """The suite's corpus indexed in a fresh index (implement me: one per test)."""
        retriever = WebSearchContentRetriever(server_url, max_results=5)
        retriever.add_documents(corpus)
        return retriever
