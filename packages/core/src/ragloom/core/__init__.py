"""ragloom core: the RAG domain model, interfaces and in-memory implementations."""

from ragloom.core import plugins
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
from ragloom.core.loaders.file_system import FileSystemDocumentLoader
from ragloom.core.loaders.package_resource import (
    ClassPathDocumentLoader,
    PackageResourceDocumentLoader,
)
from ragloom.core.loaders.result import LoadedDocuments, LoadFailure
from ragloom.core.loaders.url import UrlDocumentLoader
from ragloom.core.metadata import Metadata, MetadataValue
from ragloom.core.parsers.base import DocumentParser
from ragloom.core.parsers.text import TextDocumentParser
from ragloom.core.transformers import DocumentTransformer, TextSegmentTransformer

__all__ = [
    "ClassPathDocumentLoader",
    "DocumentParser",
    "DocumentTransformer",
    "FileSystemDocumentLoader",
    "LoadFailure",
    "LoadedDocuments",
    "PackageResourceDocumentLoader",
    "TextDocumentParser",
    "TextSegmentTransformer",
    "UrlDocumentLoader",
    "plugins",
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
