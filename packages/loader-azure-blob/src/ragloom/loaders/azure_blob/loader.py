"""AzureBlobStorageDocumentLoader: documents from the blobs of an Azure Storage container.

A thin adapter over azure-storage-blob (``list_blobs`` page by page, ``download_blob``
streamed in chunks, error codes -> kinds) over core's shared object-store loading
(:mod:`ragloom.core.loaders.blob`), which does the filtering, size cap, parallel fetches,
parser dispatch, metadata and failure reporting. "Bucket" is the container here.

With ``account_url`` and no ``credential``, azure-identity's ``DefaultAzureCredential``
(when installed) tries a managed identity, which asks the instance metadata service
(``169.254.169.254``); pass a ``credential`` (an account key, a SAS token) or a
connection string to leave it out.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from typing import Any
from urllib.parse import quote, urlsplit

import requests
from azure.core.exceptions import (
    ClientAuthenticationError,
    HttpResponseError,
    ResourceNotFoundError,
    ServiceRequestError,
)
from azure.storage.blob import BlobServiceClient
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from ragloom.core.errors import DocumentLoadError, InvalidArgumentError
from ragloom.core.loaders.blob import (
    CLIENT_ATTEMPTS,
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_OBJECT_SIZE,
    DEFAULT_TIMEOUT,
    ObjectBody,
    ObjectInfo,
    ObjectStoreDocumentLoader,
    ObjectStoreErrorKind,
    attempt_timeout,
    check_timeout,
)

__all__ = [
    "CONNECTION_STRING_VARIABLE",
    "MAX_PAGE_SIZE",
    "azure_error_kind",
    "AzureBlobObjectStore",
    "AzureBlobStorageDocumentLoader",
]

CONNECTION_STRING_VARIABLE = "AZURE_STORAGE_CONNECTION_STRING"
MAX_PAGE_SIZE = 5000  # the service's maximum for one List Blobs page

_NO_SUCH_BUCKET = {"ContainerNotFound", "ContainerBeingDeleted"}
_UNAUTHENTICATED = {
    "AuthenticationFailed",
    "InvalidAuthenticationInfo",
    "NoAuthenticationInformation",
}


def azure_error_kind(error: Exception) -> ObjectStoreErrorKind | None:
    """What an azure-core exception means for the loader."""
    if isinstance(error, ServiceRequestError):
        return ObjectStoreErrorKind.UNREACHABLE
    if not isinstance(error, HttpResponseError):
        return None
    code = str(getattr(error, "error_code", "") or "")
    if code in _NO_SUCH_BUCKET:
        return ObjectStoreErrorKind.NO_SUCH_BUCKET
    if isinstance(error, ResourceNotFoundError) or error.status_code == 404:
        return ObjectStoreErrorKind.NO_SUCH_OBJECT
    if code in _UNAUTHENTICATED or error.status_code == 401:
        return ObjectStoreErrorKind.UNAUTHENTICATED
    if isinstance(error, ClientAuthenticationError) or error.status_code == 403:
        return ObjectStoreErrorKind.ACCESS_DENIED
    return None


class AzureBlobObjectStore:
    """The :class:`~ragloom.core.loaders.blob.ObjectStore` adapter over a BlobServiceClient."""

    def __init__(self, client: BlobServiceClient, *, page_size: int = MAX_PAGE_SIZE) -> None:
        self.client = client
        self.page_size = page_size
        address = urlsplit(client.url)  # without a SAS token's query
        self.base = f"{address.scheme}://{address.netloc}{address.path}".rstrip("/")

    def uri(self, bucket: str, key: str) -> str:
        """The blob's URL, ``https://<account>.blob.core.windows.net/<container>/<blob>``."""
        return f"{self.base}/{bucket}/{quote(key, safe='/~')}"

    def list_objects(self, bucket: str, prefix: str) -> Iterator[ObjectInfo]:
        """Every blob under ``prefix``, page after page (``page_size`` per request)."""
        container = self.client.get_container_client(bucket)
        blobs = container.list_blobs(
            name_starts_with=prefix or None, results_per_page=self.page_size
        )
        for blob in blobs:
            yield self._info(blob)

    @staticmethod
    def _info(properties: Any) -> ObjectInfo:
        settings = properties.content_settings
        return ObjectInfo(
            key=properties.name,
            size=properties.size,
            etag=properties.etag,
            version=properties.version_id,
            content_type=settings.content_type if settings is not None else None,
            last_modified=properties.last_modified,
        )

    def open_object(self, bucket: str, key: str) -> ObjectBody:
        """``download_blob``, streamed in the client's chunks."""
        downloader = self.client.get_blob_client(bucket, key).download_blob()
        info = replace(self._info(downloader.properties), key=key)
        return ObjectBody(info, downloader.chunks())

    def error_kind(self, error: Exception) -> ObjectStoreErrorKind | None:
        """See :func:`azure_error_kind`."""
        return azure_error_kind(error)


