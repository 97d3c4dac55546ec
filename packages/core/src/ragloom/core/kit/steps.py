"""Steps: an operation written once for a sync and an async client.

A component whose sync and async clients take the same calls writes each operation as
:data:`Steps`: a generator that yields the :class:`ClientCall` objects it needs and receives
their results (or has their errors thrown in). :func:`run_steps` drives it on the sync client,
:func:`arun_steps` on the async one, so the request building and result handling are shared
(the remote-store base and the bounded HTTP client are written this way).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, NamedTuple, TypeAlias, TypeVar

__all__ = ["ClientCall", "Steps", "arun_steps", "run_steps"]

C = TypeVar("C")
R = TypeVar("R")


class ClientCall(NamedTuple):
    """``client.<method>(*args, **kwargs)`` as data; ``what`` names it in error messages."""

    what: str
    method: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]

    @classmethod
    def of(cls, what: str, method: str, *args: Any, **kwargs: Any) -> ClientCall:
        return cls(what, method, args, kwargs)


Steps: TypeAlias = Generator[ClientCall, Any, R]
"""An operation written once: yields client calls, is sent their results, returns its own."""


def run_steps(steps: Generator[C, Any, R], perform: Callable[[C], Any]) -> R:
    """Drive an operation written as steps: ``perform`` each call ``steps`` yields, send
    its result back (or throw its exception in), and return what ``steps`` returns."""
    result: Any = None
    error: Exception | None = None
    while True:
        try:
            call = steps.send(result) if error is None else steps.throw(error)
        except StopIteration as stop:
            value: R = stop.value
            return value
        try:
            result, error = perform(call), None
        except Exception as exc:
            result, error = None, exc


async def arun_steps(steps: Generator[C, Any, R], perform: Callable[[C], Awaitable[Any]]) -> R:
    """:func:`run_steps` with a coroutine ``perform`` (a cancellation is not thrown into
    ``steps``: it ends the operation where it waits)."""
    result: Any = None
    error: Exception | None = None
    while True:
        try:
            call = steps.send(result) if error is None else steps.throw(error)
        except StopIteration as stop:
            value: R = stop.value
            return value
        try:
            result, error = await perform(call), None
        except Exception as exc:
            result, error = None, exc
