"""The ragloom EmbeddingStore on Qdrant (a server, a cluster, or qdrant-client's local mode)."""

from ragloom.stores.qdrant._filters import QdrantFilterCompiler
from ragloom.stores.qdrant.hybrid import QdrantHybridContentRetriever
from ragloom.stores.qdrant.store import QdrantEmbeddingStore

__all__ = ["QdrantEmbeddingStore", "QdrantFilterCompiler", "QdrantHybridContentRetriever"]
