"""The ragloom document loader for Google Cloud Storage, over google-cloud-storage."""

from ragloom.loaders.google_cloud_storage.loader import (
    GcsObjectStore,
    GoogleCloudStorageDocumentLoader,
    gcs_error_kind,
)

__all__ = ["GcsObjectStore", "GoogleCloudStorageDocumentLoader", "gcs_error_kind"]
