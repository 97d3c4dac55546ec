"""AzureBlobStorageDocumentLoader on Azurite: real 403s, URLs, client options."""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from azure.storage.blob import (
    BlobServiceClient,
    ContainerClient,
    ContainerSasPermissions,
    generate_container_sas,
)

from ragloom.core.loaders.blob import ObjectStoreAccessError, ObjectStoreUnavailableError
from ragloom.loaders.azure_blob import AzureBlobStorageDocumentLoader

pytestmark = pytest.mark.integration

ACCOUNT = "devstoreaccount1"


def test_wrong_account_key_is_an_access_error_naming_the_container(
    container: ContainerClient, connection_string: Callable[..., str]
) -> None:
    wrong = base64.b64encode(b"not the key" * 6).decode()
    loader = AzureBlobStorageDocumentLoader(connection_string=connection_string(wrong))
    with pytest.raises(ObjectStoreAccessError, match=container.container_name):
        loader.load_documents(container.container_name)


def test_sas_without_read_permission_fails_per_object(
    container: ContainerClient, server_url: str, connection_string: Callable[..., str]
) -> None:
    """A SAS that may list but not read: each object is a 403 failure, nothing is lost."""
    container.upload_blob("a.txt", b"a")
    container.upload_blob("b.txt", b"b")
    key = connection_string().split("AccountKey=")[1].split(";")[0]
    sas = generate_container_sas(
        ACCOUNT,
        container.container_name,
        account_key=key,
        permission=ContainerSasPermissions(list=True),
        expiry=datetime.now(UTC) + timedelta(hours=1),
    )
    loader = AzureBlobStorageDocumentLoader(account_url=f"{server_url}/{ACCOUNT}", credential=sas)
    documents = loader.load_documents(container.container_name)
    assert list(documents) == []
    assert [f.source for f in documents.failures] == [
        f"{server_url}/{ACCOUNT}/{container.container_name}/a.txt",
        f"{server_url}/{ACCOUNT}/{container.container_name}/b.txt",
    ]
    assert all(isinstance(f.error, ObjectStoreAccessError) for f in documents.failures)


def test_url_metadata_is_the_blob_url_without_sas(
    container: ContainerClient, loader: AzureBlobStorageDocumentLoader, server_url: str
) -> None:
    container.upload_blob("dir/with space.txt", b"spaced")
    document = loader.load_document(container.container_name, "dir/with space.txt")
    assert document.metadata["url"] == (
        f"{server_url}/{ACCOUNT}/{container.container_name}/dir/with%20space.txt"
    )
    assert document.metadata["key"] == "dir/with space.txt"


def test_client_passed_in(container: ContainerClient, service: BlobServiceClient) -> None:
    container.upload_blob("x.txt", b"via client")
    loader = AzureBlobStorageDocumentLoader(service)
    assert loader.load_document(container.container_name, "x.txt").text == "via client"


def test_unreachable_endpoint_is_a_clear_error() -> None:
    loader = AzureBlobStorageDocumentLoader(
        account_url=f"http://127.0.0.1:9/{ACCOUNT}", credential=None, retry_total=0
    )
    with pytest.raises(ObjectStoreUnavailableError, match="'any'"):
        loader.load_documents("any")


def test_parallel_fetches_keep_their_connections(
    container: ContainerClient,
    loader: AzureBlobStorageDocumentLoader,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A connection per parallel fetch (azure-core's session pools only 10)."""
    for i in range(3 * loader.concurrency):
        container.upload_blob(f"{i:02d}.txt", b"text")
    with caplog.at_level(logging.WARNING, logger="urllib3"):
        assert len(loader.load_documents(container.container_name)) == 3 * loader.concurrency
    assert "Connection pool is full" not in caplog.text
