"""WebSearchContentRetriever and web search engines (Tavily, Google Custom Search, SearXNG)."""

from ragloom.retrievers.web_search.google import GoogleCustomSearchEngine
from ragloom.retrievers.web_search.retriever import WebSearchContentRetriever, to_content
from ragloom.retrievers.web_search.searxng import SearxngWebSearchEngine
from ragloom.retrievers.web_search.tavily import TavilyWebSearchEngine

__all__ = [
    "GoogleCustomSearchEngine",
    "SearxngWebSearchEngine",
    "TavilyWebSearchEngine",
    "WebSearchContentRetriever",
    "to_content",
]
