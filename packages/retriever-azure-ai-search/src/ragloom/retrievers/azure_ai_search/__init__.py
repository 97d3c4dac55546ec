"""Azure AI Search for ragloom: the ContentRetriever (vector, full-text, hybrid, reranked)
and the EmbeddingStore."""

from ragloom.retrievers.azure_ai_search.odata import ODataFilterCompiler, odata_literal
from ragloom.retrievers.azure_ai_search.retriever import (
    AZURE_RERANKER_SCORE,
    AZURE_SCORE,
    AzureAiSearchContentRetriever,
    SearchMode,
)
from ragloom.retrievers.azure_ai_search.store import (
    AzureAiSearchEmbeddingStore,
    MetadataFilterCompiler,
)

__all__ = [
    "AZURE_RERANKER_SCORE",
    "AZURE_SCORE",
    "AzureAiSearchContentRetriever",
    "AzureAiSearchEmbeddingStore",
    "MetadataFilterCompiler",
    "ODataFilterCompiler",
    "SearchMode",
    "odata_literal",
]
