"""AzureBlobStorageDocumentLoader passes the testkit suite unchanged, on Azurite."""

from __future__ import annotations

import pytest
from azure.storage.blob import ContainerClient

from ragloom.core.document import Document
from ragloom.core.loaders.blob import KEY
from ragloom.core.loaders.result import LoadedDocuments
from ragloom.core.parsers.text import TextDocumentParser
from ragloom.loaders.azure_blob import AzureBlobStorageDocumentLoader
from ragloom.testkit import DocumentLoaderSuite

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


class TestAzureBlobConformance(DocumentLoaderSuite):
    @pytest.fixture
    def harness(
        self, container: ContainerClient, loader: AzureBlobStorageDocumentLoader
    ) -> AzureBlobHarness:
        return AzureBlobHarness(container, loader)
