"""AmazonS3DocumentLoader passes the testkit suite unchanged, on a real S3 server."""

from __future__ import annotations

from typing import Any

import pytest

from ragloom.core.document import Document
from ragloom.core.loaders.blob import KEY
from ragloom.core.loaders.result import LoadedDocuments
from ragloom.core.parsers.text import TextDocumentParser
from ragloom.loaders.amazon_s3 import AmazonS3DocumentLoader
from ragloom.testkit import DocumentLoaderSuite, ObjectStoreLoaderSuite

pytestmark = pytest.mark.integration


class AmazonS3Harness:
    """The suite's view of one fresh, empty bucket."""

    def __init__(self, s3: Any, loader: AmazonS3DocumentLoader, bucket: str) -> None:
        self.s3 = s3
        self.loader = loader
        self.bucket = bucket

    def put(self, name: str, data: bytes) -> None:
        self.s3.put_object(Bucket=self.bucket, Key=name, Body=data)

    def load_document(self, name: str, parser: TextDocumentParser) -> Document:
        return self.loader.load_document(self.bucket, name, parser)

    def load_documents(self, parser: TextDocumentParser) -> LoadedDocuments:
        return self.loader.load_documents(self.bucket, parser=parser)

    def name_of(self, document: Document) -> str:
        return str(document.metadata[KEY])


class AmazonS3Store:
    """The object-store suite's view of one fresh bucket."""

    def __init__(self, s3: Any, make_loader: Any, bucket: str) -> None:
        self.s3 = s3
        self.make_loader = make_loader
        self.bucket = bucket

    def put(self, key: str, data: bytes, content_type: str | None = None) -> None:
        extra = {"ContentType": content_type} if content_type else {}
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=data, **extra)

    def etag(self, key: str) -> str:
        return str(self.s3.head_object(Bucket=self.bucket, Key=key)["ETag"])

    def loader(self, **options: Any) -> AmazonS3DocumentLoader:
        return self.make_loader(**options)  # type: ignore[no-any-return]


class TestAmazonS3Conformance(DocumentLoaderSuite, ObjectStoreLoaderSuite):
    @pytest.fixture
    def object_store(self, s3: Any, make_loader: Any, bucket: str) -> AmazonS3Store:
        return AmazonS3Store(s3, make_loader, bucket)

    @pytest.fixture
    def harness(self, s3: Any, loader: AmazonS3DocumentLoader, bucket: str) -> AmazonS3Harness:
        return AmazonS3Harness(s3, loader, bucket)
