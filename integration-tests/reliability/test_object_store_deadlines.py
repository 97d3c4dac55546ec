"""Object-store loaders against an endpoint that accepts and never answers (issue 32, item 8).

Before: S3 held the caller 181 s, Azure 322 s, GCS 121 s, and no loader took a timeout.
Now each takes ``timeout`` (one object's fetch, or one listing page, as a whole, retries
included) and raises :class:`ObjectStoreUnavailableError` (a ``DocumentLoadError``)
naming the object or bucket once it has passed. Also: without credentials, boto3 and
google-auth ask the instance metadata service (169.254.169.254);
``instance_metadata=False`` keeps them off it. Connections are intercepted in-process:
nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest

from ragloom.core.errors import (
    InvalidArgumentError,
    ObjectStoreAccessError,
    ObjectStoreUnavailableError,
)
from ragloom.core.loaders.blob import ObjectStoreDocumentLoader
from ragloom.loaders.amazon_s3 import AmazonS3DocumentLoader
from ragloom.loaders.azure_blob import AzureBlobStorageDocumentLoader
from ragloom.loaders.google_cloud_storage import GoogleCloudStorageDocumentLoader
from ragloom.loaders.tencent_cos import TencentCosDocumentLoader

TIMEOUT = 2.0
MARGIN = 1.0  # thread start-up, the error's construction, a loaded test machine
METADATA_ADDRESS = "169.254.169.254"
# An Azurite-style account key (any base64 will do: nothing is ever answered).
AZURE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


class HangServer:
    """A TCP server on 127.0.0.1 that accepts every connection and never answers."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        with suppress(OSError):  # the listener closed
            while True:
                connection, _ = self.listener.accept()
                self.accepted.append(connection)

    def __enter__(self) -> HangServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.listener.close()
        for connection in self.accepted:
            connection.close()


@pytest.fixture(scope="module")
def hang() -> Iterator[HangServer]:
    with HangServer() as server:
        yield server


def _s3(url: str) -> ObjectStoreDocumentLoader:
    return AmazonS3DocumentLoader(
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        timeout=TIMEOUT,
    )


def _azure(url: str) -> ObjectStoreDocumentLoader:
    return AzureBlobStorageDocumentLoader(
        connection_string=(
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
            f"AccountKey={AZURE_KEY};BlobEndpoint={url}/devstoreaccount1;"
        ),
        timeout=TIMEOUT,
    )


def _gcs(url: str) -> ObjectStoreDocumentLoader:
    return GoogleCloudStorageDocumentLoader(endpoint_url=url, timeout=TIMEOUT)


def _cos(url: str) -> ObjectStoreDocumentLoader:
    return TencentCosDocumentLoader(
        endpoint_url=url, secret_id="testing", secret_key="testing", timeout=TIMEOUT
    )


LOADERS: dict[str, Callable[[str], ObjectStoreDocumentLoader]] = {
    "amazon-s3": _s3,
    "azure-blob": _azure,
    "google-cloud-storage": _gcs,
    "tencent-cos": _cos,
}


def _timed(call: Callable[[], Any]) -> tuple[ObjectStoreUnavailableError, float]:
    start = time.monotonic()
    with pytest.raises(ObjectStoreUnavailableError) as caught:
        call()
    return caught.value, time.monotonic() - start


@pytest.mark.parametrize("name", LOADERS)
def test_a_silent_endpoint_fails_the_object_within_the_timeout(name: str, hang: HangServer) -> None:
    loader = LOADERS[name](f"http://127.0.0.1:{hang.port}")
    error, elapsed = _timed(lambda: loader.load_document("bucket-1250000000", "docs/a.md"))
    assert elapsed < TIMEOUT + MARGIN, f"{name}: {elapsed:.1f} s, timeout={TIMEOUT:g} s"
    assert loader.uri("bucket-1250000000", "docs/a.md") in str(error)


