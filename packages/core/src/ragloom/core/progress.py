"""Progress of long phases (parsing, splitting, embedding, evaluating).

Components report ``(done, total)`` through a :data:`ProgressCallback`; a front end that
shows several phases takes a :data:`PhaseProgress` ``(phase, done, total)``.
:class:`LineProgress` is the plain-text reporter for logs and pipes (no terminal
control codes): one line per phase at most every ``interval`` seconds, and the last.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["LineProgress", "PhaseProgress", "ProgressCallback", "phase"]

ProgressCallback = Callable[[int, int], None]
"""Called as ``callback(done, total)`` as work advances."""

PhaseProgress = Callable[[str, int, int], None]
"""Called as ``progress(phase, done, total)``, e.g. ``("embedding", 120, 500)``."""


def phase(progress: PhaseProgress | None, name: str) -> ProgressCallback | None:
    """The :data:`ProgressCallback` reporting to ``progress`` as phase ``name``."""
    if progress is None:
        return None

    def report(done: int, total: int) -> None:
        progress(name, done, total)

    return report


class LineProgress:
    """Writes ``prefix: phase done/total (pct%)`` lines to ``stream`` (default stderr).

    A phase's first report, its last (``done == total``) and at most one line every
    ``interval`` seconds in between: a log of a long run stays short and readable.
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        interval: float = 5.0,
        prefix: str = "ragloom",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.interval = interval
        self.prefix = prefix
        self.clock = clock
        self._shown: tuple[str, int] | None = None  # (phase, done) of the last line
        self._last = float("-inf")

    def __call__(self, phase: str, done: int, total: int) -> None:
        now = self.clock()
        new = self._shown is None or phase != self._shown[0]
        if (phase, done) == self._shown or not (
            new or done >= total or now - self._last >= self.interval
        ):
            return
        self._shown, self._last = (phase, done), now
        percent = f" ({100 * done // total}%)" if total else ""
        stream = self.stream if self.stream is not None else sys.stderr
        print(f"{self.prefix}: {phase} {done}/{total}{percent}", file=stream, flush=True)
