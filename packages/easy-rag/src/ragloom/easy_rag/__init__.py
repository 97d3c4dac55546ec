"""Easy RAG: point at your documents and ask questions, with sensible defaults.

The spec's three steps, in Python::

    from ragloom.core import EmbeddingStoreContentRetriever, EmbeddingStoreIngestor
    from ragloom.core import InMemoryEmbeddingStore
    from ragloom.easy_rag import create_assistant, load_documents

    documents = load_documents("docs/")
    store = InMemoryEmbeddingStore()
    EmbeddingStoreIngestor.from_defaults(store).ingest(documents)
    assistant = create_assistant(EmbeddingStoreContentRetriever.from_defaults(store))
    print(assistant.chat("How do I filter by metadata?").content)

Installing this package provides the defaults through entry points: the
all-MiniLM-L6-v2 (int8) embedding model, the recursive 254/30-token splitter and the
PDF, Office and HTML parsers.
"""

from ragloom.core.errors import RagIndexError
from ragloom.easy_rag.assistant import chat_model_from_env, create_assistant, load_documents
from ragloom.easy_rag.extractive import ExtractiveAssistant
from ragloom.easy_rag.index import IngestReport, RagIndex

__all__ = [
    "ExtractiveAssistant",
    "IngestReport",
    "RagIndex",
    "RagIndexError",
    "chat_model_from_env",
    "create_assistant",
    "load_documents",
]