@pytest.mark.parametrize("name", LOADERS)
def test_a_silent_endpoint_fails_the_listing_within_the_timeout(
    name: str, hang: HangServer
) -> None:
    loader = LOADERS[name](f"http://127.0.0.1:{hang.port}")
    error, elapsed = _timed(lambda: loader.load_documents("bucket-1250000000"))
    assert elapsed < TIMEOUT + MARGIN, f"{name}: {elapsed:.1f} s, timeout={TIMEOUT:g} s"
    assert "bucket-1250000000" in str(error)


@pytest.mark.parametrize("timeout", [0, -1, float("inf"), float("nan"), "30", True])
@pytest.mark.parametrize("name", LOADERS)
def test_a_timeout_that_is_not_a_positive_number_is_refused(name: str, timeout: Any) -> None:
    build = {
        "amazon-s3": lambda: AmazonS3DocumentLoader(timeout=timeout),
        "azure-blob": lambda: AzureBlobStorageDocumentLoader(
            account_url="http://127.0.0.1:9", timeout=timeout
        ),
        "google-cloud-storage": lambda: GoogleCloudStorageDocumentLoader(
            endpoint_url="http://127.0.0.1:9", timeout=timeout
        ),
        "tencent-cos": lambda: TencentCosDocumentLoader(region="ap-guangzhou", timeout=timeout),
    }[name]
    with pytest.raises(InvalidArgumentError, match="timeout"):
        build()


# -- the instance metadata service ----------------------------------------------------


class Connections:
    """Every outward connection and name lookup of the process, refused unless loopback."""

    def __init__(self) -> None:
        self.refused: list[str] = []

    def refuse(self, host: str) -> bool:
        if host in ("127.0.0.1", "::1", "localhost"):
            return False
        self.refused.append(host)
        return True


@pytest.fixture
def connections(monkeypatch: pytest.MonkeyPatch) -> Connections:
    """Intercepts ``socket.socket.connect``/``connect_ex`` and ``getaddrinfo`` in-process:
    anything but loopback is recorded and refused before a packet is sent."""
    seen = Connections()
    connect, connect_ex, getaddrinfo = (
        socket.socket.connect,
        socket.socket.connect_ex,
        socket.getaddrinfo,
    )

    def guarded_connect(self: socket.socket, address: Any) -> None:
        if isinstance(address, tuple) and seen.refuse(str(address[0])):
            raise ConnectionRefusedError(f"refused by the test: {address[0]}")
        connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        if isinstance(address, tuple) and seen.refuse(str(address[0])):
            return 111  # ECONNREFUSED
        return connect_ex(self, address)

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and seen.refuse(str(host)):
            raise socket.gaierror(socket.EAI_NONAME, f"lookup refused by the test: {host}")
        return getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
    return seen


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No AWS or Google credentials from the environment or config files."""
    for variable in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_EC2_METADATA_DISABLED",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_CLOUD_PROJECT",
    ):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))


def _s3_without_credentials(url: str, **options: Any) -> None:
    loader = AmazonS3DocumentLoader(endpoint_url=url, region_name="us-east-1", **options)
    loader.load_document("bucket", "a.md")


def _gcs_without_credentials(url: str, **options: Any) -> None:
    GoogleCloudStorageDocumentLoader(project="p", **options)


PROBING: dict[str, Callable[..., None]] = {
    "amazon-s3": _s3_without_credentials,
    "google-cloud-storage": _gcs_without_credentials,
}


@pytest.mark.usefixtures("no_credentials")
@pytest.mark.parametrize("name", PROBING)
def test_without_credentials_the_default_asks_the_metadata_service(
    name: str, connections: Connections, hang: HangServer
) -> None:
    """What ``instance_metadata=False`` is for (and proof that the interception sees it)."""
    with pytest.raises(ObjectStoreAccessError):
        PROBING[name](f"http://127.0.0.1:{hang.port}")
    assert METADATA_ADDRESS in connections.refused


@pytest.mark.usefixtures("no_credentials")
@pytest.mark.parametrize("name", PROBING)
def test_instance_metadata_false_never_connects_to_the_metadata_service(
    name: str, connections: Connections, hang: HangServer
) -> None:
    with pytest.raises(ObjectStoreAccessError, match="credentials"):
        PROBING[name](f"http://127.0.0.1:{hang.port}", instance_metadata=False)
    assert connections.refused == []
