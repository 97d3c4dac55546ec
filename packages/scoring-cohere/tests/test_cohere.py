"""CohereScoringModel against the local Cohere v2 wire-format server: request shape,
batching, top_n, truncated/reordered/corrupt answers, HTTP errors and retries."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from ragloom.core.errors import InvalidArgumentError, PluginError, RetrievalError
from ragloom.core.scoring_batches import (
    RetryPolicy,
    ScoringAuthenticationError,
    ScoringConnectionError,
    ScoringRateLimitError,
    ScoringResponseError,
    ScoringServerError,
    ScoringStatusError,
    ScoringTimeoutError,
)
from ragloom.scoring_models.cohere import CohereScoringModel
from ragloom.scoring_models.cohere.testing import API_KEY, MODEL
from ragloom.testkit.wire import WireServer, delay, disconnect, raw, status, transform

QUERY = "oven bread temperature"
TEXTS = [
    "the ship sailed",
    "bread in the oven",
    "oven temperature for bread",
    "rooks and pawns",
    "bread",
]
EXPECTED = [0.0, 2 / 3, 1.0, 0.0, 1 / 3]


def test_request_follows_the_v2_schema(model: CohereScoringModel, server: WireServer) -> None:
    assert model.score_all(TEXTS, QUERY).scores == pytest.approx(EXPECTED)
    (request,) = server.requests
    assert request.path == "/v2/rerank"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.body == {"model": MODEL, "query": QUERY, "documents": TEXTS, "top_n": 5}


def test_max_tokens_per_doc_is_sent_and_cuts_documents(server: WireServer) -> None:
    with CohereScoringModel(
        MODEL, api_key=API_KEY, base_url=server.url, max_tokens_per_doc=2
    ) as model:
        scores = model.score_all(["once upon a time the oven", "oven first"], "oven").scores
    assert scores == [0.0, 1.0]
    assert server.bodies()[0]["max_tokens_per_doc"] == 2


def test_more_documents_than_a_batch_are_split(server: WireServer) -> None:
    texts = [f"document {i} about bread" if i % 3 else f"document {i}" for i in range(25)]
    with CohereScoringModel(MODEL, api_key=API_KEY, base_url=server.url) as whole:
        expected = whole.score_all(texts, "bread document").scores
    server.requests.clear()
    with CohereScoringModel(MODEL, api_key=API_KEY, base_url=server.url, batch_size=10) as model:
        assert model.score_all(texts, "bread document").scores == expected
    assert [len(b["documents"]) for b in server.bodies()] == [10, 10, 5]
    assert [b["documents"][0] for b in server.bodies()] == [texts[0], texts[10], texts[20]]


def test_top_n_keeps_the_global_best_and_scores_the_rest_zero(server: WireServer) -> None:
    texts = ["a b c", "a", "x", "a b", "y", "a b c d", "z"]
    with CohereScoringModel(
        MODEL, api_key=API_KEY, base_url=server.url, top_n=2, batch_size=3
    ) as model:
        scores = model.score_all(texts, "a b c d").scores
    assert scores == [0.75, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    assert [b["top_n"] for b in server.bodies()] == [2, 2, 1]


def test_reordered_results_are_mapped_back_by_index(
    model: CohereScoringModel, server: WireServer
) -> None:
    def reverse(body: Any) -> Any:
        return {**body, "results": body["results"][::-1]}

    server.script(transform(reverse))
    assert model.score_all(TEXTS, QUERY).scores == pytest.approx(EXPECTED)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda b: {**b, "results": b["results"][:-1]}, "4 results for top_n=5"),
        (lambda b: {**b, "results": b["results"][:-1] + b["results"][:1]}, "twice"),
        (
            lambda b: {**b, "results": [{**r, "index": r["index"] + 5} for r in b["results"]]},
            "index 7 for 5 documents",
        ),
        (
            lambda b: {**b, "results": [{**r, "relevance_score": "high"} for r in b["results"]]},
            "'high' \\(not a number\\)",
        ),
        (lambda b: {"id": "x"}, "without a results list"),
    ],
)
def test_broken_answers_raise_a_response_error(
    model: CohereScoringModel, server: WireServer, change: Any, message: str
) -> None:
    server.script(transform(change))
    with pytest.raises(ScoringResponseError, match=message) as raised:
        model.score_all(TEXTS, QUERY)
    assert MODEL in str(raised.value)
    assert isinstance(raised.value, RetrievalError)


def test_a_body_that_is_not_json(model: CohereScoringModel, server: WireServer) -> None:
    server.script(raw(b"<html>gateway</html>", "text/html"))
    with pytest.raises(ScoringResponseError, match="not JSON: '<html>gateway</html>'"):
        model.score_all(TEXTS, QUERY)


def test_401_names_status_model_and_key_source_never_the_key(server: WireServer) -> None:
    model = CohereScoringModel(MODEL, api_key="wrong-key-123456", base_url=server.url)
    with model, pytest.raises(ScoringAuthenticationError) as raised:
        model.score_all(TEXTS, QUERY)
    message = str(raised.value)
    for part in ("HTTP 401", MODEL, "invalid api token", "the api_key argument"):
        assert part in message
    assert "wrong-key" not in message
    assert (raised.value.status_code, raised.value.model) == (401, MODEL)
    assert len(server.requests) == 1  # not retried


def test_key_from_the_environment(server: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COHERE_API_KEY", API_KEY)
    with CohereScoringModel(MODEL, base_url=server.url) as model:
        assert model.score_all(TEXTS, QUERY).scores == pytest.approx(EXPECTED)


def test_unknown_model_is_a_status_error_with_the_server_message(server: WireServer) -> None:
    model = CohereScoringModel("rerank-v9", api_key=API_KEY, base_url=server.url)
    with model, pytest.raises(ScoringStatusError, match="HTTP 404: model 'rerank-v9' not found"):
        model.score_all(TEXTS, QUERY)


def test_429_honours_retry_after_then_succeeds(
    model: CohereScoringModel, server: WireServer, sleeps: list[float]
) -> None:
    server.script(status(429, {"message": "too many requests"}, {"Retry-After": "3"}))
    assert model.score_all(TEXTS, QUERY).scores == pytest.approx(EXPECTED)
    assert sleeps == [3.0]
    assert len(server.requests) == 2


def test_429_on_every_attempt(
    model: CohereScoringModel, server: WireServer, sleeps: list[float]
) -> None:
    server.script(*[status(429, {"message": "trial key limit"})] * 3)
    with pytest.raises(ScoringRateLimitError) as raised:
        model.score_all(TEXTS, QUERY)
    assert "rate limited (HTTP 429) after 3 attempts: trial key limit" in str(raised.value)
    assert raised.value.status_code == 429
    assert MODEL in str(raised.value)
    assert sleeps == [0.5, 1.0]


def test_a_retry_after_beyond_the_policy_is_not_waited(
    model: CohereScoringModel, server: WireServer, sleeps: list[float]
) -> None:
    server.script(status(429, {"message": "slow"}, {"Retry-After": "3600"}))
    with pytest.raises(ScoringRateLimitError, match="asked to retry after 3600 s"):
        model.score_all(TEXTS, QUERY)
    assert sleeps == []
    assert len(server.requests) == 1


def test_5xx_is_retried_then_reported(
    model: CohereScoringModel, server: WireServer, sleeps: list[float]
) -> None:
    server.script(status(503, {"message": "overloaded"}))
    assert model.score_all(TEXTS, QUERY).scores == pytest.approx(EXPECTED)
    server.script(*[status(500, {"message": "internal"})] * 3)
    with pytest.raises(ScoringServerError, match="server error \\(HTTP 500\\) after 3 attempts"):
        model.score_all(TEXTS, QUERY)


def test_a_dropped_connection_is_retried(
    model: CohereScoringModel, server: WireServer, sleeps: list[float]
) -> None:
    server.script(disconnect())
    assert model.score_all(TEXTS, QUERY).scores == pytest.approx(EXPECTED)
    assert sleeps == [0.5]


def test_timeout(server: WireServer) -> None:
    server.script(delay(2.0))
    with (
        CohereScoringModel(
            MODEL,
            api_key=API_KEY,
            base_url=server.url,
            timeout=0.3,
            retry=RetryPolicy(max_retries=0),
        ) as model,
        pytest.raises(ScoringTimeoutError, match="no answer within the timeout"),
    ):
        model.score_all(TEXTS, QUERY)


def test_no_server(retry: RetryPolicy) -> None:
    with (
        CohereScoringModel(
            MODEL, api_key=API_KEY, base_url="http://127.0.0.1:9", retry=retry
        ) as model,
        pytest.raises(ScoringConnectionError, match="cannot reach the server \\(3 attempts\\)"),
    ):
        model.score_all(TEXTS, QUERY)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"batch_size": 0}, "batch_size must be an int from 1 to 10000"),
        ({"batch_size": 10_001}, "batch_size must be an int from 1 to 10000"),
        ({"top_n": 0}, "top_n must be a positive int"),
        ({"max_tokens_per_doc": 1.5}, "max_tokens_per_doc must be a positive int"),
        ({"base_url": "api.cohere.com"}, "base_url must be an http"),
        ({"timeout": 0}, "timeout must be a number > 0"),
        ({"api_key": ""}, "needs an API key: pass api_key= or set CO_API_KEY"),
        ({"api_key": "two words"}, "whitespace"),
    ],
)
def test_bad_settings(kwargs: dict[str, Any], message: str) -> None:
    settings: dict[str, Any] = {"api_key": API_KEY, **kwargs}
    with pytest.raises(InvalidArgumentError, match=message):
        CohereScoringModel(MODEL, **settings)


def test_from_env(server: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(PluginError, match="set CO_API_KEY or COHERE_API_KEY"):
        CohereScoringModel.from_env()
    monkeypatch.setenv("CO_API_KEY", API_KEY)
    monkeypatch.setenv("RAGLOOM_COHERE_MODEL", "rerank-english-v3.0")
    monkeypatch.setenv("RAGLOOM_COHERE_BASE_URL", server.url)
    with CohereScoringModel.from_env() as model:
        assert model.model_name == "rerank-english-v3.0"
        assert model.score_all(TEXTS, QUERY).scores == pytest.approx(EXPECTED)


def test_entry_point_is_declared() -> None:
    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    group = pyproject["project"]["entry-points"]["ragloom.scoring_models"]
    assert group == {"cohere": "ragloom.scoring_models.cohere:CohereScoringModel.from_env"}
