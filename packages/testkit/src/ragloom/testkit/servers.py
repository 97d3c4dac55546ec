"""Helpers for integration tests against the real local servers of scripts/services/.

``service_setting`` is where a test finds a server: the address scripts/services/env.sh
derives from the ``RAGLOOM_*_PORT`` variables (the same code the service scripts run, so a
moved port moves both), or the environment's own value pointing elsewhere.
``require_server`` is the check every such test fixture starts with: the server answers,
or the test fails (never skips) with the command that starts it. ``deny_object_reads``
gives a real 403 on an S3-compatible server (moto enforces a bucket policy's explicit
Deny on object requests whoever asks, with or without IAM checks), and
``assert_denied_alone`` checks what a bulk load made of it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from ragloom.core.errors import ObjectStoreAccessError
from ragloom.core.loaders.result import LoadedDocuments

__all__ = [
    "assert_denied_alone",
    "deny_object_reads",
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
