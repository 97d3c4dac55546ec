"""ragloom.transformers.html: __all__ is pinned and importable; its errors are RagloomErrors."""

import ragloom.transformers.html
from ragloom.testkit.public_api import check_public_api


def test_public_api() -> None:
    check_public_api(
        ragloom.transformers.html,
        [
            "HtmlDocumentParser",
            "HtmlToTextDocumentTransformer",
            "decode_html",
        ],
    )
