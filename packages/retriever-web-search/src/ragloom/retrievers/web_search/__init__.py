"""The ragloom ContentRetriever on web-search."""

from ragloom.retrievers.web_search.retriever import (
    WebSearchContentRetriever,
)

__all__ = ["WebSearchContentRetriever"]
