"""What the CLI shows while it works: a tqdm bar per phase on a terminal, plain
:class:`~ragloom.core.progress.LineProgress` lines when stderr is a pipe or a log, and
library warnings (pypdf's, say) captured per file instead of printed into the bar."""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from ragloom.core.progress import LineProgress, PhaseProgress

__all__ = ["BarProgress", "captured_warnings", "terminal_progress"]

#: The unit each phase counts.
UNITS = {"reading": "file", "splitting": "doc", "embedding": "segment"}


class BarProgress:
    """One tqdm bar per phase on ``stream``; a new phase closes the previous bar."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream
        self._phase: str | None = None
        self._bar: Any = None

    def __call__(self, phase: str, done: int, total: int) -> None:
        if phase != self._phase:
            from tqdm import tqdm  # the CLI's dependency, imported when a bar is shown

            self.close()
            unit = UNITS.get(phase, "query" if phase.startswith("evaluating") else "item")
            stream = self.stream if self.stream is not None else sys.stderr
            self._bar = tqdm(desc=phase, total=total, unit=unit, file=stream)
            self._phase = phase
        self._bar.total = total
        self._bar.n = done
        self._bar.refresh()

    def close(self) -> None:
        """Close the current bar (the terminal line stays)."""
        if self._bar is not None:
            self._bar.close()
        self._phase, self._bar = None, None


@contextmanager
def terminal_progress(quiet: bool = False) -> Iterator[PhaseProgress | None]:
    """The progress reporter for stderr: a bar on a terminal, lines otherwise, none
    when ``quiet``; bars are closed on exit."""
    if quiet:
        yield None
    elif sys.stderr.isatty():
        bar = BarProgress()
        try:
            yield bar
        finally:
            bar.close()
    else:
        yield LineProgress()


class _Collector(logging.Handler):
    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        # ragloom's own messages name their file already; a library's get its logger name
        origin = "" if record.name.startswith("ragloom.") else f"{record.name}: "
        self.into.append(origin + record.getMessage())


@contextmanager
def captured_warnings() -> Iterator[list[str]]:
    """Collect the ``warnings`` and WARNING+ log records raised inside the block.

    Each becomes one line (``UserWarning: ...``, ``pypdf._reader: ...``) in the yielded
    list instead of being printed: the caller reports them with the file they came from.
    Handlers the application configured still see the log records.
    """
    caught: list[str] = []
    handler = _Collector(caught)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as raised:
            warnings.simplefilter("always")
            yield caught
    finally:
        root.removeHandler(handler)
    caught.extend(f"{w.category.__name__}: {w.message}" for w in raised)
