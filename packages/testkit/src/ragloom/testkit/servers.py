"""Helpers for integration tests against the real local servers of scripts/services/.

``service_setting`` is where a test finds a server: the address scripts/services/env.sh
derives from the ``RAGLOOM_*_PORT`` variables (the same code the service scripts run, so a
moved port moves both), or the environment's own value pointing elsewhere.
``require_server`` is the check every such test fixture starts with: the server answers,
or the test fails (never skips) with the command that starts it. ``deny_object_reads``
gives a real 403 on an S3-compatible server (moto enforces a bucket policy's explicit
Deny on object requests whoever asks, with or without IAM checks), and
``assert_denied_alone`` checks what a bulk load made of it. ``exclusive_data`` serialises
test sessions that empty and refill a server's one shared data set (FalkorDB's graph).
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest

from ragloom.core.errors import ObjectStoreAccessError
from ragloom.core.loaders.result import LoadedDocuments

__all__ = [
    "assert_denied_alone",
    "deny_object_reads",
    "exclusive_data",
    "local_service_setting",
    "require_server",
    "service_setting",
]

ENV_SCRIPT = Path("scripts") / "services" / "env.sh"
# What env.sh derives (it keeps a value already set); ports and RAGLOOM_SERVICES_DIR are
# its inputs.
_DERIVED_SUFFIXES = ("_URL", "_DSN", "_ADDRESS")


def _env_script() -> Path:
    """scripts/services/env.sh of the repository around the working directory (or this file)."""
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        for folder in (start, *start.parents):
            if (folder / ENV_SCRIPT).is_file():
                return folder / ENV_SCRIPT
    pytest.fail(
        f"{ENV_SCRIPT} (the test servers' ports) not found above {Path.cwd()}: "
        "run the tests from the ragloom repository",
        pytrace=False,
    )


def _local_settings() -> dict[str, str]:
    """env.sh's RAGLOOM_* values from the environment's ports alone (addresses not inherited)."""
    inherited = {
        name: value
        for name, value in os.environ.items()
        if not (name.startswith("RAGLOOM_") and name.endswith(_DERIVED_SUFFIXES))
    }
    done = subprocess.run(
        ["bash", "-c", 'source "$1" && env -0', "env.sh", str(_env_script())],
        env=inherited,
        capture_output=True,
        check=True,
    )
    pairs = (item.partition("=") for item in done.stdout.decode().split("\0") if item)
    return {name: value for name, _, value in pairs if name.startswith("RAGLOOM_")}


def local_service_setting(variable: str) -> str:
    """What env.sh derives for ``variable`` from the ports: the server scripts/services/ runs.

    ``variable`` set in the environment is ignored here (see ``service_setting``).
    """
    settings = _local_settings()
    if variable not in settings:
        known = ", ".join(sorted(settings))
        pytest.fail(f"{variable} is not defined by {ENV_SCRIPT} ({known})", pytrace=False)
    return settings[variable]


def service_setting(variable: str) -> str:
    """``variable`` from the environment (a server elsewhere), else env.sh's local one.

    E.g. ``service_setting("RAGLOOM_PG_DSN")`` is the DSN of the pgvector.sh server on
    ``$RAGLOOM_PG_PORT`` (default in env.sh) unless ``RAGLOOM_PG_DSN`` is set.
    """
    local = local_service_setting(variable)
    return os.environ.get(variable) or local


def require_server(url: str, start: str, *, variable: str | None = None) -> str:
    """``url`` when something listens there; else fail naming ``start`` (a command).

    ``variable`` names the environment variable that points the tests elsewhere.
    """
    address = urlsplit(url)
    try:
        socket.create_connection((address.hostname, address.port), timeout=3).close()
    except OSError as exc:
        elsewhere = f", or set {variable} to a running server" if variable else ""
        pytest.fail(
            f"no server is reachable at {url}: {exc}\n"
            f"Start it with `{start}` (from the repository root){elsewhere}.",
            pytrace=False,
        )
    return url


_HELD: dict[Path, int] = {}
"""The data locks this process holds, with how many ``exclusive_data`` blocks hold each."""


@contextmanager
def exclusive_data(variable: str, *, reset: str, wait: float = 900.0) -> Iterator[str]:
    """Hold, across processes, the lock of the data of the server ``variable`` names.

    For a server with one data set that tests empty and refill (FalkorDB serves one graph
    whatever the database name): a second session waits for the first instead of deleting
    its data, and nobody restarts the shared server. Once the lock is held, ``reset`` (a
    command run from the repository root) empties the local server's data, schema too;
    a server elsewhere (``variable`` set) is left as it is. Yields the server's address.
    The lock is a ``flock`` under ``$RAGLOOM_SERVICES_DIR/locks/``, released when its
    holder ends, even killed; waiting longer than ``wait`` seconds fails naming it. Within
    one process the lock is re-entrant (one pytest session runs several suites that each
    take it, one after another: each gets the data emptied again).
    """
    url = service_setting(variable)
    folder = Path(local_service_setting("RAGLOOM_SERVICES_DIR")) / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{quote(url, safe='')}.lock"
    if path in _HELD:  # this process holds it already
        _HELD[path] += 1
        try:
            if variable not in os.environ:
                _run_reset(reset)
            yield url
        finally:
            _HELD[path] -= 1
        return
    with path.open("a") as handle:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    pytest.fail(
                        f"the data of {url} stayed in use by another test session for "
                        f"{wait:.0f} s (lock {path})",
                        pytrace=False,
                    )
                time.sleep(0.2)
        _HELD[path] = 1
        try:
            if variable not in os.environ:
                _run_reset(reset)
            yield url
        finally:
            del _HELD[path]
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run_reset(command: str) -> None:
    """Run ``command`` from the repository root; fail with its output if it fails."""
    root = _env_script().parents[2]
    done = subprocess.run(
        shlex.split(command), cwd=root, capture_output=True, text=True, timeout=60, check=False
    )
    if done.returncode:
        pytest.fail(
            f"`{command}` (emptying the test server's data) failed with exit code "
            f"{done.returncode}: {(done.stdout + done.stderr).strip()}",
            pytrace=False,
        )


def deny_object_reads(s3: Any, bucket: str, key: str) -> None:
    """Put a bucket policy denying everyone ``s3:GetObject`` on ``key`` (a boto3 client)."""
    deny = {
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:GetObject",
        "Resource": f"arn:aws:s3:::{bucket}/{key}",
    }
    policy = {"Version": "2012-10-17", "Statement": [deny]}
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps(policy))


def assert_denied_alone(documents: LoadedDocuments, uri: str, kept: list[str]) -> None:
    """The one failure of a bulk load is ``uri``, denied; the documents are ``kept`` (texts)."""
    assert sorted(document.text for document in documents) == sorted(kept)
    assert [failure.source for failure in documents.failures] == [uri]
    assert isinstance(documents.failures[0].error, ObjectStoreAccessError)
