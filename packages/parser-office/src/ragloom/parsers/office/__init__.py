"""ragloom-parser-office: Word, Excel and PowerPoint (Office Open XML) files as text."""

from ragloom.parsers.office.parser import (
    EXCEL,
    POWERPOINT,
    WORD,
    EncryptedOfficeDocumentError,
    OfficeDocumentParser,
    OfficeDocumentTooLargeError,
)

__all__ = [
    "EXCEL",
    "POWERPOINT",
    "WORD",
    "EncryptedOfficeDocumentError",
    "OfficeDocumentParser",
    "OfficeDocumentTooLargeError",
]
