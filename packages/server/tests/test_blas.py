"""The server caps numpy's BLAS threads (blas_threads, default 1): in-process and in a
real ``ragloom serve`` started with two BLAS threads in its environment."""

from __future__ import annotations

import re
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy  # noqa: F401  (loads the BLAS library the limit applies to)
import pytest
from threadpoolctl import threadpool_limits

from ragloom.server import ServerConfigError, ServerSettings
from ragloom.server.blas import blas_threads, limit_blas_threads

Served = tuple[subprocess.Popen[bytes], str]  # what conftest's ``serve`` returns


def test_limit_blas_threads_sets_each_loaded_library() -> None:
    assert blas_threads(), "numpy loads a BLAS library"
    with threadpool_limits(limits=2, user_api="blas"):  # restores the original on exit
        assert set(blas_threads().values()) == {2}
        limit_blas_threads(0)
        assert set(blas_threads().values()) == {2}
        limit_blas_threads(1)
        assert set(blas_threads().values()) == {1}


def test_blas_threads_setting_defaults_to_one_and_is_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert ServerSettings.load().blas_threads == 1
    monkeypatch.setenv("RAGLOOM_SERVER_BLAS_THREADS", "-1")
    with pytest.raises(ServerConfigError, match="blas_threads"):
        ServerSettings.load()


@pytest.mark.slow
def test_ragloom_serve_runs_with_one_blas_thread(
    copy_index: Callable[[Path], Path],
    serve: Callable[..., Served],
    tmp_path: Path,
) -> None:
    log = tmp_path / "server.log"
    process, _ = serve(copy_index(tmp_path), log, OPENBLAS_NUM_THREADS="2")
    try:
        lines = re.findall(r"ragloom: BLAS \S+: (\d+) thread", log.read_text())
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    assert lines
    assert set(lines) == {"1"}
