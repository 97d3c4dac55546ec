"""ragloom.parsers.pdf: __all__ is pinned and importable; its errors are RagloomErrors."""

import ragloom.parsers.pdf
from ragloom.testkit.public_api import check_public_api


def test_public_api() -> None:
    check_public_api(
        ragloom.parsers.pdf,
        [
            "EncryptedPdfError",
            "PAGE_COUNT",
            "PAGE_NUMBER",
            "PAGE_OFFSETS",
            "PdfDocumentParser",
            "ScannedPdfError",
            "page_number",
        ],
    )
