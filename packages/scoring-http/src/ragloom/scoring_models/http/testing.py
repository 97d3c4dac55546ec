"""Real local HTTP servers speaking the self-hosted rerank wire formats, for tests.

    from ragloom.scoring_models.http.testing import tei_server, jina_server

    with tei_server() as server:      # HttpScoringModel(server.url, api="tei")
        ...
    with jina_server() as server:     # HttpScoringModel(server.url + "/v1", api="jina")
        ...

``tei_server`` serves ``POST /rerank`` as Hugging Face text-embeddings-inference
documents it: ``{query, texts, truncate, raw_scores, return_text}`` answered
``[{index, score}]`` sorted by score; more texts than ``max_client_batch_size`` (32)
or an empty list is HTTP 422 ``{"error", "error_type": "Validation"}``; a text longer
than ``max_input_length`` words with ``truncate`` false is HTTP 413; scores are
sigmoids of logits (the logits with ``raw_scores``). ``jina_server`` serves
``POST /v1/rerank`` and ``POST /rerank`` (vLLM serves both, Infinity the latter) as
vLLM does: ``{model, query, documents, top_n, return_documents}`` answered
``{id, model, usage: {total_tokens}, results: [{index, document, relevance_score}]}``;
an unknown model is HTTP 404 and a bad request 400, as ``{"object": "error", "message",
"type", "code"}``. Relevance is the testkit's FakeScoringModel (share of query words
in the text). Failures are scripted with ``server.script(...)`` and the behaviours of
:mod:`ragloom.testkit.wire`.
"""

from __future__ import annotations

import math
from typing import Any

from ragloom.testkit.fake_scoring_model import FakeScoringModel
from ragloom.testkit.wire import Recorded, Route, WireServer

__all__ = ["JINA_MODEL", "jina_server", "logit", "tei_server"]

JINA_MODEL = "BAAI/bge-reranker-base"


def logit(share: float) -> float:
    """The fake cross-encoder's raw score for a share of query words: ``10 * (share - 0.5)``."""
    return 10.0 * (share - 0.5)


def _sigmoid(value: float) -> float:
    return 1.0 / (1.0 + math.exp(-value))


def _words(text: str) -> int:
    return len(text.split())


def _tei_error(status: int, message: str, kind: str = "Validation") -> tuple[int, Any]:
    return status, {"error": message, "error_type": kind}


def _tei_rerank(max_client_batch_size: int, max_input_length: int) -> Route:
    def rerank(request: Recorded) -> tuple[int, Any]:
        body = request.body
        if not isinstance(body, dict) or not isinstance(body.get("query"), str):
            return _tei_error(422, "Failed to deserialize the JSON body: missing field `query`")
        texts = body.get("texts")
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return _tei_error(422, "Failed to deserialize the JSON body: `texts` must be strings")
        if not texts:
            return _tei_error(422, "`texts` cannot be empty")
        if len(texts) > max_client_batch_size:
            return _tei_error(
                422, f"batch size {len(texts)} > maximum allowed batch size {max_client_batch_size}"
            )
        longest = max(_words(body["query"]) + _words(t) for t in texts)
        if not body.get("truncate", False) and longest > max_input_length:
            return _tei_error(
                413,
                f"Input validation error: `inputs` must have less than {max_input_length} "
                f"tokens. Given: {longest}",
            )
        shares = FakeScoringModel().score_all(texts, body["query"]).scores
        raws = [logit(s) for s in shares]
        scores = raws if body.get("raw_scores", False) else [_sigmoid(r) for r in raws]
        order = sorted(range(len(texts)), key=lambda i: -scores[i])
        ranks: list[dict[str, Any]] = [{"index": i, "score": scores[i]} for i in order]
        if body.get("return_text"):
            for rank in ranks:
                rank["text"] = texts[rank["index"]]
        return 200, ranks

    return rerank


def tei_server(
    *, max_client_batch_size: int = 32, max_input_length: int = 512, api_key: str | None = None
) -> WireServer:
    """A text-embeddings-inference ``/rerank`` server (not started)."""
    return WireServer(
        {"/rerank": _tei_rerank(max_client_batch_size, max_input_length)},
        api_key=api_key,
        unauthorized=lambda request: _tei_error(401, "Unauthorized", "Unauthorized"),
    )


def _vllm_error(status: int, message: str, kind: str) -> tuple[int, Any]:
    return status, {
        "object": "error",
        "message": message,
        "type": kind,
        "param": None,
        "code": status,
    }


def _jina_rerank(model: str) -> Route:
    def rerank(request: Recorded) -> tuple[int, Any]:
        body = request.body
        if not isinstance(body, dict):
            return _vllm_error(400, "body must be a JSON object", "BadRequestError")
        requested = body.get("model", model)
        if requested != model:
            return _vllm_error(404, f"The model `{requested}` does not exist.", "NotFoundError")
        query, documents = body.get("query"), body.get("documents")
        if not isinstance(query, str) or not isinstance(documents, list):
            return _vllm_error(
                400, "query (str) and documents (list) are required", "BadRequestError"
            )
        if not all(isinstance(d, str) for d in documents):
            return _vllm_error(400, "documents must be strings", "BadRequestError")
        top_n = body.get("top_n") or len(documents)
        if type(top_n) is not int or top_n < 0:
            return _vllm_error(400, "top_n must be a non-negative integer", "BadRequestError")
        scores = FakeScoringModel().score_all(documents, query).scores
        order = sorted(range(len(documents)), key=lambda i: -scores[i])[:top_n]
        with_text = body.get("return_documents", True)
        results = [
            {
                "index": i,
                "document": {"text": documents[i]} if with_text else None,
                "relevance_score": scores[i],
            }
            for i in order
        ]
        tokens = sum(_words(query) + _words(d) for d in documents)
        return 200, {
            "id": "rerank-wire",
            "model": model,
            "usage": {"total_tokens": tokens},
            "results": results,
        }

    return rerank


def jina_server(*, model: str = JINA_MODEL, api_key: str | None = None) -> WireServer:
    """A vLLM/Infinity-style ``/v1/rerank`` and ``/rerank`` server (not started)."""
    route = _jina_rerank(model)
    return WireServer(
        {"/v1/rerank": route, "/rerank": route},
        api_key=api_key,
        unauthorized=lambda request: _vllm_error(401, "Unauthorized", "AuthenticationError"),
    )
