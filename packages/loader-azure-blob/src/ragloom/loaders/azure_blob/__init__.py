"""The ragloom DocumentLoader on azure-blob."""

from ragloom.loaders.azure_blob.loader import (
    AzureBlobDocumentLoader,
)

__all__ = ["AzureBlobDocumentLoader"]
