"""GoogleCloudStorageDocumentLoader on the emulator: what the testkit suites do not cover."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from google.cloud import storage

from ragloom.loaders.google_cloud_storage import GoogleCloudStorageDocumentLoader

pytestmark = pytest.mark.integration


def test_parallel_fetches_keep_their_connections(
    bucket: storage.Bucket,
    make_loader: Callable[..., GoogleCloudStorageDocumentLoader],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A connection per parallel fetch (the client's session pools only 10)."""
    loader = make_loader()
    for i in range(3 * loader.concurrency):
        bucket.blob(f"{i:02d}.txt").upload_from_string(b"text", content_type="text/plain")
    with caplog.at_level(logging.WARNING, logger="urllib3"):
        assert len(loader.load_documents(bucket.name)) == 3 * loader.concurrency
    assert "Connection pool is full" not in caplog.text
