"""HttpScoringModel against local TEI and Jina-style (vLLM, Infinity) wire-format
servers: request shapes, batching, truncated/reordered/corrupt answers, errors, retries."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

import pytest

from ragloom.core.embedding import TokenUsage
from ragloom.core.errors import InvalidArgumentError, PluginError
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
from ragloom.scoring_models.http import HttpScoringModel
from ragloom.scoring_models.http.testing import JINA_MODEL, logit, tei_server
from ragloom.testkit.wire import WireServer, delay, disconnect, raw, status, transform

QUERY = "oven bread temperature"
TEXTS = ["the ship sailed", "bread in the oven", "oven temperature for bread", "bread"]
SHARES = [0.0, 2 / 3, 1.0, 1 / 3]
SIGMOIDS = [1 / (1 + math.exp(-logit(s))) for s in SHARES]


def tei_model(server: WireServer, **kwargs: Any) -> HttpScoringModel:
    return HttpScoringModel(server.url, api="tei", **kwargs)


def jina_model(server: WireServer, **kwargs: Any) -> HttpScoringModel:
    return HttpScoringModel(server.url + "/v1", api="jina", **kwargs)


# -- text-embeddings-inference -----------------------------------------------------------


def test_tei_request_and_sigmoid_scores(tei: WireServer) -> None:
    with tei_model(tei) as model:
        result = model.score_all(TEXTS, QUERY)
    assert result.scores == pytest.approx(SIGMOIDS)
    assert result.token_usage is None
    (request,) = tei.requests
    assert request.path == "/rerank"
    assert request.body == {"query": QUERY, "texts": TEXTS, "truncate": True, "raw_scores": False}
    assert "authorization" not in request.headers


def test_tei_raw_scores(tei: WireServer) -> None:
    with tei_model(tei, raw_scores=True) as model:
        assert model.score_all(TEXTS, QUERY).scores == pytest.approx([logit(s) for s in SHARES])


def test_tei_batches_under_its_client_batch_limit(tei: WireServer) -> None:
    texts = [f"text {i} bread" if i % 2 else f"text {i}" for i in range(70)]
    with tei_model(tei) as model:
        scores = model.score_all(texts, "bread").scores
    assert scores == pytest.approx([SIGMOIDS[2] if i % 2 else SIGMOIDS[0] for i in range(70)])
    assert [len(b["texts"]) for b in tei.bodies()] == [32, 32, 6]


def test_tei_over_its_batch_limit_names_the_limit(tei: WireServer) -> None:
    with (
        tei_model(tei, batch_size=40) as model,
        pytest.raises(
            ScoringStatusError,
            match="HTTP 422: batch size 40 > maximum allowed batch size 32 \\[Validation\\]",
        ) as raised,
    ):
        model.score_all(["x"] * 40, "x")
    assert raised.value.status_code == 422
    assert "text-embeddings-inference rerank at http://127.0.0.1" in str(raised.value)


def test_tei_without_truncation_refuses_long_texts(tei: WireServer) -> None:
    long_text = "word " * 600
    with (
        tei_model(tei, truncate=False) as model,
        pytest.raises(ScoringStatusError, match="HTTP 413: Input validation error"),
    ):
        model.score_all([long_text], "word")
    with tei_model(tei) as model:
        assert len(model.score_all([long_text], "word").scores) == 1


def test_tei_reordered_answer_is_mapped_back(tei: WireServer) -> None:
    tei.script(transform(lambda ranks: ranks[::-1]))
    with tei_model(tei) as model:
        assert model.score_all(TEXTS, QUERY).scores == pytest.approx(SIGMOIDS)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda ranks: ranks[:2], "2 scores for 4 documents sent .truncated answer; missing"),
        (lambda ranks: [{**r, "index": -1} for r in ranks], "index -1 for 4 documents"),
        (lambda ranks: {"ranks": ranks}, "not a list of \\{index, score\\} objects"),
        (lambda ranks: [{**r, "score": None} for r in ranks], "None .not a number."),
    ],
)
def test_tei_broken_answers(tei: WireServer, change: Any, message: str) -> None:
    tei.script(transform(change))
    with tei_model(tei) as model, pytest.raises(ScoringResponseError, match=message):
        model.score_all(TEXTS, QUERY)


def test_tei_overloaded_429_is_retried(
    tei: WireServer, retry: RetryPolicy, sleeps: list[float]
) -> None:
    tei.script(status(429, {"error": "Model is overloaded", "error_type": "overloaded"}))
    with tei_model(tei, retry=retry) as model:
        assert model.score_all(TEXTS, QUERY).scores == pytest.approx(SIGMOIDS)
    assert sleeps == [0.5]
    tei.script(*[status(429, {"error": "Model is overloaded", "error_type": "overloaded"})] * 3)
    with (
        tei_model(tei, retry=retry) as model,
        pytest.raises(
            ScoringRateLimitError, match="after 3 attempts: Model is overloaded \\[overloaded\\]"
        ),
    ):
        model.score_all(TEXTS, QUERY)


def test_tei_api_key(retry: RetryPolicy) -> None:
    with tei_server(api_key="s3cret-token") as server:
        with (
            tei_model(server, retry=retry) as model,
            pytest.raises(
                ScoringAuthenticationError,
                match="authentication failed \\(HTTP 401\\): Unauthorized",
            ),
        ):
            model.score_all(TEXTS, QUERY)
        assert len(server.requests) == 1
        with tei_model(server, api_key="s3cret-token") as model:
            assert model.score_all(TEXTS, QUERY).scores == pytest.approx(SIGMOIDS)


# -- Jina-style: vLLM, Infinity --------------------------------------------------------


def test_jina_request_scores_and_usage(jina: WireServer) -> None:
    with jina_model(jina, model_name=JINA_MODEL) as model:
        result = model.score_all(TEXTS, QUERY)
    assert result.scores == pytest.approx(SHARES)
    words = sum(3 + len(t.split()) for t in TEXTS)
    assert result.token_usage == TokenUsage(input_token_count=words, total_token_count=words)
    (request,) = jina.requests
    assert request.path == "/v1/rerank"
    assert request.body == {
        "model": JINA_MODEL,
        "query": QUERY,
        "documents": TEXTS,
        "top_n": 4,
        "return_documents": False,
    }


def test_jina_at_the_infinity_path_without_model(jina: WireServer) -> None:
    with HttpScoringModel(jina.url, api="jina") as model:
        assert model.score_all(TEXTS, QUERY).scores == pytest.approx(SHARES)
    assert jina.requests[0].path == "/rerank"
    assert "model" not in jina.bodies()[0]


def test_jina_batches_and_adds_usage(jina: WireServer) -> None:
    texts = TEXTS * 5
    with jina_model(jina, batch_size=6) as model:
        result = model.score_all(texts, QUERY)
    assert result.scores == pytest.approx(SHARES * 5)
    assert [len(b["documents"]) for b in jina.bodies()] == [6, 6, 6, 2]
    words = sum(3 + len(t.split()) for t in texts)
    assert result.token_usage is not None
    assert result.token_usage.total_token_count == words


def test_jina_reordered_and_truncated(jina: WireServer) -> None:
    jina.script(transform(lambda body: {**body, "results": body["results"][::-1]}))
    with jina_model(jina) as model:
        assert model.score_all(TEXTS, QUERY).scores == pytest.approx(SHARES)
        jina.script(transform(lambda body: {**body, "results": body["results"][:3]}))
        with pytest.raises(ScoringResponseError, match="3 scores for 4 documents"):
            model.score_all(TEXTS, QUERY)


def test_jina_unknown_model(jina: WireServer) -> None:
    with (
        jina_model(jina, model_name="other/model") as model,
        pytest.raises(
            ScoringStatusError,
            match="model 'other/model'.*HTTP 404: The model `other/model` does not exist. "
            "\\[NotFoundError\\]",
        ),
    ):
        model.score_all(TEXTS, QUERY)


def test_jina_5xx_retry_after_then_error(
    jina: WireServer, retry: RetryPolicy, sleeps: list[float]
) -> None:
    jina.script(status(503, {"error": {"message": "warming up"}}, {"Retry-After": "2"}))
    with jina_model(jina, retry=retry) as model:
        assert model.score_all(TEXTS, QUERY).scores == pytest.approx(SHARES)
        assert sleeps == [2.0]
        jina.script(*[status(502, "Bad Gateway")] * 3)
        with pytest.raises(ScoringServerError, match="HTTP 502\\) after 3 attempts: 'Bad Gateway'"):
            model.score_all(TEXTS, QUERY)


def test_jina_not_json(jina: WireServer) -> None:
    jina.script(raw(b'{"results": [', "application/json"))
    with jina_model(jina) as model, pytest.raises(ScoringResponseError, match="not JSON"):
        model.score_all(TEXTS, QUERY)


# -- both ------------------------------------------------------------------------------


def test_timeout_and_dropped_connection(tei: WireServer, sleeps: list[float]) -> None:
    tei.script(disconnect())
    policy = RetryPolicy(max_retries=1, jitter=0.0, sleep=sleeps.append)
    with tei_model(tei, retry=policy) as model:
        assert model.score_all(TEXTS, QUERY).scores == pytest.approx(SIGMOIDS)
    tei.script(delay(2.0))
    with (
        tei_model(tei, timeout=0.3, retry=RetryPolicy(max_retries=0)) as model,
        pytest.raises(ScoringTimeoutError, match="no answer within the timeout"),
    ):
        model.score_all(TEXTS, QUERY)


def test_no_server(retry: RetryPolicy) -> None:
    with (
        HttpScoringModel("http://127.0.0.1:9", retry=retry) as model,
        pytest.raises(ScoringConnectionError, match="cannot reach the server \\(3 attempts\\)"),
    ):
        model.score_all(TEXTS, QUERY)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"api": "cohere"}, "api must be 'tei' or 'jina'"),
        ({"batch_size": 0}, "batch_size must be an int from 1 to 10000"),
        ({"model_name": "m"}, "model_name is not part of text-embeddings-inference"),
        ({"timeout": -1}, "timeout must be a number > 0"),
    ],
)
def test_bad_settings(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        HttpScoringModel("http://127.0.0.1:1", **kwargs)


def test_from_env(jina: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(PluginError, match="set RAGLOOM_RERANK_URL"):
        HttpScoringModel.from_env()
    monkeypatch.setenv("RAGLOOM_RERANK_URL", jina.url + "/v1")
    monkeypatch.setenv("RAGLOOM_RERANK_API", "vllm")
    with pytest.raises(PluginError, match="RAGLOOM_RERANK_API must be 'tei' or 'jina'"):
        HttpScoringModel.from_env()
    monkeypatch.setenv("RAGLOOM_RERANK_API", "jina")
    monkeypatch.setenv("RAGLOOM_RERANK_MODEL", JINA_MODEL)
    monkeypatch.setenv("RAGLOOM_RERANK_BATCH_SIZE", "3")
    with HttpScoringModel.from_env() as model:
        assert model.score_all(TEXTS, QUERY).scores == pytest.approx(SHARES)
    assert [len(b["documents"]) for b in jina.bodies()] == [3, 1]


def test_entry_point_is_declared() -> None:
    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    group = pyproject["project"]["entry-points"]["ragloom.scoring_models"]
    assert group == {"http": "ragloom.scoring_models.http:HttpScoringModel.from_env"}
