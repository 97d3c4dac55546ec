"""ragloom.parsers.office: __all__ is pinned and importable; its errors are RagloomErrors."""

import ragloom.parsers.office
from ragloom.testkit.public_api import check_public_api


def test_public_api() -> None:
    check_public_api(
        ragloom.parsers.office,
        [
            "EXCEL",
            "EncryptedOfficeDocumentError",
            "OfficeDocumentParser",
            "OfficeDocumentTooLargeError",
            "POWERPOINT",
            "WORD",
        ],
    )
