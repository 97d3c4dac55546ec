"""Admission limits that sit below the routes: a token bucket per API key, and uvicorn's
h11 protocol with a deadline on each request's headers (slow clients are cut)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["MAX_HEADER_BYTES", "TokenBucket", "header_deadline_protocol"]

MAX_HEADER_BYTES = 16 * 1024  # h11's cap on a request line plus headers: larger is a 400


class TokenBucket:
    """``rate`` tokens a second, at most ``burst`` saved up; each request takes one."""

    def __init__(
        self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._at = clock()

    def take(self) -> float:
        """``0.0`` when a token was taken, else the seconds until one will be there."""
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return 0.0
        return (1.0 - self._tokens) / self.rate


def header_deadline_protocol(timeout: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol, closing a connection whose next request's headers are not
    complete ``timeout`` seconds after it opened or after its last response. uvicorn has
    no such deadline, so a client dripping its headers (slowloris) would hold a connection
    (and a place under ``limit_concurrency``) forever. Bodies have the app's deadline."""

    class HeaderDeadlineProtocol(H11Protocol):
        _timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.cycle is not None and not self.cycle.response_complete:
                self._disarm()  # headers complete: the request is the app's now

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._timer = self.loop.call_later(timeout, self._expire)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _expire(self) -> None:
            self._timer = None
            if self.cycle is None or self.cycle.response_complete:
                self.transport.close()

    return HeaderDeadlineProtocol
