"""ragloom and LangChain, both ways.

ragloom in LangChain: :class:`RagloomVectorStore` (any ragloom store as a ``VectorStore``),
:class:`RagloomRetriever` (any ragloom retriever as a ``BaseRetriever``) and
:class:`RagloomEmbeddings` (a ragloom model as ``Embeddings``).

LangChain in ragloom: :class:`LangChainContentRetriever` (a ``BaseRetriever``),
:class:`LangChainDocumentLoader` (a ``BaseLoader``),
:class:`LangChainEmbeddingModel` (``Embeddings``) and :class:`LangChainChatModel` (a chat
model, streaming included).
"""

from ragloom.langchain.chat import LangChainChatModel
from ragloom.langchain.embeddings import LangChainEmbeddingModel, RagloomEmbeddings
from ragloom.langchain.filters import FilterLike, to_ragloom_filter
from ragloom.langchain.loader import LangChainDocumentLoader, to_ragloom_document
from ragloom.langchain.retriever import LangChainContentRetriever, RagloomRetriever
from ragloom.langchain.vectorstore import RagloomVectorStore

__all__ = [
    "FilterLike",
    "LangChainChatModel",
    "LangChainContentRetriever",
    "LangChainDocumentLoader",
    "LangChainEmbeddingModel",
    "RagloomEmbeddings",
    "RagloomRetriever",
    "RagloomVectorStore",
    "to_ragloom_document",
    "to_ragloom_filter",
]
