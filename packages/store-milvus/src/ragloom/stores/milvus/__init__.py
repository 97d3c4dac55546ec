"""ragloom EmbeddingStore on Milvus (Milvus Lite, a Milvus server or cluster), via pymilvus."""

from ragloom.stores.milvus.hybrid import MilvusHybridContentRetriever
from ragloom.stores.milvus.store import MilvusEmbeddingStore

__all__ = ["MilvusEmbeddingStore", "MilvusHybridContentRetriever"]
