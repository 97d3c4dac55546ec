"""TencentCosDocumentLoader passes the testkit suites unchanged, on an S3 server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ragloom.core.document import Document
from ragloom.core.loaders.blob import KEY
from ragloom.core.loaders.result import LoadedDocuments
from ragloom.core.parsers.text import TextDocumentParser
from ragloom.loaders.tencent_cos import TencentCosDocumentLoader
from ragloom.testkit import DocumentLoaderSuite, ObjectStoreLoaderSuite

pytestmark = pytest.mark.integration

MakeLoader = Callable[..., TencentCosDocumentLoader]


class CosHarness:
    """Both suites' view of one fresh bucket (written with boto3, read with the COS SDK)."""

    def __init__(self, s3: Any, bucket: str, make_loader: MakeLoader) -> None:
        self.s3 = s3
        self.bucket = bucket
        self.make_loader = make_loader

    def put(self, key: str, data: bytes, content_type: str | None = None) -> None:
        extra = {"ContentType": content_type} if content_type else {}
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=data, **extra)

    def etag(self, key: str) -> str:
        return str(self.s3.head_object(Bucket=self.bucket, Key=key)["ETag"])

    def loader(self, **options: Any) -> TencentCosDocumentLoader:
        return self.make_loader(**options)

    def load_document(self, name: str, parser: TextDocumentParser) -> Document:
        return self.loader().load_document(self.bucket, name, parser)

    def load_documents(self, parser: TextDocumentParser) -> LoadedDocuments:
        return self.loader().load_documents(self.bucket, parser=parser)

    def name_of(self, document: Document) -> str:
        return str(document.metadata[KEY])


class TestTencentCosConformance(DocumentLoaderSuite, ObjectStoreLoaderSuite):
    @pytest.fixture
    def harness(self, s3: Any, bucket: str, make_loader: MakeLoader) -> CosHarness:
        return CosHarness(s3, bucket, make_loader)

    @pytest.fixture
    def object_store(self, s3: Any, bucket: str, make_loader: MakeLoader) -> CosHarness:
        return CosHarness(s3, bucket, make_loader)
