"""Retries with exponential backoff and jitter, Retry-After honoured; no real sleeping.

The retry policy's ``sleep``/``async_sleep`` record the waits (``Sleeps``), so the tests
check the exact schedule and the number of requests the server saw.
"""

from __future__ import annotations

import asyncio
import email.utils
import time

import pytest
from openai_helpers import Sleeps, chat_error, chat_model

from ragloom.chat_models.openai import OpenAiChatModel, RetryPolicy
from ragloom.chat_models.openai.testing import WireServer, disconnect, status
from ragloom.core.chat import UserMessage
from ragloom.core.errors import ChatModelError
from ragloom.core.kit.http import HttpErrorKind

HELLO = [UserMessage("hello there")]


def test_429_with_retry_after_then_success(server: WireServer, sleeps: Sleeps) -> None:
    server.script(status(429, headers={"Retry-After": "3"}))
    response = chat_model(server, sleeps).chat(HELLO)
    assert response.text == "Echo: hello there"
    assert sleeps == [3.0]
    assert len(server.requests) == 2


def test_retry_after_ms_wins_over_retry_after(server: WireServer, sleeps: Sleeps) -> None:
    server.script(status(429, headers={"retry-after-ms": "250", "Retry-After": "9"}))
    chat_model(server, sleeps).chat(HELLO)
    assert sleeps == [0.25]


def test_retry_after_as_an_http_date(server: WireServer, sleeps: Sleeps) -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    server.script(status(503, headers={"Retry-After": when}))
    chat_model(server, sleeps).chat(HELLO)
    (wait,) = sleeps
    assert 25 <= wait <= 31


def test_unparsable_retry_after_falls_back_to_backoff(server: WireServer, sleeps: Sleeps) -> None:
    server.script(status(429, headers={"Retry-After": "soon"}))
    chat_model(server, sleeps).chat(HELLO)
    assert sleeps == [0.5]


def test_5xx_backoff_doubles(server: WireServer, sleeps: Sleeps) -> None:
    server.script(status(500), status(502), status(503))
    model = chat_model(server, retry_policy=sleeps.policy(max_retries=3))
    assert model.chat(HELLO).text == "Echo: hello there"
    assert sleeps == [0.5, 1.0, 2.0]
    assert len(server.requests) == 4


def test_backoff_is_capped(server: WireServer, sleeps: Sleeps) -> None:
    server.script(*[status(500)] * 4)
    policy = sleeps.policy(max_retries=4, initial_delay=1.0, max_delay=3.0)
    chat_model(server, retry_policy=policy).chat(HELLO)
    assert sleeps == [1.0, 2.0, 3.0, 3.0]


def test_jitter_shortens_each_wait_by_at_most_its_fraction(
    server: WireServer, sleeps: Sleeps
) -> None:
    server.script(*[status(503)] * 6)
    policy = sleeps.policy(max_retries=6, jitter=0.25, max_delay=100.0)
    chat_model(server, retry_policy=policy).chat(HELLO)
    bases = [0.5 * 2**n for n in range(6)]
    assert len(sleeps) == 6
    for wait, base in zip(sleeps, bases, strict=True):
        assert 0.75 * base <= wait <= base
    assert len(set(sleeps)) > 1


def test_retries_run_out(server: WireServer, sleeps: Sleeps) -> None:
    server.script(*[status(500, {"error": {"message": "boom"}})] * 3)
    with chat_error(HttpErrorKind.SERVER) as caught:
        chat_model(server, sleeps).chat(HELLO)
    assert caught.value.status_code == 500
    assert "HTTP 500 Internal Server Error" in str(caught.value)
    assert "after 3 attempts" in str(caught.value)
    assert "boom" in str(caught.value)
    assert isinstance(caught.value, ChatModelError)
    assert len(server.requests) == 3
    assert sleeps == [0.5, 1.0]


def test_rate_limit_runs_out(server: WireServer, sleeps: Sleeps) -> None:
    server.script(*[status(429, headers={"Retry-After": "1"})] * 3)
    with chat_error(
        HttpErrorKind.RATE_LIMIT, match=r"rate limited \(HTTP 429\).*after 3 attempts", status=429
    ):
        chat_model(server, sleeps).chat(HELLO)
    assert sleeps == [1.0, 1.0]


def test_retry_after_beyond_the_limit_is_not_waited_for(server: WireServer, sleeps: Sleeps) -> None:
    server.script(status(429, headers={"Retry-After": "3600"}))
    with chat_error(
        HttpErrorKind.RATE_LIMIT, match="asked to retry after 3600 s", status=429
    ) as caught:
        chat_model(server, sleeps).chat(HELLO)
    assert "max_retry_after=60 s" in str(caught.value)
    assert sleeps == []
    assert len(server.requests) == 1


