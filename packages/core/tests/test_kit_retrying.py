"""ragloom.core.kit.retrying: the one retry loop, driven here by run_steps on scripted answers."""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from typing import Any

import pytest

from ragloom.core.kit.retrying import Attempted, Pause, retrying
from ragloom.core.kit.steps import run_steps
from ragloom.core.retry import RetryPolicy

Answer = tuple[int, Mapping[str, str]]


class Lost(Exception):
    """A scripted failure worth retrying."""


class Refused(Exception):
    """A scripted failure not worth retrying."""


def run(
    script: list[Answer | Exception],
    policy: RetryPolicy,
    gave_up: Callable[[Exception, int], BaseException] | None = None,
) -> tuple[Attempted[Answer], list[float], int]:
    """The loop over ``script`` (one entry an attempt), its pauses and attempts made."""
    pauses: list[float] = []
    made = 0

    def attempt() -> Generator[str, Any, Answer]:
        outcome = yield "send"
        if isinstance(outcome, Exception):
            raise outcome
        answer: Answer = outcome
        return answer

    def perform(step: str | Pause) -> Any:
        nonlocal made
        if isinstance(step, Pause):
            assert step.policy is policy
            pauses.append(step.seconds)
            return None
        made += 1
        outcome = script.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    options: dict[str, Any] = {} if gave_up is None else {"gave_up": gave_up}
    steps = retrying(
        attempt,
        policy,
        status=lambda answer: (answer[0], answer[1], None),
        retried=lambda exc: isinstance(exc, Lost),
        **options,
    )
    return run_steps(steps, perform), pauses, made


def test_retry_after_is_honoured_and_backoff_doubles() -> None:
    policy = RetryPolicy(max_retries=3, initial_delay=0.5, jitter=0.0)
    done, pauses, made = run([Lost(), (503, {"Retry-After": "2"}), (500, {}), (200, {})], policy)
    assert (done.answer, done.attempts, done.note) == ((200, {}), 4, "")
    assert pauses == [0.5, 2.0, 2.0]  # backoff(0), the server's 2 s, backoff(2)
    assert made == 4


def test_jitter_shortens_the_backoff_within_its_bound() -> None:
    policy = RetryPolicy(max_retries=40, initial_delay=1.0, max_delay=1.0, jitter=0.5)
    script: list[Answer | Exception] = [Lost() for _ in range(40)]
    _, pauses, _ = run([*script, (200, {})], policy)
    assert all(0.5 <= pause <= 1.0 for pause in pauses)
    assert len(set(pauses)) > 1


def test_a_longer_retry_after_than_allowed_ends_with_its_note() -> None:
    policy = RetryPolicy(max_retries=3, max_retry_after=5.0)
    done, pauses, _ = run([(429, {"Retry-After": "30"})], policy)
    assert (done.answer[0], done.attempts, pauses) == (429, 1, [])
    assert "asked to retry after 30 s, more than max_retry_after=5 s" in done.note


def test_failures_end_with_the_attempts_made() -> None:
    policy = RetryPolicy(max_retries=1, jitter=0.0)

    def gave_up(exc: Exception, attempts: int) -> BaseException:
        return RuntimeError(f"{attempts} attempts: {exc!r}")

    with pytest.raises(RuntimeError, match="2 attempts: Lost") as raised:
        run([Lost(), Lost(), (200, {})], policy, gave_up)
    assert isinstance(raised.value.__cause__, Lost)
    with pytest.raises(Refused):  # not retried: raised as it is, at once
        run([Refused(), (200, {})], policy)
