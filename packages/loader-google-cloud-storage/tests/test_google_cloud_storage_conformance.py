"""GoogleCloudStorageDocumentLoader passes the testkit suites unchanged, on the emulator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from google.cloud import storage

from ragloom.core.document import Document
from ragloom.core.loaders.blob import KEY
from ragloom.core.loaders.result import LoadedDocuments
from ragloom.core.parsers.text import TextDocumentParser
from ragloom.loaders.google_cloud_storage import GoogleCloudStorageDocumentLoader
from ragloom.testkit import DocumentLoaderSuite, ObjectStoreLoaderSuite

pytestmark = pytest.mark.integration

MakeLoader = Callable[..., GoogleCloudStorageDocumentLoader]


class GcsHarness:
    """Both suites' view of one fresh bucket."""

    def __init__(self, bucket: storage.Bucket, make_loader: MakeLoader) -> None:
        self.handle = bucket
        self.bucket = bucket.name
        self.make_loader = make_loader

    def put(self, key: str, data: bytes, content_type: str | None = None) -> None:
        self.handle.blob(key).upload_from_string(
            data, content_type=content_type or "application/octet-stream"
        )

    def etag(self, key: str) -> str:
        blob = self.handle.get_blob(key)
        assert blob is not None
        return str(blob.etag)

    def loader(self, **options: Any) -> GoogleCloudStorageDocumentLoader:
        return self.make_loader(**options)

    def load_document(self, name: str, parser: TextDocumentParser) -> Document:
        return self.loader().load_document(self.bucket, name, parser)

    def load_documents(self, parser: TextDocumentParser) -> LoadedDocuments:
        return self.loader().load_documents(self.bucket, parser=parser)

    def name_of(self, document: Document) -> str:
        return str(document.metadata[KEY])


class TestGoogleCloudStorageConformance(DocumentLoaderSuite, ObjectStoreLoaderSuite):
    @pytest.fixture
    def harness(self, bucket: storage.Bucket, make_loader: MakeLoader) -> GcsHarness:
        return GcsHarness(bucket, make_loader)

    @pytest.fixture
    def object_store(self, bucket: storage.Bucket, make_loader: MakeLoader) -> GcsHarness:
        return GcsHarness(bucket, make_loader)
