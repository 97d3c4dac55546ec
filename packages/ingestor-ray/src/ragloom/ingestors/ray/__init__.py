"""Scale-out ingestion on a pool of Ray actors with core's EmbeddingStoreIngestor semantics."""

from ragloom.ingestors.ray.ingestor import (
    EmbeddingModelFactory,
    EmbeddingStoreFactory,
    RayIngestor,
    default_embedding_model,
)

__all__ = [
    "EmbeddingModelFactory",
    "EmbeddingStoreFactory",
    "RayIngestor",
    "default_embedding_model",
]
