"""One retry loop, written once as steps: attempts until one answers and is not retried.

Each attempt is itself a steps generator (see :mod:`ragloom.core.kit.steps`); between two
attempts the loop yields a :class:`Pause`, which the caller's driver waits out with the
policy's ``sleep`` (sync) or ``async_sleep`` (asyncio). So one loop serves the sync and the
async side, and every client retries alike:

- an **answer** is retried as :func:`~ragloom.core.retry.retry_delay` says: 408/429/5xx (or
  the caller's own rule), the server's ``Retry-After`` honoured up to ``max_retry_after``,
  else the policy's backoff with its jitter; the note it gives for an answer not retried
  travels with the result;
- a **failure** (an exception of the attempt) is retried after the policy's backoff when
  ``retried`` says so; else, or when the retries are used up, ``gave_up`` turns it into
  the error to raise (the attempt count in hand);
- **deadlines** stay the attempts' own: each attempt's steps bound their own time.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ragloom.core.retry import RetryPolicy, retry_delay

__all__ = ["Attempted", "Pause", "retrying"]

S = TypeVar("S")
A = TypeVar("A")


@dataclass(frozen=True, slots=True)
class Pause:
    """Wait ``seconds`` before the next attempt (``policy.sleep`` or ``policy.async_sleep``)."""

    policy: RetryPolicy
    seconds: float


@dataclass(frozen=True, slots=True)
class Attempted(Generic[A]):
    """The answer not retried, after ``attempts`` attempts; ``note`` says why it was not
    retried when the server asked for a longer wait than the policy allows."""

    answer: A
    attempts: int
    note: str


def _raised(exc: Exception, attempts: int) -> BaseException:
    return exc


def retrying(
    attempt: Callable[[], Generator[S, Any, A]],
    policy: RetryPolicy,
    *,
    status: Callable[[A], tuple[int, Mapping[str, str], bool | None]],
    retried: Callable[[Exception], bool],
    gave_up: Callable[[Exception, int], BaseException] = _raised,
) -> Generator[S | Pause, Any, Attempted[A]]:
    """Run ``attempt()`` until its answer is not retried, and return it with the count.

    ``status`` reads an answer: its HTTP status, headers, and whether the API says it is
    worth retrying (``None``: the usual status rule). ``retried`` says whether a failure is
    worth another attempt; ``gave_up(exc, attempts)`` is what is raised for a failure not
    retried (by default the failure itself; another exception is chained to it)."""
    attempts = 0
    while True:
        attempts += 1
        try:
            answer = yield from attempt()
        except Exception as exc:
            if not retried(exc) or attempts > policy.max_retries:
                error = gave_up(exc, attempts)
                if error is exc:
                    raise
                raise error from exc
            yield Pause(policy, policy.backoff(attempts - 1))
            continue
        code, headers, says = status(answer)
        delay, note = retry_delay(policy, code, headers, attempts - 1, retryable=says)
        if delay is None:
            return Attempted(answer, attempts, note)
        yield Pause(policy, delay)
