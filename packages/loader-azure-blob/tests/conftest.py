"""Fixtures over Azurite, started by scripts/services/azure-blob.sh."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest
from azure.storage.blob import BlobServiceClient, ContainerClient

from ragloom.loaders.azure_blob import AzureBlobStorageDocumentLoader
from ragloom.testkit.servers import require_server, service_setting

SERVER_URL = service_setting("RAGLOOM_AZURE_BLOB_URL")
START_HINT = "bash scripts/services/azure-blob.sh start"
# Azurite's well-known development account (public, documented by Microsoft).
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


@pytest.fixture(scope="session")
def connection_string() -> Callable[..., str]:
    """Builds the development account's connection string (with another key if given)."""
    return _connection_string


def _connection_string(key: str = ACCOUNT_KEY) -> str:
    return (
        f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={key};"
        f"BlobEndpoint={SERVER_URL}/{ACCOUNT};"
    )


@pytest.fixture(scope="session")
def server_url() -> str:
    """Azurite's URL; fails (never skips) with the command that starts it."""
    return require_server(SERVER_URL, START_HINT, variable="RAGLOOM_AZURE_BLOB_URL")


@pytest.fixture(scope="session")
def service(server_url: str) -> BlobServiceClient:
    return BlobServiceClient.from_connection_string(_connection_string())


@pytest.fixture
def container(service: BlobServiceClient) -> Iterator[ContainerClient]:
    """A fresh, empty container, deleted afterwards."""
    client = service.create_container(f"ragloom-{uuid.uuid4().hex[:12]}")
    yield client
    client.delete_container()


@pytest.fixture
def loader(server_url: str) -> AzureBlobStorageDocumentLoader:
    """The loader under test, built from a connection string."""
    return AzureBlobStorageDocumentLoader(connection_string=_connection_string())
