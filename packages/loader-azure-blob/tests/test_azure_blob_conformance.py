"""AzureBlobDocumentLoader passes the testkit suites unchanged, on a real server."""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

import pytest

from ragloom.core.document import URL, Document
from ragloom.core.loaders.result import LoadedDocuments
from ragloom.core.parsers.text import TextDocumentParser
from ragloom.loaders.azure_blob import AzureBlobDocumentLoader
from ragloom.testkit import DocumentLoaderSuite

pytestmark = pytest.mark.integration

SERVER_URL = os.environ.get("RAGLOOM_AZURE_BLOB_URL", "http://127.0.0.1:28329")
START_HINT = "bash scripts/services/azure-blob.sh start"


@pytest.fixture(scope="session")
def server_url() -> str:
    """The server's URL; fails (never skips) with the command that starts it."""
    address = urlsplit(SERVER_URL)
    try:
        socket.create_connection((address.hostname, address.port), timeout=3).close()
    except OSError as exc:
        pytest.fail(
            f"azure-blob is not reachable at {SERVER_URL}: {exc}\n"
            f"Start it with `{START_HINT}` (from the repository root), "
            "or set RAGLOOM_AZURE_BLOB_URL to a running server.",
            pytrace=False,
        )
    return SERVER_URL


class AzureBlobHarness:
    """The suite's view of one fresh, empty location on the server."""

    def __init__(self, loader: AzureBlobDocumentLoader) -> None:
        self.loader = loader

    def put(self, name: str, data: bytes) -> None:
        raise NotImplementedError(
            f"implement me: store {len(data)} bytes as {name!r} on the test server "
            "with azure-storage-blob, so that the loader finds it"
        )

    def load_document(self, name: str, parser: TextDocumentParser) -> Document:
        return self.loader.load_document(name, parser)

    def load_documents(self, parser: TextDocumentParser) -> LoadedDocuments:
        return self.loader.load_documents(parser)

    def name_of(self, document: Document) -> str:
        return str(document.metadata[URL]).removeprefix(self.loader.url + "/")


class TestAzureBlobConformance(DocumentLoaderSuite):
    @pytest.fixture
    def harness(self, server_url: str) -> AzureBlobHarness:
        """implement me: point the loader at a fresh, empty location (bucket, folder) per test."""
        return AzureBlobHarness(AzureBlobDocumentLoader(server_url))
