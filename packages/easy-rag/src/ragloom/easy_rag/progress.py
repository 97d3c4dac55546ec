"""What the CLI shows while it works: a tqdm bar per phase on a terminal, plain
:class:`~ragloom.core.progress.LineProgress` lines when stderr is a pipe or a log, and
library warnings (pypdf's, say) captured per file instead of printed into the bar.

Showing is never the reason work is lost: a reader that closes the pipe early
(``ragloom ingest docs 2>&1 | head -1``) silences the output, not the ingest.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from ragloom.core.progress import LineProgress, PhaseProgress

__all__ = [
    "BarProgress",
    "PipeSafeProgress",
    "captured_warnings",
    "closed_pipe",
    "say",
    "terminal_progress",
]

#: The unit each phase counts.
UNITS = {"reading": "file", "splitting": "doc", "embedding": "segment"}


def closed_pipe(exc: BaseException) -> bool:
    """True for the error of writing to a pipe whose reader has gone (EPIPE)."""
    return isinstance(exc, BrokenPipeError) or (
        isinstance(exc, OSError) and exc.errno == errno.EPIPE
    )


def _silence(stream: TextIO) -> None:
    """Point ``stream``'s descriptor at /dev/null: later writes and the interpreter's
    exit flush of what is still buffered go nowhere instead of failing again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no descriptor (a StringIO): nothing to flush later
        pass


def say(text: str, stream: TextIO | None = None) -> bool:
    """Print ``text`` on ``stream`` (default stdout) and flush; ``False`` (and the stream
    silenced) when its reader has closed the pipe, so the caller's work goes on."""
    out = stream if stream is not None else sys.stdout
    try:
        print(text, file=out, flush=True)
    except OSError as exc:
        if not closed_pipe(exc):
            raise
        _silence(out)
        return False
    return True


class PipeSafeProgress:
    """A progress reporter that falls silent, instead of raising, once its stream's
    reader has gone: progress output must never stop the work it reports on."""

    def __init__(self, progress: PhaseProgress, stream: TextIO | None = None) -> None:
        self.progress = progress
        self.stream = stream
        self.closed = False

    def __call__(self, phase: str, done: int, total: int) -> None:
        if self.closed:
            return
        try:
            self.progress(phase, done, total)
        except OSError as exc:
            if not closed_pipe(exc):
                raise
            self.closed = True
            _silence(self.stream if self.stream is not None else sys.stderr)


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
        safe = PipeSafeProgress(bar)
        try:
            yield safe
        finally:
            if not safe.closed:
                with contextlib.suppress(BrokenPipeError):
                    bar.close()
    else:
        yield PipeSafeProgress(LineProgress())


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
