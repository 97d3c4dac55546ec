"""Client calls as data, so each store operation is written once.

An operation is a generator of steps: it yields the :class:`Call` objects it needs and
receives their results (``MilvusClient`` and ``AsyncMilvusClient`` take the same
arguments). :func:`ragloom.core.aio.run_steps` runs it on the sync client,
:func:`ragloom.core.aio.arun_steps` on the async one: request building, filters, type
checks and result handling are shared.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, NamedTuple, TypeVar

T = TypeVar("T")


class Call(NamedTuple):
    """``client.<method>(*args, **kwargs)``; ``what`` names it in error messages."""

    what: str
    method: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def call(what: str, method: str, *args: Any, **kwargs: Any) -> Call:
    return Call(what, method, args, kwargs)


Steps = Generator[Call, Any, T]
"""An operation: yields calls, is sent their results, returns its own result."""
