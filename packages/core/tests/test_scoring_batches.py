"""The rerank-client helpers: Retry-After, server messages, index mapping, batching, and
the retry loop (driven by a scripted send function; the HTTP side is tested in the
scoring packages against local servers)."""

from __future__ import annotations

import email.utils
import time

import pytest

from ragloom.core.embedding import TokenUsage
from ragloom.core.errors import InvalidArgumentError, RetrievalError
from ragloom.core.scoring_batches import (
    Reply,
    RerankEndpoint,
    RetryPolicy,
    ScoringConnectionError,
    ScoringResponseError,
    ScoringServerError,
    ScoringStatusError,
    TransportFailure,
    batches,
    retry_after,
    score_in_batches,
    scores_in_input_order,
    server_message,
)

ENDPOINT = RerankEndpoint("Test", "http://127.0.0.1:1/rerank", "m-1")


def test_retry_after_forms() -> None:
    assert retry_after({"Retry-After": "3"}) == 3.0
    assert retry_after({"retry-after-ms": "250", "Retry-After": "9"}) == 0.25
    assert retry_after({"RETRY-AFTER": "-5"}) == 0.0
    assert retry_after({"Retry-After": "soon"}) is None
    assert retry_after({}) is None
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < (retry_after({"Retry-After": later}) or 0) <= 30


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"message": "invalid api token"}', "invalid api token"),
        (
            b'{"error": "Model is overloaded", "error_type": "overloaded"}',
            "Model is overloaded [overloaded]",
        ),
        (b'{"error": {"message": "bad model", "type": "NotFound"}}', "bad model"),
        (
            b'{"object": "error", "message": "no", "type": "BadRequestError"}',
            "no [BadRequestError]",
        ),
        (b'{"detail": [{"loc": ["body"], "msg": "x"}]}', '[{"loc": ["body"], "msg": "x"}]'),
        (b"Bad Gateway", "'Bad Gateway'"),
        (b"", "(empty body)"),
    ],
)
def test_server_message(body: bytes, expected: str) -> None:
    assert server_message(body) == expected


def test_scores_in_input_order_maps_back_and_refuses_broken_answers() -> None:
    assert scores_in_input_order([(2, 0.9), (0, 0.5), (1, 0.1)], 3, ENDPOINT) == [0.5, 0.1, 0.9]
    assert scores_in_input_order([(2, 1)], 3, ENDPOINT, required=1) == [0.0, 0.0, 1.0]
    for pairs, message in [
        ([(0, 0.5)], "1 scores for 3 documents sent .truncated answer; missing indexes 1, 2"),
        ([(0, 0.5), (0, 0.4), (1, 0.1)], "document 0 twice"),
        ([(3, 0.5)], "index 3 for 3 documents"),
        ([(True, 0.5)], "index True"),
        ([(0, float("nan"))], "score nan"),
        ([(0, True)], "True .not a number."),
    ]:
        with pytest.raises(ScoringResponseError, match=message) as raised:
            scores_in_input_order(pairs, 3, ENDPOINT)
        assert str(raised.value).startswith("Test rerank (model 'm-1') at http://127.0.0.1:1")


def test_batches_and_usage_sum() -> None:
    assert [list(b) for b in batches(5, 2)] == [[0, 1], [2, 3], [4]]
    calls: list[list[str]] = []

    def score(texts: list[str]) -> tuple[list[float], TokenUsage | None]:
        calls.append(texts)
        return [float(len(t)) for t in texts], TokenUsage(len(texts), 0)

    result = score_in_batches(["a", "bb", "ccc"], 2, score)
    assert result.scores == [1.0, 2.0, 3.0]
    assert calls == [["a", "bb"], ["ccc"]]
    assert result.token_usage == TokenUsage(3, 0)
    with pytest.raises(RetrievalError, match="a batch of 2 texts got 1 scores"):
        score_in_batches(["a", "b"], 2, lambda texts: ([1.0], None))


def scripted(*outcomes: Reply | TransportFailure) -> tuple[list[int], object]:
    seen: list[int] = []
    queue = list(outcomes)

    def send() -> Reply:
        seen.append(1)
        outcome = queue.pop(0)
        if isinstance(outcome, TransportFailure):
            raise outcome
        return outcome

    return seen, send


def test_call_retries_then_returns_json() -> None:
    waits: list[float] = []
    endpoint = RerankEndpoint("Test", "u", "m", RetryPolicy(jitter=0.0, sleep=waits.append))
    seen, send = scripted(
        TransportFailure("refused"),
        Reply(503, {"Retry-After": "2"}, b""),
        Reply(200, {}, b'{"ok": 1}'),
    )
    assert endpoint.call(send) == {"ok": 1}  # type: ignore[arg-type]
    assert waits == [0.5, 2.0]
    assert len(seen) == 3


def test_call_errors() -> None:
    endpoint = RerankEndpoint("Test", "u", "m", RetryPolicy(max_retries=1, sleep=lambda s: None))
    _, send = scripted(Reply(500, {}, b"x"), Reply(500, {}, b'{"message": "boom"}'))
    with pytest.raises(ScoringServerError, match="HTTP 500\\) after 2 attempts: boom"):
        endpoint.call(send)  # type: ignore[arg-type]
    seen, send = scripted(Reply(400, {}, b'{"message": "bad"}'))
    with pytest.raises(ScoringStatusError, match="HTTP 400: bad") as raised:
        endpoint.call(send)  # type: ignore[arg-type]
    assert len(seen) == 1
    assert raised.value.status_code == 400
    _, send = scripted(TransportFailure("refused"), TransportFailure("refused"))
    with pytest.raises(ScoringConnectionError, match="cannot reach the server \\(2 attempts\\)"):
        endpoint.call(send)  # type: ignore[arg-type]


def test_policy_validation() -> None:
    with pytest.raises(InvalidArgumentError, match="max_retries"):
        RetryPolicy(max_retries=-1)
    with pytest.raises(InvalidArgumentError, match="jitter"):
        RetryPolicy(jitter=2)
    assert RetryPolicy(jitter=0.0).backoff(10) == 8.0
