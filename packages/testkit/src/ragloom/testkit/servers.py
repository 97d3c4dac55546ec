"""Helpers for integration tests against the real local servers of scripts/services/.

``require_server`` is the check every such test fixture starts with: the server answers,
or the test fails (never skips) with the command that starts it. ``deny_object_reads``
gives a real 403 on an S3-compatible server (moto enforces a bucket policy's explicit
Deny on object requests whoever asks, with or without IAM checks), and
``assert_denied_alone`` checks what a bulk load made of it.
"""

from __future__ import annotations

import json
import socket
from typing import Any
from urllib.parse import urlsplit

import pytest

from ragloom.core.errors import ObjectStoreAccessError
from ragloom.core.loaders.result import LoadedDocuments

__all__ = ["assert_denied_alone", "deny_object_reads", "require_server"]


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
