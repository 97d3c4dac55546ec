"""The ragloom document loader for Azure Blob Storage, over azure-storage-blob."""

from ragloom.loaders.azure_blob.loader import (
    AzureBlobObjectStore,
    AzureBlobStorageDocumentLoader,
    azure_error_kind,
)

__all__ = ["AzureBlobObjectStore", "AzureBlobStorageDocumentLoader", "azure_error_kind"]
