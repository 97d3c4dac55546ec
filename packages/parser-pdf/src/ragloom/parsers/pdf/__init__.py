"""ragloom-parser-pdf: PDF text extraction with pypdf, page numbers kept."""

from ragloom.parsers.pdf.parser import (
    PAGE_COUNT,
    PAGE_NUMBER,
    PAGE_OFFSETS,
    EncryptedPdfError,
    PdfDocumentParser,
    ScannedPdfError,
    page_number,
)

__all__ = [
    "PAGE_COUNT",
    "PAGE_NUMBER",
    "PAGE_OFFSETS",
    "EncryptedPdfError",
    "PdfDocumentParser",
    "ScannedPdfError",
    "page_number",
]
