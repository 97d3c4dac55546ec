"""ragloom core: the RAG domain model, interfaces and in-memory implementations."""

from ragloom.core.document import Document, TextSegment
from ragloom.core.errors import (
    DocumentLoadError,
    DocumentParseError,
    DocumentSplitError,
    EmbeddingStoreError,
    EmptyDocumentError,
    InvalidFilterError,
    InvalidMetadataError,
    PluginError,
    RagloomError,
    UnsupportedDocumentError,
)
from ragloom.core.metadata import Metadata, MetadataValue

__all__ = [
    "Document",
    "DocumentLoadError",
    "DocumentParseError",
    "DocumentSplitError",
    "EmbeddingStoreError",
    "EmptyDocumentError",
    "InvalidFilterError",
    "InvalidMetadataError",
    "Metadata",
    "MetadataValue",
    "PluginError",
    "RagloomError",
    "TextSegment",
    "UnsupportedDocumentError",
]
