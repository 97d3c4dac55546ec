"""How HTTP clients retry: one :class:`RetryPolicy` and the server's ``Retry-After``.

Shared by every ragloom client of a remote API (chat-openai, the rerank clients through
:mod:`ragloom.core.scoring_batches`), so backoff, jitter and the limits on what a
server may ask for behave the same everywhere. No HTTP library is needed here.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ragloom.core.errors import InvalidArgumentError

__all__ = ["RetryPolicy", "retry_after", "retry_delay"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with jitter; the server's ``Retry-After`` is used as is.

    Retry ``n`` (0-based) waits ``min(max_delay, initial_delay * 2**n)`` seconds times a
    random factor in ``[1 - jitter, 1]``, unless the server sent ``Retry-After`` (seconds
    or an HTTP date) or ``retry-after-ms``. A server asking for more than
    ``max_retry_after`` seconds is not retried: the error says how long it asked for.
    ``sleep`` and ``async_sleep`` do the waiting (replaceable in tests).
    """

    max_retries: int = 2
    initial_delay: float = 0.5
    max_delay: float = 8.0
    jitter: float = 0.25
    max_retry_after: float = 60.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    async_sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep, repr=False)

    def __post_init__(self) -> None:
        if type(self.max_retries) is not int or self.max_retries < 0:
            raise InvalidArgumentError(
                f"max_retries must be a non-negative int, got {self.max_retries!r}"
            )
        for name in ("initial_delay", "max_delay", "max_retry_after"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not value >= 0 or math.isinf(value):
                raise InvalidArgumentError(f"{name} must be a finite number >= 0, got {value!r}")
        if not isinstance(self.jitter, int | float) or not 0 <= self.jitter <= 1:
            raise InvalidArgumentError(f"jitter must be between 0 and 1, got {self.jitter!r}")

    def backoff(self, retry: int) -> float:
        """The wait before retry number ``retry`` (0-based) without a Retry-After."""
        delay = min(self.max_delay, self.initial_delay * 2.0**retry)
        return float(delay * (1.0 - self.jitter * random.random()))


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The wait (s) a server asks for: ``retry-after-ms``, then ``Retry-After`` (s or date).

    Header names are matched case-insensitively; an unreadable value is ``None``."""
    lowered = {name.lower(): value for name, value in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis:
        try:
            value = float(millis) / 1000.0
        except ValueError:
            value = math.nan
        if math.isfinite(value):
            return max(0.0, value)
    text = lowered.get("retry-after", "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return max(0.0, (when - datetime.now(UTC)).total_seconds())
    return max(0.0, value) if math.isfinite(value) else None


def _retryable(status: int) -> bool:
    """408, 429 and 5xx: statuses worth another attempt."""
    return status in (408, 429) or status >= 500


def retry_delay(
    policy: RetryPolicy,
    status: int,
    headers: Mapping[str, str],
    retries: int,
    *,
    retryable: bool | None = None,
) -> tuple[float | None, str]:
    """The wait before retrying an answer of ``status`` after ``retries`` retries, or
    ``None`` with a note for the error message when it is not retried (not a retryable
    status, retries used up, or a ``Retry-After`` longer than ``max_retry_after``).

    ``retryable`` overrides the status rule (408, 429, 5xx) for APIs that say more, e.g.
    OpenAI's ``x-should-retry`` header."""
    if retryable is None:
        retryable = _retryable(status)
    if not retryable or retries >= policy.max_retries:
        return None, ""
    wait = retry_after(headers)
    if wait is None:
        return policy.backoff(retries), ""
    if wait > policy.max_retry_after:
        return None, (
            f" (the server asked to retry after {wait:g} s, more than "
            f"max_retry_after={policy.max_retry_after:g} s)"
        )
    return wait, ""
