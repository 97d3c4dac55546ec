"""AzureAiSearchContentRetriever passes the ContentRetrieverSuite in every search mode,
through the official azure-search-documents client, against the local wire-format server
(ragloom.retrievers.azure_ai_search.testing); no Azure service runs here."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest

from ragloom.core.document import Document
from ragloom.retrievers.azure_ai_search import AzureAiSearchContentRetriever, SearchMode
from ragloom.retrievers.azure_ai_search.testing import SearchWireServer
from ragloom.testkit import ContentRetrieverSuite, FakeEmbeddingModel


@pytest.fixture(params=list(SearchMode))
def mode(request: pytest.FixtureRequest) -> SearchMode:
    return SearchMode(request.param)


class TestAzureAiSearchConformance(ContentRetrieverSuite):
    @pytest.fixture
    def retriever(
        self,
        corpus: list[Document],
        mode: SearchMode,
        topic_retriever: Callable[..., AzureAiSearchContentRetriever],
    ) -> Iterator[AzureAiSearchContentRetriever]:
        model = FakeEmbeddingModel(dimension=64)
        documents = [
            {
                "id": str(i),
                "content": d.text,
                "topic": d.metadata["topic"],
                "content_vector": np.asarray(model.embed(d.text).embedding).tolist(),
            }
            for i, d in enumerate(corpus)
        ]
        server = SearchWireServer("docs", documents)
        with server.running() as endpoint:
            yield topic_retriever(server, endpoint, mode, model, max_results=5)
