"""GoogleCloudStorageDocumentLoader passes the testkit suites unchanged, on a real server."""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

import pytest

from ragloom.core.document import URL, Document
from ragloom.core.loaders.result import LoadedDocuments
from ragloom.core.parsers.text import TextDocumentParser
from ragloom.loaders.google_cloud_storage import GoogleCloudStorageDocumentLoader
from ragloom.testkit import DocumentLoaderSuite

pytestmark = pytest.mark.integration

SERVER_URL = os.environ.get("RAGLOOM_GOOGLE_CLOUD_STORAGE_URL", "http://127.0.0.1:34326")
START_HINT = "bash scripts/services/google-cloud-storage.sh start"


@pytest.fixture(scope="session")
def server_url() -> str:
    """The server's URL; fails (never skips) with the command that starts it."""
    address = urlsplit(SERVER_URL)
    try:
        socket.create_connection((address.hostname, address.port), timeout=3).close()
    except OSError as exc:
        pytest.fail(
            f"google-cloud-storage is not reachable at {SERVER_URL}: {exc}\n"
            f"Start it with `{START_HINT}` (from the repository root), "
            "or set RAGLOOM_GOOGLE_CLOUD_STORAGE_URL to a running server.",
            pytrace=False,
        )
    return SERVER_URL


class GoogleCloudStorageHarness:
    """The suite's view of one fresh, empty location on the server."""

    def __init__(self, loader: GoogleCloudStorageDocumentLoader) -> None:
        self.loader = loader

    def put(self, name: str, data: bytes) -> None:
        raise NotImplementedError(
            f"implement me: store {len(data)} bytes as {name!r} on the test server "
            "with google-cloud-storage, so that the loader finds it"
        )

    def load_document(self, name: str, parser: TextDocumentParser) -> Document:
        return self.loader.load_document(name, parser)

    def load_documents(self, parser: TextDocumentParser) -> LoadedDocuments:
        return self.loader.load_documents(parser)

    def name_of(self, document: Document) -> str:
        return str(document.metadata[URL]).removeprefix(self.loader.url + "/")


class TestGoogleCloudStorageConformance(DocumentLoaderSuite):
    @pytest.fixture
    def harness(self, server_url: str) -> GoogleCloudStorageHarness:
        """implement me: point the loader at a fresh, empty location (bucket, folder) per test."""
        return GoogleCloudStorageHarness(GoogleCloudStorageDocumentLoader(server_url))
