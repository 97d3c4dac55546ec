"""Fixtures over the GCS emulator of scripts/services/google-cloud-storage.sh."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage

from ragloom.loaders.google_cloud_storage import GoogleCloudStorageDocumentLoader
from ragloom.loaders.google_cloud_storage.testing import DenyingProxy
from ragloom.testkit.servers import require_server, service_setting

SERVER_URL = service_setting("RAGLOOM_GOOGLE_CLOUD_STORAGE_URL")
START_HINT = "bash scripts/services/google-cloud-storage.sh start"


@pytest.fixture(scope="session")
def server_url() -> str:
    """The emulator's URL; fails (never skips) with the command that starts it."""
    return require_server(SERVER_URL, START_HINT, variable="RAGLOOM_GOOGLE_CLOUD_STORAGE_URL")


@pytest.fixture(scope="session")
def gcs(server_url: str) -> storage.Client:
    return storage.Client(
        project="ragloom",
        credentials=AnonymousCredentials(),
        client_options={"api_endpoint": server_url},
    )


@pytest.fixture
def bucket(gcs: storage.Client) -> Iterator[storage.Bucket]:
    """A fresh, empty bucket, deleted with its objects afterwards."""
    created = gcs.create_bucket(f"ragloom-{uuid.uuid4().hex[:12]}")
    yield created
    created.delete(force=True)


@pytest.fixture
def make_loader(server_url: str) -> Callable[..., GoogleCloudStorageDocumentLoader]:
    """Builds loaders of the emulator from keyword arguments."""
    return lambda **options: GoogleCloudStorageDocumentLoader(endpoint_url=server_url, **options)


@pytest.fixture
def denying_proxy(server_url: str) -> Iterator[DenyingProxy]:
    """A :class:`DenyingProxy` in front of the emulator, denying nothing yet."""
    with DenyingProxy(server_url) as proxy:
        yield proxy
