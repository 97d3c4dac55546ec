"""ragloom-parser-auto: parse almost any format with Apache Tika compiled to native code."""

from ragloom.core.errors import EncryptedDocumentError
from ragloom.parsers.auto.parser import (
    ApacheTikaDocumentParser,
    AutoDocumentParser,
    DocumentTooLargeError,
    ParseTimeoutError,
)

__all__ = [
    "ApacheTikaDocumentParser",
    "AutoDocumentParser",
    "DocumentTooLargeError",
    "EncryptedDocumentError",
    "ParseTimeoutError",
]
