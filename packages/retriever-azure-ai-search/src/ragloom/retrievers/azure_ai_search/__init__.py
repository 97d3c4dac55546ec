"""The ragloom ContentRetriever on azure-ai-search."""

from ragloom.retrievers.azure_ai_search.retriever import (
    AzureAiSearchContentRetriever,
)

__all__ = ["AzureAiSearchContentRetriever"]
