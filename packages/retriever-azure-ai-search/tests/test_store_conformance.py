"""AzureAiSearchEmbeddingStore passes the EmbeddingStoreSuite and EmbeddingStoreFilterSuite,
through the official azure-search-documents client, and the AsyncEmbeddingStoreSuite on its
``aio`` client (one per event loop), against the local wire-format server
(ragloom.retrievers.azure_ai_search.testing), which creates the index from the client's
definition, evaluates the OData filters and computes cosine scores itself."""

from __future__ import annotations

import pytest

from ragloom.retrievers.azure_ai_search import AzureAiSearchEmbeddingStore
from ragloom.testkit import (
    AsyncEmbeddingStoreSuite,
    Deviation,
    EmbeddingStoreFilterSuite,
    EmbeddingStoreSuite,
)

TIES = Deviation(
    "Azure AI Search orders equal vector scores as its HNSW/exhaustive scan finds them, "
    "with no insertion sequence to break ties"
)


class TestAzureAiSearchStore(EmbeddingStoreSuite, EmbeddingStoreFilterSuite):
    preserves_insertion_order_on_ties = TIES
    supports_contains_string = Deviation(
        "OData filters have no substring match; search.ismatch is analyzed full text "
        "(case-folded, tokenized), so it would return wrong matches"
    )
    raises_on_filter_type_mismatch = Deviation(
        "Azure evaluates the filter server-side with no type check across documents; a value "
        "of another type sits in another typed sub-field and simply does not match"
    )

    @pytest.fixture
    def store(self, suite_store: AzureAiSearchEmbeddingStore) -> AzureAiSearchEmbeddingStore:
        return suite_store


class TestAzureAiSearchStoreAsync(AsyncEmbeddingStoreSuite):
    preserves_insertion_order_on_ties = TIES

    @pytest.fixture
    def store(self, suite_store: AzureAiSearchEmbeddingStore) -> AzureAiSearchEmbeddingStore:
        return suite_store
