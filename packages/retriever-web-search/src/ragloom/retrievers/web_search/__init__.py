"""WebSearchContentRetriever and web search engines (Tavily) for ragloom."""

from ragloom.retrievers.web_search.retriever import WebSearchContentRetriever, to_content
from ragloom.retrievers.web_search.tavily import TavilyWebSearchEngine

__all__ = ["TavilyWebSearchEngine", "WebSearchContentRetriever", "to_content"]
