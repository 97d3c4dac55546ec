"""The ragloom ScoringModel (re-ranking) for self-hosted rerank servers: Hugging Face
text-embeddings-inference (``api="tei"``) and the Jina-style API of vLLM and Infinity
(``api="jina"``)."""

from ragloom.scoring_models.http.scoring import (
    DEFAULT_BATCH_SIZE,
    MAX_BATCH_SIZE,
    HttpScoringModel,
    RerankApi,
)

__all__ = ["DEFAULT_BATCH_SIZE", "MAX_BATCH_SIZE", "HttpScoringModel", "RerankApi"]