def _pooled_session(concurrency: int) -> requests.Session:
    """azure-core's usual session (its retries off) keeping a connection per parallel fetch.

    azure-core's own session pools 10 connections per host; more parallel fetches would
    open and discard connections (urllib3's "Connection pool is full" warnings).
    """
    session = requests.Session()
    adapter = HTTPAdapter(
        pool_maxsize=max(10, concurrency),
        max_retries=Retry(total=False, redirect=False, raise_on_status=False),
    )
    for scheme in ("http://", "https://"):
        session.mount(scheme, adapter)
    return session


def _default_client(
    connection_string: str | None, account_url: str | None, credential: Any, **options: Any
) -> BlobServiceClient:
    """A client from a connection string, or an account URL and a credential."""
    if connection_string is None and account_url is None:
        connection_string = os.environ.get(CONNECTION_STRING_VARIABLE)
    if connection_string is not None:
        try:
            return BlobServiceClient.from_connection_string(
                connection_string, credential=credential, **options
            )
        except ValueError as exc:
            raise DocumentLoadError(f"invalid Azure Storage connection string: {exc}") from exc
    if account_url is None:
        raise DocumentLoadError(
            "no Azure Storage account: pass client=, connection_string= or account_url=, "
            f"or set {CONNECTION_STRING_VARIABLE}"
        )
    if credential is None:
        # the usual chain (environment, managed identity, CLI) when azure-identity is installed
        try:
            from azure.identity import DefaultAzureCredential
        except ImportError:
            pass  # anonymous: public containers only
        else:
            credential = DefaultAzureCredential()
    return BlobServiceClient(account_url, credential=credential, **options)


class AzureBlobStorageDocumentLoader(ObjectStoreDocumentLoader):
    """Loads blobs: ``load_document(container, blob)``, ``load_documents(container, prefix)``.

    ``client`` is a ``BlobServiceClient``; without one it is built from
    ``connection_string`` (or the ``AZURE_STORAGE_CONNECTION_STRING`` variable), or from
    ``account_url`` (also an emulator's, e.g. Azurite's) with ``credential`` (an account
    key, a SAS token, a token credential; when omitted, azure-identity's
    ``DefaultAzureCredential`` if that package is installed, else anonymous access).
    ``page_size`` is the number of blobs per listing request (at most 5000). ``timeout``
    (seconds) bounds one blob's fetch as a whole, retries included, and each listing
    page (:class:`~ragloom.core.errors.ObjectStoreUnavailableError` after); a client
    built here gets its share per attempt as ``connection_timeout``/``read_timeout``
    and ``retry_total``, unless ``client_options`` set them. Documents get core's
    object metadata (:mod:`ragloom.core.loaders.blob`) with ``url`` the
    blob's URL; ``bucket`` is the container.
    """

    def __init__(
        self,
        client: BlobServiceClient | None = None,
        *,
        connection_string: str | None = None,
        account_url: str | None = None,
        credential: Any = None,
        page_size: int = MAX_PAGE_SIZE,
        max_object_size: int = DEFAULT_MAX_OBJECT_SIZE,
        concurrency: int = DEFAULT_CONCURRENCY,
        timeout: float = DEFAULT_TIMEOUT,
        **client_options: Any,
    ) -> None:
        if not 1 <= page_size <= MAX_PAGE_SIZE:
            raise InvalidArgumentError(f"page_size must be in 1..{MAX_PAGE_SIZE}, got {page_size}")
        if client is None:
            check_timeout(timeout)
            client_options.setdefault("session", _pooled_session(concurrency))
            client_options.setdefault("connection_timeout", attempt_timeout(timeout))
            client_options.setdefault("read_timeout", attempt_timeout(timeout))
            client_options.setdefault("retry_total", CLIENT_ATTEMPTS - 1)
            client = _default_client(connection_string, account_url, credential, **client_options)
        super().__init__(
            AzureBlobObjectStore(client, page_size=page_size),
            service="Azure Blob Storage",
            max_object_size=max_object_size,
            concurrency=concurrency,
            timeout=timeout,
        )
        self.client = client
