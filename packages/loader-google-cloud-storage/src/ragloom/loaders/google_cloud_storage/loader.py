"""GoogleCloudStorageDocumentLoader: documents from the objects of a GCS bucket.

A thin adapter over google-cloud-storage (``list_blobs`` page by page, ``get_blob`` for
the object's metadata then a chunked reader pinned to that generation, errors -> kinds)
over core's shared object-store loading (:mod:`ragloom.core.loaders.blob`), which does
the filtering, size cap, parallel fetches, parser dispatch, metadata and failure reporting.

Without credentials (``credentials=``, ``GOOGLE_APPLICATION_CREDENTIALS``, gcloud's
login), google-auth's Application Default Credentials ask the metadata service of a GCE
machine (``169.254.169.254``, ``metadata.google.internal``), up to 3 times.
``instance_metadata=False`` (or ``NO_GCE_CHECK=true`` in the environment before
google-auth is imported) leaves that step out.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import google.auth
from google.api_core import exceptions as api_exceptions
from google.auth import transport
from google.auth.credentials import AnonymousCredentials, Credentials
from google.auth.exceptions import DefaultCredentialsError, RefreshError, TransportError
from google.cloud import storage
from google.cloud.storage.retry import DEFAULT_RETRY
from requests.adapters import HTTPAdapter
from requests.exceptions import ConnectionError as RequestsConnectionError

from ragloom.core.errors import InvalidArgumentError, ObjectStoreAccessError
from ragloom.core.loaders.blob import (
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
    "CHUNK_SIZE",
    "MAX_PAGE_SIZE",
    "gcs_error_kind",
    "GcsObjectStore",
    "GoogleCloudStorageDocumentLoader",
]

CHUNK_SIZE = 1024 * 1024
MAX_PAGE_SIZE = 1000  # the JSON API's maximum for one objects.list page


class _Missing(Exception):
    """A 404 the adapter has told apart: the bucket or the object."""

    def __init__(self, kind: ObjectStoreErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def gcs_error_kind(error: Exception) -> ObjectStoreErrorKind | None:
    """What a google-cloud-storage exception means for the loader."""
    if isinstance(error, _Missing):
        return error.kind
    if isinstance(error, DefaultCredentialsError | RefreshError):
        return ObjectStoreErrorKind.UNAUTHENTICATED
    if isinstance(error, TransportError | RequestsConnectionError | api_exceptions.RetryError):
        return ObjectStoreErrorKind.UNREACHABLE  # RetryError: still failing at the deadline
    if isinstance(error, api_exceptions.NotFound):
        return ObjectStoreErrorKind.NO_SUCH_OBJECT
    if isinstance(error, api_exceptions.Unauthorized):
        return ObjectStoreErrorKind.UNAUTHENTICATED
    if isinstance(error, api_exceptions.Forbidden):
        return ObjectStoreErrorKind.ACCESS_DENIED
    return None


class GcsObjectStore:
    """The :class:`~ragloom.core.loaders.blob.ObjectStore` adapter over a storage.Client.

    Each request waits at most ``attempt_timeout(timeout)`` on the socket and the
    client's retries stop ``timeout`` seconds after the first attempt.
    """

    def __init__(
        self,
        client: storage.Client,
        *,
        page_size: int = MAX_PAGE_SIZE,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.client = client
        self.page_size = page_size
        self.request_options: dict[str, Any] = {
            "timeout": attempt_timeout(timeout),
            "retry": DEFAULT_RETRY.with_timeout(timeout),
        }

    def uri(self, bucket: str, key: str) -> str:
        """``gs://bucket/key``."""
        return f"gs://{bucket}/{key}"

    def list_objects(self, bucket: str, prefix: str) -> Iterator[ObjectInfo]:
        """Every object under ``prefix``, page after page (``page_size`` per request)."""
        blobs = self.client.list_blobs(
            bucket, prefix=prefix or None, page_size=self.page_size, **self.request_options
        )
        try:
            for blob in blobs:
                yield self._info(blob)
        except api_exceptions.NotFound as exc:
            raise _Missing(ObjectStoreErrorKind.NO_SUCH_BUCKET, str(exc)) from exc

    @staticmethod
    def _info(blob: Any) -> ObjectInfo:
        return ObjectInfo(
            key=blob.name,
            size=blob.size,
            etag=blob.etag,
            version=str(blob.generation) if blob.generation is not None else None,
            content_type=blob.content_type,
            last_modified=blob.updated,
        )

    def open_object(self, bucket: str, key: str) -> ObjectBody:
        """``get_blob`` (metadata), then the content of that generation in 1 MiB chunks."""
        handle = self.client.bucket(bucket)
        blob = handle.get_blob(key, **self.request_options)
        if blob is None:  # get_blob answers None for a missing bucket and a missing object
            if not handle.exists(**self.request_options):
                raise _Missing(ObjectStoreErrorKind.NO_SUCH_BUCKET, f"no bucket {bucket!r}")
            raise _Missing(ObjectStoreErrorKind.NO_SUCH_OBJECT, f"no object {key!r}")
        reader = blob.open("rb", chunk_size=CHUNK_SIZE, **self.request_options)

        def chunks() -> Iterator[bytes]:
            while chunk := reader.read(CHUNK_SIZE):
                yield chunk

        return ObjectBody(self._info(blob), chunks(), reader.close)

    def error_kind(self, error: Exception) -> ObjectStoreErrorKind | None:
        """See :func:`gcs_error_kind`."""
        return gcs_error_kind(error)


