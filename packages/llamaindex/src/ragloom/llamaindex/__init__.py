"""ragloom and LlamaIndex, both ways.

ragloom in LlamaIndex: :class:`RagloomVectorStore` (any ragloom store as a vector store
for ``VectorStoreIndex``), :class:`RagloomRetriever` (any ragloom retriever) and
:class:`RagloomEmbedding` (a ragloom embedding model).

LlamaIndex in ragloom: :class:`LlamaIndexContentRetriever` (a retriever),
:class:`LlamaIndexDocumentLoader` (a reader) and
:class:`LlamaIndexEmbeddingModel` (an embedding model).
"""

from ragloom.llamaindex.embeddings import LlamaIndexEmbeddingModel, RagloomEmbedding
from ragloom.llamaindex.filters import to_ragloom_filter
from ragloom.llamaindex.reader import LlamaIndexDocumentLoader, to_ragloom_document
from ragloom.llamaindex.retriever import LlamaIndexContentRetriever, RagloomRetriever
from ragloom.llamaindex.vector_store import RagloomVectorStore

__all__ = [
    "LlamaIndexContentRetriever",
    "LlamaIndexDocumentLoader",
    "LlamaIndexEmbeddingModel",
    "RagloomEmbedding",
    "RagloomRetriever",
    "RagloomVectorStore",
    "to_ragloom_document",
    "to_ragloom_filter",
]
