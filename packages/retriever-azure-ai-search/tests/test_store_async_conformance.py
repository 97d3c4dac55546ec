"""The testkit's AsyncEmbeddingStoreSuite on AzureAiSearchEmbeddingStore: its async methods
on the official ``azure.search.documents.aio`` client (one per event loop), against the
local wire-format server (ragloom.retrievers.azure_ai_search.testing)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from azure.core.credentials import AzureKeyCredential

from ragloom.retrievers.azure_ai_search import AzureAiSearchEmbeddingStore
from ragloom.retrievers.azure_ai_search.testing import SearchWireServer
from ragloom.testkit import AsyncEmbeddingStoreSuite, Deviation


@pytest.fixture(scope="module")
def service() -> Iterator[tuple[SearchWireServer, str]]:
    server = SearchWireServer()
    with server.running() as endpoint:
        yield server, endpoint


class TestAzureAiSearchStoreAsync(AsyncEmbeddingStoreSuite):
    preserves_insertion_order_on_ties = Deviation(
        "Azure AI Search orders equal vector scores as its search finds them, with no "
        "insertion sequence to break ties"
    )

    @pytest.fixture
    def store(
        self, service: tuple[SearchWireServer, str], dimension: int, request: pytest.FixtureRequest
    ) -> Iterator[AzureAiSearchEmbeddingStore]:
        server, endpoint = service
        name = f"a{abs(hash(request.node.nodeid)) % 10**12}"
        with AzureAiSearchEmbeddingStore(
            endpoint, name, AzureKeyCredential(server.api_key), dimension=dimension
        ) as store:
            yield store
        server.indexes.pop(name, None)
