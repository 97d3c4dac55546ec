"""The ragloom ScoringModel (re-ranking) on Cohere's rerank API v2."""

from ragloom.scoring_models.cohere.scoring import (
    API_KEY_VARIABLES,
    DEFAULT_BASE_URL,
    DEFAULT_BATCH_SIZE,
    DEFAULT_MODEL,
    MAX_DOCUMENTS,
    CohereScoringModel,
)

__all__ = [
    "API_KEY_VARIABLES",
    "DEFAULT_BASE_URL",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_MODEL",
    "MAX_DOCUMENTS",
    "CohereScoringModel",
]
