"""read_within: an HTTP body within a deadline and a size cap."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from ragloom.core.bounded_read import ResponseTooLargeError, read_within


def drip(count: int, pause: float) -> Iterator[bytes]:
    for _ in range(count):
        time.sleep(pause)
        yield b"x"


def test_joins_the_chunks() -> None:
    assert read_within([b"ab", b"", b"c"], deadline=time.monotonic() + 5, max_bytes=3) == b"abc"


def test_a_drip_is_cut_off_at_the_deadline() -> None:
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        read_within(drip(100, 0.02), deadline=started + 0.2, max_bytes=1000)
    assert time.monotonic() - started < 1.0


def test_more_than_max_bytes_is_refused_before_the_rest_is_read() -> None:
    endless = iter(lambda: b"y" * 1024, None)
    with pytest.raises(ResponseTooLargeError, match="max_bytes=10,240"):
        read_within(endless, deadline=time.monotonic() + 5, max_bytes=10 * 1024)
