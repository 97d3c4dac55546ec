"""ragloom-parser-auto: parse almost any format with Apache Tika compiled to native code."""

from ragloom.parsers.auto.parser import (
    ApacheTikaDocumentParser,
    AutoDocumentParser,
    DocumentTooLargeError,
    EncryptedDocumentError,
    ParseTimeoutError,
)

__all__ = [
    "ApacheTikaDocumentParser",
    "AutoDocumentParser",
    "DocumentTooLargeError",
    "EncryptedDocumentError",
    "ParseTimeoutError",
]
