"""AzureBlobStorageDocumentLoader passes the testkit suite unchanged, on Azurite."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from azure.storage.blob import ContainerClient, ContentSettings

from ragloom.core.document import Document
from ragloom.core.loaders.blob import KEY
from ragloom.core.loaders.result import LoadedDocuments
from ragloom.core.parsers.text import TextDocumentParser
from ragloom.loaders.azure_blob import AzureBlobStorageDocumentLoader
from ragloom.testkit import DocumentLoaderSuite, ObjectStoreLoaderSuite

pytestmark = pytest.mark.integration


class AzureBlobHarness:
    """The suite's view of one fresh, empty container."""

    def __init__(self, container: ContainerClient, loader: AzureBlobStorageDocumentLoader) -> None:
        self.container = container
        self.loader = loader

    def put(self, name: str, data: bytes) -> None:
        self.container.upload_blob(name, data, overwrite=True)

    def load_document(self, name: str, parser: TextDocumentParser) -> Document:
        return self.loader.load_document(self.container.container_name, name, parser)

    def load_documents(self, parser: TextDocumentParser) -> LoadedDocuments:
        return self.loader.load_documents(self.container.container_name, parser=parser)

    def name_of(self, document: Document) -> str:
        return str(document.metadata[KEY])


class AzureBlobStore:
    """The object-store suite's view of one fresh container."""

    def __init__(self, container: ContainerClient, connection_string: str) -> None:
        self.container = container
        self.connection_string = connection_string
        self.bucket = container.container_name

    def put(self, key: str, data: bytes, content_type: str | None = None) -> None:
        settings = ContentSettings(content_type=content_type) if content_type else None
        self.container.upload_blob(key, data, overwrite=True, content_settings=settings)

    def etag(self, key: str) -> str:
        return str(self.container.get_blob_client(key).get_blob_properties().etag)

    def loader(self, **options: Any) -> AzureBlobStorageDocumentLoader:
        return AzureBlobStorageDocumentLoader(connection_string=self.connection_string, **options)


class TestAzureBlobConformance(DocumentLoaderSuite, ObjectStoreLoaderSuite):
    @pytest.fixture
    def object_store(
        self, container: ContainerClient, connection_string: Callable[[], str]
    ) -> AzureBlobStore:
        return AzureBlobStore(container, connection_string())

    @pytest.fixture
    def harness(
        self, container: ContainerClient, loader: AzureBlobStorageDocumentLoader
    ) -> AzureBlobHarness:
        return AzureBlobHarness(container, loader)
