"""CohereScoringModel: re-ranking scores from Cohere's rerank API (v2).

One ``POST {base_url}/v2/rerank`` per batch of at most ``batch_size`` documents with
``{model, query, documents, top_n, max_tokens_per_doc}``; Cohere answers
``results[{index, relevance_score}]`` sorted by score, which is mapped back to input
order. Batching, retries (Retry-After honoured) and errors come from
:mod:`ragloom.core.scoring_batches`. Registered under ``ragloom.scoring_models`` as
``cohere``; the entry point is :meth:`CohereScoringModel.from_env`.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Sequence
from typing import Any

import httpx

from ragloom.core.document import TextSegment
from ragloom.core.embedding import TokenUsage, text_of
from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError, PluginError
from ragloom.core.scoring import ScoringModel, ScoringResult
from ragloom.core.scoring_batches import (
    HttpxRerankClient,
    RerankEndpoint,
    RetryPolicy,
    check_batch_size,
    score_in_batches,
    scores_in_input_order,
)

__all__ = [
    "API_KEY_VARIABLES",
    "DEFAULT_BASE_URL",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_MODEL",
    "MAX_DOCUMENTS",
    "CohereScoringModel",
]

DEFAULT_BASE_URL = "https://api.cohere.com"
DEFAULT_MODEL = "rerank-v3.5"
MAX_DOCUMENTS = 10_000
"""Cohere's documented maximum number of documents in one rerank request."""
DEFAULT_BATCH_SIZE = 1_000
"""Documents per request by default: well under the maximum, so one call stays fast."""
API_KEY_VARIABLES = ("CO_API_KEY", "COHERE_API_KEY")
MODEL_VARIABLE = "RAGLOOM_COHERE_MODEL"
BASE_URL_VARIABLE = "RAGLOOM_COHERE_BASE_URL"


def _positive_int_or_none(name: str, value: object) -> int | None:
    if value is not None and (type(value) is not int or value < 1):
        raise InvalidArgumentError(f"{name} must be a positive int or None, got {value!r}")
    return value


class CohereScoringModel(HttpxRerankClient, ScoringModel):
    """Scores texts for a query with a Cohere rerank model (``relevance_score`` in [0, 1]).

    ``top_n`` keeps only the ``top_n`` best documents of each ``score_all`` call: Cohere
    returns only those, and every other document scores ``0.0`` (the bottom of Cohere's
    scale). ``max_tokens_per_doc`` makes Cohere cut longer documents (its default is
    4096). ``api_key`` ``None`` reads ``$CO_API_KEY``, then ``$COHERE_API_KEY``.
    """

    def __init__(
        self,
        model_name: str = DEFAULT_MODEL,
        *,
        api_key: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
        top_n: int | None = None,
        max_tokens_per_doc: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        if not isinstance(model_name, str) or not model_name.strip():
            raise InvalidArgumentError(f"model_name must be a non-empty str, got {model_name!r}")
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise InvalidArgumentError(f"base_url must be an http(s) URL, got {base_url!r}")
        if not isinstance(timeout, int | float) or not timeout > 0:
            raise InvalidArgumentError(f"timeout must be a number > 0, got {timeout!r}")
        self.model_name = model_name
        self.base_url = base_url.rstrip("/")
        self.top_n = _positive_int_or_none("top_n", top_n)
        self.max_tokens_per_doc = _positive_int_or_none("max_tokens_per_doc", max_tokens_per_doc)
        self.batch_size = check_batch_size(batch_size, MAX_DOCUMENTS, "Cohere")
        key, source = _api_key(api_key)
        self._headers = {
            "Authorization": f"Bearer {key}",
            "Accept": "application/json",
            "X-Client-Name": "ragloom",
        }
        self._endpoint = RerankEndpoint(
            "Cohere",
            f"{self.base_url}/v2/rerank",
            model_name,
            retry or RetryPolicy(),
            auth_hint=source,
        )
        self._connect(http_client, timeout)

    @classmethod
    def from_env(cls) -> CohereScoringModel:
        """The plugin factory: key from ``$CO_API_KEY``/``$COHERE_API_KEY``, model from
        ``$RAGLOOM_COHERE_MODEL`` (default ``rerank-v3.5``), API root from
        ``$RAGLOOM_COHERE_BASE_URL`` (default Cohere's)."""
        if not any(os.environ.get(name, "").strip() for name in API_KEY_VARIABLES):
            raise PluginError(
                "the cohere scoring model needs an API key: set " + " or ".join(API_KEY_VARIABLES)
            )
        return cls(
            os.environ.get(MODEL_VARIABLE) or DEFAULT_MODEL,
            base_url=os.environ.get(BASE_URL_VARIABLE) or DEFAULT_BASE_URL,
        )

    def score_all(self, segments: Sequence[str | TextSegment], query: str) -> ScoringResult:
        """One score per segment, in input order (``0.0`` outside ``top_n`` when set)."""
        if not isinstance(query, str):
            raise InvalidArgumentTypeError(f"query must be a str, got {type(query).__name__}")
        texts = [text_of(segment) for segment in segments]
        if not texts:
            return ScoringResult([])
        result = score_in_batches(texts, self.batch_size, lambda batch: self._score(batch, query))
        if self.top_n is None or self.top_n >= len(texts):
            return result
        best = set(heapq.nlargest(self.top_n, range(len(texts)), key=result.scores.__getitem__))
        scores = [score if i in best else 0.0 for i, score in enumerate(result.scores)]
        return ScoringResult(scores, result.token_usage)

    def _score(self, texts: list[str], query: str) -> tuple[list[float], TokenUsage | None]:
        wanted = len(texts) if self.top_n is None else min(self.top_n, len(texts))
        body: dict[str, Any] = {
            "model": self.model_name,
            "query": query,
            "documents": texts,
            "top_n": wanted,
        }
        if self.max_tokens_per_doc is not None:
            body["max_tokens_per_doc"] = self.max_tokens_per_doc
        answer = self._post(body)
        results = answer.get("results") if isinstance(answer, dict) else None
        if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
            raise self._endpoint.response_error(
                f"answered without a results list: {str(answer)[:200]!r}"
            )
        if len(results) != wanted:
            raise self._endpoint.response_error(
                f"answered {len(results)} results for top_n={wanted} of {len(texts)} "
                "documents (truncated answer)"
            )
        pairs = [(r.get("index"), r.get("relevance_score")) for r in results]
        return scores_in_input_order(pairs, len(texts), self._endpoint, required=wanted), None

    def __repr__(self) -> str:
        return f"CohereScoringModel({self.model_name!r}, base_url={self.base_url!r})"


def _api_key(api_key: str | None) -> tuple[str, str]:
    """The key and where it came from (never the key itself in a message)."""
    if api_key is not None:
        if not isinstance(api_key, str):
            raise InvalidArgumentTypeError(
                f"api_key must be a str or None, got {type(api_key).__name__}"
            )
        key, source = api_key.strip(), "the api_key argument"
    else:
        found = [(os.environ.get(n, "").strip(), f"${n}") for n in API_KEY_VARIABLES]
        key, source = next(((k, s) for k, s in found if k), ("", ""))
    if not key:
        raise InvalidArgumentError(
            "Cohere needs an API key: pass api_key= or set " + " or ".join(API_KEY_VARIABLES)
        )
    if not (key.isascii() and key.isprintable()) or any(c.isspace() for c in key):
        raise InvalidArgumentError(
            f"the API key from {source} contains whitespace or non-ASCII characters"
        )
    return key, source
