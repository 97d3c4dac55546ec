"""The ragloom DocumentLoader on google-cloud-storage."""

from ragloom.loaders.google_cloud_storage.loader import (
    GoogleCloudStorageDocumentLoader,
)

__all__ = ["GoogleCloudStorageDocumentLoader"]
