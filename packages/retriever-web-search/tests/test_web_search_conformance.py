"""WebSearchContentRetriever + TavilyWebSearchEngine pass the ContentRetrieverSuite.

The engine talks HTTP to a local server speaking the Tavily wire format
(ragloom.retrievers.web_search.testing) over the suite's corpus.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ragloom.core.document import Document
from ragloom.retrievers.web_search import TavilyWebSearchEngine, WebSearchContentRetriever
from ragloom.retrievers.web_search.testing import TavilyTestServer
from ragloom.testkit import ContentRetrieverSuite


class TestTavilyConformance(ContentRetrieverSuite):
    @pytest.fixture
    def retriever(self, corpus: list[Document]) -> Iterator[WebSearchContentRetriever]:
        with TavilyTestServer(corpus, api_key="tvly-test") as server:
            engine = TavilyWebSearchEngine("tvly-test", base_url=server.url)
            yield WebSearchContentRetriever(engine, max_results=5)
            engine.close()
