"""TencentCosDocumentLoader: documents from the objects of a Tencent Cloud COS bucket.

A thin adapter over cos-python-sdk-v5 (``list_objects`` with markers, ``get_object``
streamed in chunks, error codes -> kinds) over core's shared object-store loading
(:mod:`ragloom.core.loaders.blob`), which does the filtering, size cap, parallel fetches,
parser dispatch, metadata and failure reporting.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any, cast
from urllib.parse import urlsplit

from qcloud_cos import CosConfig, CosS3Client
from qcloud_cos.cos_exception import CosClientError, CosServiceError

from ragloom.core.errors import InvalidArgumentError
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
    "CHUNK_SIZE",
    "MAX_PAGE_SIZE",
    "SECRET_ID_VARIABLE",
    "SECRET_KEY_VARIABLE",
    "cos_error_kind",
    "CosObjectStore",
    "TencentCosDocumentLoader",
]

CHUNK_SIZE = 1024 * 1024
MAX_PAGE_SIZE = 1000
SECRET_ID_VARIABLE = "TENCENTCLOUD_SECRET_ID"
SECRET_KEY_VARIABLE = "TENCENTCLOUD_SECRET_KEY"

_UNAUTHENTICATED = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken"}


class _Missing(Exception):
    """A 404 the adapter has told apart by context: the bucket or the object."""

    def __init__(self, kind: ObjectStoreErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def cos_error_kind(error: Exception) -> ObjectStoreErrorKind | None:
    """What a cos-python-sdk-v5 exception means for the loader."""
    if isinstance(error, _Missing):
        return error.kind
    if isinstance(error, CosClientError):
        return ObjectStoreErrorKind.UNREACHABLE  # the SDK's wrapper of network errors
    if not isinstance(error, CosServiceError):
        return None
    code, status = error.get_error_code(), error.get_status_code()
    if code == "NoSuchBucket":
        return ObjectStoreErrorKind.NO_SUCH_BUCKET
    if code == "NoSuchKey" or status == 404:
        return ObjectStoreErrorKind.NO_SUCH_OBJECT
    if code in _UNAUTHENTICATED or status == 401:
        return ObjectStoreErrorKind.UNAUTHENTICATED
    if status == 403:
        return ObjectStoreErrorKind.ACCESS_DENIED
    return None


def _header(headers: Mapping[str, Any], name: str) -> Any:
    lowered = name.lower()
    return next((v for k, v in headers.items() if k.lower() == lowered), None)


def _time(value: str | None, http_date: bool) -> datetime | None:
    if not value:
        return None
    return parsedate_to_datetime(value) if http_date else datetime.fromisoformat(value)


class CosObjectStore:
    """The :class:`~ragloom.core.loaders.blob.ObjectStore` adapter over a CosS3Client."""

    def __init__(self, client: CosS3Client, *, page_size: int = MAX_PAGE_SIZE) -> None:
        self.client = client
        self.page_size = page_size

    def uri(self, bucket: str, key: str) -> str:
        """``cos://bucket/key``."""
        return f"cos://{bucket}/{key}"

    def _missing_bucket(self, bucket: str, error: CosServiceError) -> Exception:
        """A 404 of a bucket request (a HEAD's has no body, so no code) as a missing bucket."""
        if error.get_status_code() == 404 and error.get_error_code() != "NoSuchKey":
            return _Missing(ObjectStoreErrorKind.NO_SUCH_BUCKET, f"no bucket {bucket!r}")
        return cast(Exception, error)  # qcloud_cos is untyped

    def list_objects(self, bucket: str, prefix: str) -> Iterator[ObjectInfo]:
        """Every object under ``prefix``, page after page (markers)."""
        marker = ""
        while True:
            try:
                page = self.client.list_objects(
                    Bucket=bucket, Prefix=prefix, Marker=marker, MaxKeys=self.page_size
                )
            except CosServiceError as exc:
                raise self._missing_bucket(bucket, exc) from exc
            contents = page.get("Contents", [])
            for item in contents:
                yield ObjectInfo(
                    key=item["Key"],
                    size=int(item["Size"]),
                    etag=item.get("ETag"),
                    last_modified=_time(item.get("LastModified"), http_date=False),
                )
            if page.get("IsTruncated") != "true" or not contents:
                return
            marker = page.get("NextMarker") or contents[-1]["Key"]

    def open_object(self, bucket: str, key: str) -> ObjectBody:
        """``get_object``, its body streamed in 1 MiB chunks."""
        try:
            response = self.client.get_object(Bucket=bucket, Key=key)
        except CosServiceError as exc:
            if exc.get_status_code() == 404 and exc.get_error_code() != "NoSuchKey":
                try:  # the error body did not say which: ask about the bucket
                    self.client.head_bucket(Bucket=bucket)
                except CosServiceError as missing:
                    raise self._missing_bucket(bucket, missing) from exc
            raise
        raw = response["Body"].get_raw_stream()
        length = _header(response, "Content-Length")
        info = ObjectInfo(
            key=key,
            size=int(length) if length is not None else None,
            etag=_header(response, "ETag"),
            version=_header(response, "x-cos-version-id"),
            content_type=_header(response, "Content-Type"),
            last_modified=_time(_header(response, "Last-Modified"), http_date=True),
        )

        def chunks() -> Iterator[bytes]:
            while chunk := raw.read(CHUNK_SIZE):
                yield chunk

        return ObjectBody(info, chunks(), raw.close)

    def error_kind(self, error: Exception) -> ObjectStoreErrorKind | None:
        """See :func:`cos_error_kind`."""
        return cos_error_kind(error)


