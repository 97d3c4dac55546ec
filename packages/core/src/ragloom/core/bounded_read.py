"""Reading an HTTP body within a deadline and a size cap, for every HTTP client in ragloom.

A socket timeout bounds each read, not the call: a server dripping one byte per second
keeps a plain ``read()`` going for as long as it likes, and a huge body is held whole in
memory. :func:`read_within` reads chunk by chunk, stopping at the ``deadline`` (a
``time.monotonic()`` instant; at most one read later) or past ``max_bytes``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

__all__ = ["DEFAULT_MAX_RESPONSE_BYTES", "ResponseTooLargeError", "read_within"]

DEFAULT_MAX_RESPONSE_BYTES = 100 * 1024 * 1024
"""The default cap on one HTTP response body (100 MiB)."""


class ResponseTooLargeError(Exception):
    """Raised by :func:`read_within` past ``max_bytes``; callers turn it into their own
    ``RagloomError`` naming the URL (so it is no part of the public error tree)."""


def read_within(chunks: Iterable[bytes], *, deadline: float, max_bytes: int) -> bytes:
    """The chunks joined; :class:`TimeoutError` once ``time.monotonic()`` passes
    ``deadline``, :class:`ResponseTooLargeError` once more than ``max_bytes`` arrived."""
    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > max_bytes:
            raise ResponseTooLargeError(f"the answer is larger than max_bytes={max_bytes:,}")
        parts.append(chunk)
        if time.monotonic() > deadline:
            raise TimeoutError("no complete answer within the timeout")
    return b"".join(parts)