class GoogleCloudStorageDocumentLoader(ObjectStoreDocumentLoader):
    """Loads objects of GCS buckets: ``load_document(bucket, key)``, ``load_documents(bucket)``.

    ``client`` is a ``google.cloud.storage.Client``; without one it is built with
    ``project`` and ``credentials`` (default: Application Default Credentials, the
    service's usual chain). ``endpoint_url`` points it at another endpoint, e.g. an
    emulator (then anonymous credentials unless given); the client also honours
    ``STORAGE_EMULATOR_HOST``. ``instance_metadata=False`` keeps the credential lookup
    off the GCE metadata service (see the module docstring). ``page_size`` is the
    number of objects per listing request (at most 1000). ``timeout`` (seconds) bounds
    one object's fetch as a whole, retries included, and each listing page
    (:class:`~ragloom.core.errors.ObjectStoreUnavailableError` after). Documents get
    core's object metadata (:mod:`ragloom.core.loaders.blob`) with ``url`` = ``gs://bucket/key`` and
    ``version`` = the object's generation.
    """

    def __init__(
        self,
        client: storage.Client | None = None,
        *,
        project: str | None = None,
        credentials: Credentials | None = None,
        endpoint_url: str | None = None,
        page_size: int = MAX_PAGE_SIZE,
        max_object_size: int = DEFAULT_MAX_OBJECT_SIZE,
        concurrency: int = DEFAULT_CONCURRENCY,
        timeout: float = DEFAULT_TIMEOUT,
        instance_metadata: bool = True,
    ) -> None:
        if not 1 <= page_size <= MAX_PAGE_SIZE:
            raise InvalidArgumentError(f"page_size must be in 1..{MAX_PAGE_SIZE}, got {page_size}")
        check_timeout(timeout)
        if client is None:
            client = self._client(project, credentials, endpoint_url, instance_metadata)
            # the client's session pools 10 connections per host; one per parallel fetch
            adapter = HTTPAdapter(pool_maxsize=max(10, concurrency))
            for scheme in ("http://", "https://"):
                client._http.mount(scheme, adapter)
        super().__init__(
            GcsObjectStore(client, page_size=page_size, timeout=timeout),
            service="Google Cloud Storage",
            max_object_size=max_object_size,
            concurrency=concurrency,
            timeout=timeout,
        )
        self.client = client

    @staticmethod
    def _client(
        project: str | None,
        credentials: Credentials | None,
        endpoint_url: str | None,
        instance_metadata: bool,
    ) -> storage.Client:
        if endpoint_url is not None:
            return storage.Client(
                project=project or "ragloom",
                credentials=credentials or AnonymousCredentials(),  # type: ignore[no-untyped-call]
                client_options={"api_endpoint": endpoint_url},
            )
        try:
            if credentials is None and not instance_metadata:
                credentials, found = google.auth.default(
                    scopes=storage.Client.SCOPE, request=_NoMetadataService()
                )
                project = project or found
            return storage.Client(project=project, credentials=credentials)
        except DefaultCredentialsError as exc:
            raise ObjectStoreAccessError(
                f"Google Cloud Storage: no credentials found ({exc}); pass credentials=, "
                "a client=, or set up Application Default Credentials"
            ) from exc


class _NotFound(transport.Response):
    """An HTTP 404 with no body."""

    @property
    def status(self) -> int:
        return 404

    @property
    def headers(self) -> Mapping[str, str]:
        return {}

    @property
    def data(self) -> bytes:
        return b""


class _NoMetadataService(transport.Request):
    """The transport google-auth's credential lookup gets with ``instance_metadata=False``:
    its metadata-service probe is answered "not found" at once, nothing is connected."""

    def __call__(
        self,
        url: str,
        method: str = "GET",
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> transport.Response:
        return _NotFound()
