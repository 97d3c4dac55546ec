"""AmazonS3DocumentLoader passes the testkit suite unchanged, on a real S3 server."""

from __future__ import annotations

from typing import Any

import pytest

from ragloom.core.document import Document
from ragloom.core.loaders.blob import KEY
from ragloom.core.loaders.result import LoadedDocuments
from ragloom.core.parsers.text import TextDocumentParser
from ragloom.loaders.amazon_s3 import AmazonS3DocumentLoader
from ragloom.testkit import DocumentLoaderSuite

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


class TestAmazonS3Conformance(DocumentLoaderSuite):
    @pytest.fixture
    def harness(self, s3: Any, loader: AmazonS3DocumentLoader, bucket: str) -> AmazonS3Harness:
        return AmazonS3Harness(s3, loader, bucket)
