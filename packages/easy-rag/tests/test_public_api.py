"""ragloom.easy_rag: __all__ is pinned and importable; its errors are RagloomErrors."""

import ragloom.easy_rag
from ragloom.testkit.public_api import check_public_api


def test_public_api() -> None:
    check_public_api(
        ragloom.easy_rag,
        [
            "ExtractiveAssistant",
            "IngestReport",
            "RagIndex",
            "RagIndexError",
            "chat_model_from_env",
            "create_assistant",
            "load_documents",
        ],
    )