def test_x_should_retry_overrides_the_status(server: WireServer, sleeps: Sleeps) -> None:
    server.script(status(500, headers={"x-should-retry": "false"}))
    with chat_error(HttpErrorKind.SERVER, status=500):
        chat_model(server, sleeps).chat(HELLO)
    server.script(status(400, headers={"x-should-retry": "true"}))
    assert chat_model(server, sleeps).chat(HELLO).text == "Echo: hello there"
    assert sleeps == [0.5]


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        (400, HttpErrorKind.STATUS),
        (401, HttpErrorKind.AUTHENTICATION),
        (403, HttpErrorKind.AUTHENTICATION),
        (404, HttpErrorKind.STATUS),
        (422, HttpErrorKind.STATUS),
    ],
)
def test_client_errors_are_not_retried(
    server: WireServer, sleeps: Sleeps, code: int, kind: HttpErrorKind
) -> None:
    server.script(status(code))
    with chat_error(kind, status=code):
        chat_model(server, sleeps).chat(HELLO)
    assert sleeps == []
    assert len(server.requests) == 1


@pytest.mark.parametrize("code", [408, 409, 429, 500, 502, 503, 504, 529])
def test_transient_statuses_are_retried(server: WireServer, sleeps: Sleeps, code: int) -> None:
    server.script(status(code))
    assert chat_model(server, sleeps).chat(HELLO).text == "Echo: hello there"
    assert len(sleeps) == 1


def test_dropped_connection_is_retried(server: WireServer, sleeps: Sleeps) -> None:
    server.script(disconnect(), disconnect())
    assert chat_model(server, sleeps).chat(HELLO).text == "Echo: hello there"
    assert sleeps == [0.5, 1.0]
    assert len(server.requests) == 3


def test_no_retries(server: WireServer, sleeps: Sleeps) -> None:
    server.script(status(503))
    with chat_error(HttpErrorKind.SERVER, match="HTTP 503", status=503):
        chat_model(server, retry_policy=sleeps.policy(max_retries=0)).chat(HELLO)
    assert sleeps == []


def test_max_retries_argument_overrides_the_policy(server: WireServer, sleeps: Sleeps) -> None:
    model = chat_model(server, retry_policy=sleeps.policy(max_retries=5), max_retries=1)
    assert model.retry_policy.max_retries == 1
    assert model.retry_policy.sleep == sleeps.sleep
    server.script(status(500), status(500))
    with chat_error(HttpErrorKind.SERVER, status=500):
        model.chat(HELLO)
    assert sleeps == [0.5]


def test_stream_retries_before_the_first_byte(server: WireServer, sleeps: Sleeps) -> None:
    server.script(status(503, headers={"Retry-After": "2"}), disconnect())
    stream = chat_model(server, sleeps).stream(HELLO)
    assert list(stream) == ["Echo: ", "hello ", "there"]
    assert sleeps == [2.0, 1.0]


def test_async_calls_retry_with_the_async_sleep(server: WireServer) -> None:
    waits: list[tuple[str, float]] = []

    def sync_sleep(seconds: float) -> None:
        waits.append(("sync", seconds))

    async def async_sleep(seconds: float) -> None:
        waits.append(("async", seconds))

    policy = RetryPolicy(sleep=sync_sleep, async_sleep=async_sleep, jitter=0.0)
    model = chat_model(server, retry_policy=policy)

    async def run() -> tuple[str, str]:
        server.script(status(429, headers={"Retry-After": "1"}))
        first = await model.achat(HELLO)
        server.script(status(500), status(502))
        second = await model.astream(HELLO).collect()
        return first.text, second.text

    assert asyncio.run(run()) == ("Echo: hello there", "Echo: hello there")
    assert waits == [("async", 1.0), ("async", 0.5), ("async", 1.0)]


def test_default_sleep_really_waits(server: WireServer) -> None:
    """Once with the real time.sleep (tiny delays), to prove the default path works."""
    server.script(status(500), status(500))
    model = chat_model(server, retry_policy=RetryPolicy(initial_delay=0.01, jitter=0.0))
    started = time.monotonic()
    assert model.chat(HELLO).text == "Echo: hello there"
    assert time.monotonic() - started >= 0.03


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"max_retries": -1}, "max_retries"),
        ({"max_retries": 1.5}, "max_retries"),
        ({"initial_delay": -1}, "initial_delay"),
        ({"max_delay": float("inf")}, "max_delay"),
        ({"max_retry_after": float("nan")}, "max_retry_after"),
        ({"jitter": 2}, "jitter"),
    ],
)
def test_policy_validation(settings: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RetryPolicy(**settings)  # type: ignore[arg-type]


def test_default_policy() -> None:
    model = OpenAiChatModel(base_url="http://127.0.0.1:1/v1", model_name="m")
    policy = model.retry_policy
    assert (policy.max_retries, policy.initial_delay, policy.max_delay) == (2, 0.5, 8.0)
    assert (policy.jitter, policy.max_retry_after) == (0.25, 60.0)
    assert policy.sleep is time.sleep
