"""HttpScoringModel: re-ranking scores from a self-hosted rerank server.

Two wire formats, one client:

- ``api="tei"``: Hugging Face text-embeddings-inference, ``POST {base_url}/rerank``
  with ``{query, texts, truncate, raw_scores}``, answered ``[{index, score}]``;
- ``api="jina"``: the Jina/Cohere-style rerank API that vLLM (``{base_url}`` ending in
  ``/v1``) and Infinity serve, ``POST {base_url}/rerank`` with
  ``{model, query, documents, top_n}``, answered ``{results: [{index, relevance_score}],
  usage}``.

Both answer sorted by score; the scores are mapped back to input order. Batching,
retries (Retry-After honoured) and errors come from :mod:`ragloom.core.scoring_batches`.
Registered under ``ragloom.scoring_models`` as ``http``; the entry point is
:meth:`HttpScoringModel.from_env`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

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

__all__ = ["DEFAULT_BATCH_SIZE", "MAX_BATCH_SIZE", "HttpScoringModel", "RerankApi"]

RerankApi = Literal["tei", "jina"]
DEFAULT_BATCH_SIZE = 32
"""Texts per request by default: text-embeddings-inference's default
``--max-client-batch-size``, which it enforces (HTTP 422 beyond it)."""
MAX_BATCH_SIZE = 10_000
URL_VARIABLE = "RAGLOOM_RERANK_URL"
API_VARIABLE = "RAGLOOM_RERANK_API"
MODEL_VARIABLE = "RAGLOOM_RERANK_MODEL"
KEY_VARIABLE = "RAGLOOM_RERANK_API_KEY"
BATCH_VARIABLE = "RAGLOOM_RERANK_BATCH_SIZE"
_PROVIDERS = {"tei": "text-embeddings-inference", "jina": "Jina-style"}


class HttpScoringModel(HttpxRerankClient, ScoringModel):
    """Scores texts for a query on a self-hosted rerank server (a cross-encoder).

    ``api`` picks the wire format (``"tei"`` or ``"jina"``, see the module). The scale is
    the server's: text-embeddings-inference gives sigmoid scores in [0, 1] unless
    ``raw_scores`` (logits); vLLM and Infinity give the model's relevance score.
    ``truncate`` (tei only) lets the server cut texts longer than the model's input
    instead of refusing them. ``model_name`` (jina only) is sent as ``model`` when set.
    ``api_key`` is sent as a bearer token when given (servers started with one).
    ``batch_size`` must not exceed the server's own limit (TEI:
    ``--max-client-batch-size``, default 32).
    """

    def __init__(
        self,
        base_url: str,
        *,
        api: RerankApi = "tei",
        model_name: str | None = None,
        api_key: str | None = None,
        truncate: bool = True,
        raw_scores: bool = False,
        batch_size: int = DEFAULT_BATCH_SIZE,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise InvalidArgumentError(f"base_url must be an http(s) URL, got {base_url!r}")
        if api not in get_args(RerankApi):
            raise InvalidArgumentError(f"api must be 'tei' or 'jina', got {api!r}")
        if model_name is not None and (not isinstance(model_name, str) or not model_name):
            raise InvalidArgumentError(
                f"model_name must be a non-empty str or None, got {model_name!r}"
            )
        if api == "tei" and model_name is not None:
            raise InvalidArgumentError(
                "model_name is not part of text-embeddings-inference's /rerank request (the "
                "server serves one model); leave it None or use api='jina'"
            )
        if api_key is not None and not isinstance(api_key, str):
            raise InvalidArgumentTypeError(
                f"api_key must be a str or None, got {type(api_key).__name__}"
            )
        if not isinstance(timeout, int | float) or not timeout > 0:
            raise InvalidArgumentError(f"timeout must be a number > 0, got {timeout!r}")
        for name, flag in (("truncate", truncate), ("raw_scores", raw_scores)):
            if not isinstance(flag, bool):
                raise InvalidArgumentTypeError(f"{name} must be a bool, got {flag!r}")
        self.base_url = base_url.rstrip("/")
        self.api: RerankApi = api
        self.model_name = model_name
        self.truncate = truncate
        self.raw_scores = raw_scores
        self.batch_size = check_batch_size(batch_size, MAX_BATCH_SIZE, _PROVIDERS[api])
        self._headers = {"Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key.strip()}"
        self._endpoint = RerankEndpoint(
            _PROVIDERS[api],
            f"{self.base_url}/rerank",
            model_name,
            retry or RetryPolicy(),
            auth_hint="the api_key argument" if api_key else "none",
        )
        self._connect(http_client, timeout)

    @classmethod
    def from_env(cls) -> HttpScoringModel:
        """The plugin factory: ``$RAGLOOM_RERANK_URL`` (required), ``$RAGLOOM_RERANK_API``
        (tei or jina, default tei), ``$RAGLOOM_RERANK_MODEL``, ``$RAGLOOM_RERANK_API_KEY``,
        ``$RAGLOOM_RERANK_BATCH_SIZE``."""
        url = os.environ.get(URL_VARIABLE, "").strip()
        if not url:
            raise PluginError(
                f"the http scoring model needs a server: set {URL_VARIABLE} (e.g. "
                f"http://127.0.0.1:8080 for text-embeddings-inference) and {API_VARIABLE}"
            )
        batch = os.environ.get(BATCH_VARIABLE, "").strip()
        if batch and not batch.isdigit():
            raise PluginError(f"{BATCH_VARIABLE} must be a positive int, got {batch!r}")
        api = os.environ.get(API_VARIABLE, "").strip() or "tei"
        if api not in get_args(RerankApi):
            raise PluginError(f"{API_VARIABLE} must be 'tei' or 'jina', got {api!r}")
        return cls(
            url,
            api=api,  # type: ignore[arg-type]  # checked just above
            model_name=os.environ.get(MODEL_VARIABLE) or None,
            api_key=os.environ.get(KEY_VARIABLE) or None,
            batch_size=int(batch) if batch else DEFAULT_BATCH_SIZE,
        )

    def score_all(self, segments: Sequence[str | TextSegment], query: str) -> ScoringResult:
        """One score per segment, in input order."""
        if not isinstance(query, str):
            raise InvalidArgumentTypeError(f"query must be a str, got {type(query).__name__}")
        texts = [text_of(segment) for segment in segments]
        if not texts:
            return ScoringResult([])
        return score_in_batches(texts, self.batch_size, lambda batch: self._score(batch, query))

    def _score(self, texts: list[str], query: str) -> tuple[list[float], TokenUsage | None]:
        if self.api == "tei":
            body: dict[str, Any] = {
                "query": query,
                "texts": texts,
                "truncate": self.truncate,
                "raw_scores": self.raw_scores,
            }
            answer = self._post(body)
            return self._pairs(answer, "score", len(texts)), None
        body = {"query": query, "documents": texts, "top_n": len(texts), "return_documents": False}
        if self.model_name is not None:
            body["model"] = self.model_name
        answer = self._post(body)
        if not isinstance(answer, dict):
            raise self._endpoint.response_error(f"answered {str(answer)[:200]!r}, not an object")
        return self._pairs(answer.get("results"), "relevance_score", len(texts)), _usage(answer)

    def _pairs(self, results: object, key: str, count: int) -> list[float]:
        if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
            raise self._endpoint.response_error(
                f"answered {str(results)[:200]!r}, not a list of {{index, {key}}} objects"
            )
        pairs = [(r.get("index"), r.get(key)) for r in results]
        return scores_in_input_order(pairs, count, self._endpoint)

    def __repr__(self) -> str:
        return f"HttpScoringModel({self.base_url!r}, api={self.api!r})"


def _usage(answer: Mapping[str, Any]) -> TokenUsage | None:
    """``usage`` of a Jina-style answer: ``{total_tokens}`` (vLLM, Jina) or with
    ``prompt_tokens`` (Infinity); all of it is input."""
    usage = answer.get("usage")
    if not isinstance(usage, dict):
        return None
    total, prompt = usage.get("total_tokens"), usage.get("prompt_tokens", usage.get("total_tokens"))
    if type(total) is not int or type(prompt) is not int or total < 0 or prompt < 0:
        return None
    return TokenUsage(input_token_count=prompt, total_token_count=total)
