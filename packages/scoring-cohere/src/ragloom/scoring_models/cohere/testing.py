"""A real local HTTP server speaking Cohere's rerank API v2, for tests of any package.

    from ragloom.scoring_models.cohere.testing import API_KEY, MODEL, cohere_server

    with cohere_server() as server:
        model = CohereScoringModel(MODEL, api_key=API_KEY, base_url=server.url)

It serves ``POST /v2/rerank`` as Cohere documents it: bearer-token authentication
(401 ``{"message": "invalid api token"}``), ``model`` (404 for an unknown one),
``query``, ``documents`` (at least 1, at most 10,000, else 400), ``top_n`` and
``max_tokens_per_doc`` (a token is a word here); the answer is
``{"id", "results": [{"index", "relevance_score"}], "meta": {"api_version",
"billed_units": {"search_units"}}}``, results sorted by score, best first. Scores come
from the testkit's FakeScoringModel (the share of the query's words a document has), so
a test can tell which document must win. Failures are scripted with
``server.script(...)`` and the behaviours of :mod:`ragloom.testkit.wire` (status with
``Retry-After``, truncated or reordered answers, delays, dropped connections).
"""

from __future__ import annotations

from typing import Any

from ragloom.testkit.fake_scoring_model import FakeScoringModel
from ragloom.testkit.wire import Recorded, WireServer

__all__ = ["API_KEY", "MAX_DOCUMENTS", "MODEL", "MODELS", "cohere_server", "rerank"]

API_KEY = "co-test-key-0123456789"
MODEL = "rerank-v3.5"
MODELS = frozenset({"rerank-v3.5", "rerank-english-v3.0", "rerank-multilingual-v3.0"})
MAX_DOCUMENTS = 10_000


def _bad(message: str) -> tuple[int, Any]:
    return 400, {"id": "req-wire", "message": f"invalid request: {message}"}


def rerank(request: Recorded) -> tuple[int, Any]:
    """The documented answer of ``POST /v2/rerank``."""
    body = request.body
    if not isinstance(body, dict):
        return _bad("body must be a JSON object")
    model = body.get("model")
    if model not in MODELS:
        return 404, {
            "id": "req-wire",
            "message": f"model '{model}' not found, make sure "
            "the correct model ID was used and that you have access to the model.",
        }
    query, documents = body.get("query"), body.get("documents")
    if not isinstance(query, str) or not query.strip():
        return _bad("query must not be empty")
    if not isinstance(documents, list) or not documents:
        return _bad("list of documents must not be empty")
    if len(documents) > MAX_DOCUMENTS:
        return _bad(f"too many documents: got {len(documents)}, max is {MAX_DOCUMENTS}")
    if not all(isinstance(d, str) for d in documents):
        return _bad("documents must be strings")
    top_n = body.get("top_n", len(documents))
    if type(top_n) is not int or top_n < 1:
        return _bad("top_n must be a positive integer")
    max_tokens = body.get("max_tokens_per_doc", 4096)
    if type(max_tokens) is not int or max_tokens < 1:
        return _bad("max_tokens_per_doc must be a positive integer")
    cut = [" ".join(d.split()[:max_tokens]) for d in documents]
    scores = FakeScoringModel().score_all(cut, query).scores
    order = sorted(range(len(cut)), key=lambda i: -scores[i])[:top_n]
    return 200, {
        "id": "req-wire",
        "results": [{"index": i, "relevance_score": scores[i]} for i in order],
        "meta": {
            "api_version": {"version": "2", "is_experimental": False},
            "billed_units": {"search_units": 1 + (len(documents) - 1) // 100},
        },
    }


def cohere_server(*, api_key: str | None = API_KEY) -> WireServer:
    """A :class:`~ragloom.testkit.wire.WireServer` serving ``/v2/rerank`` (not started)."""
    return WireServer({"/v2/rerank": rerank}, api_key=api_key)
