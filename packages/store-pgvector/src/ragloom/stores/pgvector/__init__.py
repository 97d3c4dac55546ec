"""ragloom on PostgreSQL + pgvector: an EmbeddingStore and a full-text ContentRetriever.

``PgVectorEmbeddingStore`` keeps embeddings, segments and typed metadata in one table with
an HNSW (or IVFFlat) cosine index; filters run in SQL with bound parameters and the core
semantics. ``PgFullTextContentRetriever`` ranks the same table's texts with PostgreSQL
full-text search, so hybrid retrieval runs entirely in PostgreSQL.
"""

from ragloom.stores.pgvector.full_text import PgFullTextContentRetriever
from ragloom.stores.pgvector.store import IndexType, IterativeScan, PgVectorEmbeddingStore

__all__ = ["IndexType", "IterativeScan", "PgFullTextContentRetriever", "PgVectorEmbeddingStore"]
