"""The ragloom ContentRetriever over Azure AI Search: vector, full-text, hybrid, reranked."""

from ragloom.retrievers.azure_ai_search.odata import ODataFilterCompiler, odata_literal
from ragloom.retrievers.azure_ai_search.retriever import (
    AZURE_RERANKER_SCORE,
    AZURE_SCORE,
    AzureAiSearchContentRetriever,
    SearchMode,
)

__all__ = [
    "AZURE_RERANKER_SCORE",
    "AZURE_SCORE",
    "AzureAiSearchContentRetriever",
    "ODataFilterCompiler",
    "SearchMode",
    "odata_literal",
]
