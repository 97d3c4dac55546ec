"""Damaged-file cases run one by one in forks, so a crash is that case's outcome.

A runner script (run by :func:`run_runner` in a fresh interpreter with one BLAS/OpenMP
thread) builds a clean store once, then calls :func:`outcome` per damaged copy: the
case runs in a fork of the runner under an address-space limit and reports a line of
text: what the case said, ``error:names`` for a ragloom error naming the file
(``error:unnamed:...`` otherwise), ``raw:...`` for any other exception, and
``signal:SIGSEGV`` (or another signal) when the fork died.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from ragloom.core import RagloomError

__all__ = ["LIMIT", "outcome", "run_runner"]

LIMIT = 1 << 30  # address space a case may add to the runner's


def outcome(case: Callable[[], str], name: str, limit: int = LIMIT) -> str:
    """Run ``case`` in a fork limited to ``limit`` more bytes of address space and return
    its outcome (see the module docstring); ``name`` is the file an error must name."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(reader)
        with open("/proc/self/statm") as f:
            vm = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        resource.setrlimit(resource.RLIMIT_AS, (vm + limit, vm + limit))
        try:
            result = case()
        except RagloomError as exc:
            result = "error:" + ("names" if name in str(exc) else "unnamed:" + str(exc))
        except BaseException as exc:
            result = f"raw:{type(exc).__name__}:{exc}"[:300]
        os.write(writer, result.encode())
        os._exit(0)
    os.close(writer)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(reader, "rb") as f:
        said = f.read().decode()
    if os.WIFSIGNALED(status):
        return f"signal:{signal.Signals(os.WTERMSIG(status)).name}"
    return said or f"exit:{os.waitstatus_to_exitcode(status)}"


def run_runner(runner: str, *args: str, timeout: float) -> list[list[str]]:
    """Run a runner script (its last stdout line: a JSON list of cases) with ``args``,
    one BLAS/OpenMP thread and this folder importable; its cases."""
    env = {
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(Path(__file__).resolve().parent),
    }
    result = subprocess.run(
        [sys.executable, "-c", runner, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    cases: list[list[str]] = json.loads(result.stdout.strip().splitlines()[-1])
    return cases
