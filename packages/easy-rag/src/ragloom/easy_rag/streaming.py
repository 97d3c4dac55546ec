"""An answer streamed under a whole-call deadline, for ``ragloom ask``.

The library's per-attempt timeouts and retries (120 s x 3 for OpenAI-compatible
servers) suit a program; a person at a terminal wants the first words as they come, a
note when the model is slow to start, and a clear error well within a minute. The turn
runs on a worker thread; this thread relays its partial texts and keeps the deadline.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any, cast

from ragloom.core import ChatModelError, RagAssistant, Result

__all__ = ["DEFAULT_TIMEOUT", "WAIT_NOTICE", "AnswerTimeoutError", "stream_answer"]

DEFAULT_TIMEOUT = 30.0
"""Seconds ``ragloom ask`` gives one answer as a whole: a hosted model starts in a
second or two and a local one, loaded, within a few, so 30 s answers a few hundred
words yet reports a server that accepts and never answers in half a minute, not six."""

WAIT_NOTICE = 3.0
"""Seconds without a first word before "waiting for the chat model..." is shown."""


class AnswerTimeoutError(ChatModelError):
    """The chat model did not finish its answer within the whole-call deadline;
    ``partial`` is how many partial texts had arrived (0: none, the model never started)."""

    def __init__(self, message: str, *, partial: int) -> None:
        super().__init__(message)
        self.partial = partial


def stream_answer(
    assistant: RagAssistant,
    question: str,
    *,
    timeout: float,
    on_text: Callable[[str], object],
    on_wait: Callable[[], object],
    wait_notice: float | None = None,
) -> Result:
    """Answer ``question``: each partial text goes to ``on_text`` as it arrives,
    ``on_wait()`` is called once when no text has come after ``wait_notice`` seconds
    (default :data:`WAIT_NOTICE`), and :class:`AnswerTimeoutError` is raised when the
    whole answer, from the question to its last word, takes longer than ``timeout``
    seconds, however steadily its words come (the worker is abandoned: a daemon thread,
    ended with the process). The model's own errors are re-raised here.
    """
    notice = WAIT_NOTICE if wait_notice is None else wait_notice
    events: queue.Queue[tuple[str, Any]] = queue.Queue()

    def work() -> None:
        try:
            stream = assistant.stream(question)
            for text in stream:
                events.put(("text", text))
            events.put(("done", stream.result))
        except BaseException as exc:  # handed to the waiting thread, which raises it
            events.put(("error", exc))

    threading.Thread(target=work, name="ragloom-ask", daemon=True).start()
    start = time.monotonic()
    deadline, notice_at = start + timeout, start + notice
    waiting = True  # no text yet, notice not shown
    partial = 0
    while True:
        now = time.monotonic()
        if now >= deadline:
            raise AnswerTimeoutError(_timeout_message(assistant, timeout, partial), partial=partial)
        until = min(deadline, notice_at) if waiting else deadline
        try:
            kind, value = events.get(timeout=max(until - now, 0.0))
        except queue.Empty:
            if waiting and time.monotonic() >= notice_at:
                waiting = False
                on_wait()
            continue
        if kind == "text":
            waiting = False
            partial += 1
            on_text(value)
        elif kind == "done":
            return cast(Result, value)
        else:
            raise value


def _timeout_message(assistant: RagAssistant, timeout: float, partial: int) -> str:
    where = getattr(assistant.chat_model, "base_url", None)
    server = f" at {where}" if where else ""
    if partial:
        return (
            f"answer cut at {timeout:g} s: the chat model{server} had not finished "
            f"within {timeout:g} s (--timeout bounds the whole answer); raise --timeout "
            "for longer answers"
        )
    return (
        f"no complete answer from the chat model{server} within {timeout:g} s; check "
        "that the server is running and answering, or raise --timeout for a slow model"
    )
