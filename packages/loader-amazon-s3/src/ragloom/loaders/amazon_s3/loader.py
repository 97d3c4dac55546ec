"""AmazonS3DocumentLoader: documents from the objects of an S3 bucket, over boto3.

A thin adapter (list with the ``list_objects_v2`` paginator, stream with ``get_object``,
error codes -> kinds) over core's shared object-store loading
(:mod:`ragloom.core.loaders.blob`), which does the filtering, size cap, parallel fetches,
parser dispatch, metadata and failure reporting. Works with any S3-compatible endpoint
(``endpoint_url``).

Without credentials from the environment, the config files or the arguments, boto3's
chain ends by asking the instance metadata service (``169.254.169.254``, the address
every EC2 instance answers on; ``169.254.170.2`` in a container). Off a cloud machine
that is a connection to an address nobody meant to reach: ``instance_metadata=False``
(or the ``AWS_EC2_METADATA_DISABLED=true`` environment variable) leaves those steps out.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import botocore.session
from botocore.config import Config
from botocore.exceptions import (
    ClientError,
    EndpointConnectionError,
    NoCredentialsError,
    PartialCredentialsError,
)

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
    "s3_error_kind",
    "S3ObjectStore",
    "AmazonS3DocumentLoader",
]

CHUNK_SIZE = 1024 * 1024
MAX_PAGE_SIZE = 1000  # S3's own maximum for one ListObjectsV2 page

_NO_SUCH_BUCKET = {"NoSuchBucket"}
_NO_SUCH_OBJECT = {"NoSuchKey", "404", "NotFound", "NoSuchVersion"}
_DENIED = {"AccessDenied", "403", "Forbidden", "AllAccessDisabled"}
_UNAUTHENTICATED = {
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "InvalidToken",
    "TokenRefreshRequired",
}


def s3_error_kind(error: Exception) -> ObjectStoreErrorKind | None:
    """What a boto3/botocore exception means for the loader."""
    if isinstance(error, NoCredentialsError | PartialCredentialsError):
        return ObjectStoreErrorKind.UNAUTHENTICATED
    if isinstance(error, EndpointConnectionError):
        return ObjectStoreErrorKind.UNREACHABLE
    if not isinstance(error, ClientError):
        return None
    code = str(error.response.get("Error", {}).get("Code", ""))
    if code in _NO_SUCH_BUCKET:
        return ObjectStoreErrorKind.NO_SUCH_BUCKET
    if code in _NO_SUCH_OBJECT:
        return ObjectStoreErrorKind.NO_SUCH_OBJECT
    if code in _UNAUTHENTICATED:
        return ObjectStoreErrorKind.UNAUTHENTICATED
    if code in _DENIED:
        return ObjectStoreErrorKind.ACCESS_DENIED
    return None


class S3ObjectStore:
    """The :class:`~ragloom.core.loaders.blob.ObjectStore` adapter over a boto3 S3 client."""

    scheme = "s3"

    def __init__(self, client: Any, *, page_size: int = MAX_PAGE_SIZE) -> None:
        self.client = client
        self.page_size = page_size

    def uri(self, bucket: str, key: str) -> str:
        """``s3://bucket/key``."""
        return f"{self.scheme}://{bucket}/{key}"

    def list_objects(self, bucket: str, prefix: str) -> Iterator[ObjectInfo]:
        """Every object under ``prefix``, page after page (``page_size`` keys per request)."""
        paginator = self.client.get_paginator("list_objects_v2")
        pages = paginator.paginate(
            Bucket=bucket, Prefix=prefix, PaginationConfig={"PageSize": self.page_size}
        )
        for page in pages:
            for item in page.get("Contents", []):
                yield ObjectInfo(
                    key=item["Key"],
                    size=item.get("Size"),
                    etag=item.get("ETag"),
                    last_modified=item.get("LastModified"),
                )

    def open_object(self, bucket: str, key: str) -> ObjectBody:
        """``get_object``, its body streamed in 1 MiB chunks."""
        response = self.client.get_object(Bucket=bucket, Key=key)
        body = response["Body"]
        info = ObjectInfo(
            key=key,
            size=response.get("ContentLength"),
            etag=response.get("ETag"),
            version=response.get("VersionId"),
            content_type=response.get("ContentType"),
            last_modified=response.get("LastModified"),
        )
        return ObjectBody(info, body.iter_chunks(CHUNK_SIZE), body.close)

    def error_kind(self, error: Exception) -> ObjectStoreErrorKind | None:
        """See :func:`s3_error_kind`."""
        return s3_error_kind(error)


class AmazonS3DocumentLoader(ObjectStoreDocumentLoader):
    """Loads objects of S3 buckets: ``load_document(bucket, key)``, ``load_documents(bucket)``.

    ``client`` is a boto3 S3 client; without one, a client is built from boto3's usual
    credential chain (environment, shared config and credentials files, ``profile_name``,
    instance roles), with ``endpoint_url`` (an S3-compatible server or an emulator),
    ``region_name`` and explicit keys when given. ``instance_metadata=False`` leaves the
    instance and container metadata services out of that chain (see the module
    docstring). ``page_size`` is the number of keys per listing request (at most 1000).
    ``timeout`` (seconds) bounds one object's fetch as a whole, retries included, and
    each listing page (:class:`~ragloom.core.errors.ObjectStoreUnavailableError` after).
    Documents get core's object metadata (:mod:`ragloom.core.loaders.blob`) with
    ``url`` = ``s3://bucket/key``.
    """

    def __init__(
        self,
        client: Any | None = None,
        *,
        endpoint_url: str | None = None,
        region_name: str | None = None,
        aws_access_key_id: str | None = None,
        aws_secret_access_key: str | None = None,
        aws_session_token: str | None = None,
        profile_name: str | None = None,
        page_size: int = MAX_PAGE_SIZE,
        max_object_size: int = DEFAULT_MAX_OBJECT_SIZE,
        concurrency: int = DEFAULT_CONCURRENCY,
        timeout: float = DEFAULT_TIMEOUT,
        instance_metadata: bool = True,
    ) -> None:
        if client is None:
            check_timeout(timeout)
            session = boto3.session.Session(
                botocore_session=_botocore_session(profile_name, instance_metadata)
            )
            client = session.client(
                "s3",
                endpoint_url=endpoint_url,
                region_name=region_name,
                aws_access_key_id=aws_access_key_id,
                aws_secret_access_key=aws_secret_access_key,
                aws_session_token=aws_session_token,
                config=Config(
                    max_pool_connections=max(10, concurrency),  # one per parallel fetch
                    connect_timeout=attempt_timeout(timeout),
                    read_timeout=attempt_timeout(timeout),
                    retries={"mode": "standard", "total_max_attempts": CLIENT_ATTEMPTS},
                ),
            )
        if not 1 <= page_size <= MAX_PAGE_SIZE:
            raise InvalidArgumentError(f"page_size must be in 1..{MAX_PAGE_SIZE}, got {page_size}")
        super().__init__(
            S3ObjectStore(client, page_size=page_size),
            service="Amazon S3",
            max_object_size=max_object_size,
            concurrency=concurrency,
            timeout=timeout,
        )
        self.client = client


def _botocore_session(profile_name: str | None, instance_metadata: bool) -> Any:
    """A botocore session for ``profile_name``; without the metadata-service credential
    providers (EC2 instance role, container role) unless ``instance_metadata``."""
    session = botocore.session.Session(profile=profile_name)
    if not instance_metadata:
        resolver = session.get_component("credential_provider")
        for provider in ("iam-role", "container-role"):
            resolver.remove(provider)
    return session
