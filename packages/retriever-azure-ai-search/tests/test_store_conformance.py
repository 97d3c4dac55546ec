"""AzureAiSearchEmbeddingStore passes the EmbeddingStoreSuite and EmbeddingStoreFilterSuite,
through the official azure-search-documents client, against the local wire-format server
(ragloom.retrievers.azure_ai_search.testing), which creates the index from the client's
definition, evaluates the OData filters and computes cosine scores itself."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from azure.core.credentials import AzureKeyCredential

from ragloom.retrievers.azure_ai_search import AzureAiSearchEmbeddingStore
from ragloom.retrievers.azure_ai_search.testing import SearchWireServer
from ragloom.testkit import Deviation, EmbeddingStoreFilterSuite, EmbeddingStoreSuite


@pytest.fixture(scope="module")
def service() -> Iterator[tuple[SearchWireServer, str]]:
    server = SearchWireServer()
    with server.running() as endpoint:
        yield server, endpoint


class TestAzureAiSearchStore(EmbeddingStoreSuite, EmbeddingStoreFilterSuite):
    preserves_insertion_order_on_ties = Deviation(
        "Azure AI Search orders equal vector scores as its HNSW/exhaustive scan finds them, "
        "with no insertion sequence to break ties"
    )
    supports_contains_string = Deviation(
        "OData filters have no substring match; search.ismatch is analyzed full text "
        "(case-folded, tokenized), so it would return wrong matches"
    )
    raises_on_filter_type_mismatch = Deviation(
        "Azure evaluates the filter server-side with no type check across documents; a value "
        "of another type sits in another typed sub-field and simply does not match"
    )

    @pytest.fixture
    def store(
        self, service: tuple[SearchWireServer, str], dimension: int, request: pytest.FixtureRequest
    ) -> Iterator[AzureAiSearchEmbeddingStore]:
        server, endpoint = service
        name = f"t{abs(hash(request.node.nodeid)) % 10**12}"
        with AzureAiSearchEmbeddingStore(
            endpoint, name, AzureKeyCredential(server.api_key), dimension=dimension
        ) as store:
            yield store
        server.indexes.pop(name, None)