class TencentCosDocumentLoader(ObjectStoreDocumentLoader):
    """Loads objects of COS buckets: ``load_document(bucket, key)``, ``load_documents(bucket)``.

    ``client`` is a ``CosS3Client``; without one it is built from ``region``,
    ``secret_id``/``secret_key`` (default: the ``TENCENTCLOUD_SECRET_ID`` and
    ``TENCENTCLOUD_SECRET_KEY`` variables; none: anonymous access) and ``token``.
    ``endpoint_url`` (``scheme://host:port``) sends every request to that address (the
    SDK's direct IP access), e.g. a private endpoint or a test server. ``timeout``
    (seconds) bounds one object's fetch as a whole, retries included, and each listing
    page (:class:`~ragloom.core.errors.ObjectStoreUnavailableError` after). Bucket names are
    COS's ``<name>-<appid>``. Documents get core's object metadata
    (:mod:`ragloom.core.loaders.blob`) with ``url`` = ``cos://bucket/key``.
    """

    def __init__(
        self,
        client: CosS3Client | None = None,
        *,
        region: str | None = None,
        secret_id: str | None = None,
        secret_key: str | None = None,
        token: str | None = None,
        endpoint_url: str | None = None,
        page_size: int = MAX_PAGE_SIZE,
        max_object_size: int = DEFAULT_MAX_OBJECT_SIZE,
        concurrency: int = DEFAULT_CONCURRENCY,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        if not 1 <= page_size <= MAX_PAGE_SIZE:
            raise InvalidArgumentError(f"page_size must be in 1..{MAX_PAGE_SIZE}, got {page_size}")
        check_timeout(timeout)
        if client is None:
            client = _client(
                region, secret_id, secret_key, token, endpoint_url, concurrency, timeout
            )
        super().__init__(
            CosObjectStore(client, page_size=page_size),
            service="Tencent COS",
            max_object_size=max_object_size,
            concurrency=concurrency,
            timeout=timeout,
        )
        self.client = client


def _client(
    region: str | None,
    secret_id: str | None,
    secret_key: str | None,
    token: str | None,
    endpoint_url: str | None,
    concurrency: int,
    timeout: float,
) -> CosS3Client:
    secret_id = secret_id or os.environ.get(SECRET_ID_VARIABLE)
    secret_key = secret_key or os.environ.get(SECRET_KEY_VARIABLE)
    address = urlsplit(endpoint_url) if endpoint_url else None
    if endpoint_url is not None and (address is None or not address.hostname):
        raise InvalidArgumentError(
            f"endpoint_url must be scheme://host[:port], got {endpoint_url!r}"
        )
    if region is None and address is None:
        raise InvalidArgumentError("region is required (e.g. 'ap-guangzhou') without endpoint_url")
    config = CosConfig(
        Region=region or "ap-guangzhou",
        SecretId=secret_id,
        SecretKey=secret_key,
        Token=token,
        Scheme=address.scheme if address else "https",
        Anonymous=not (secret_id and secret_key),
        PoolConnections=max(10, concurrency),
        PoolMaxSize=max(10, concurrency),
        Timeout=attempt_timeout(timeout),  # per socket operation; the SDK retries network errors
    )
    if address is not None:
        config.set_ip_port(address.hostname, address.port)
    return CosS3Client(config, retry=CLIENT_ATTEMPTS - 1)
