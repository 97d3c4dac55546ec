"""ragloom.llamaindex: __all__ is pinned and importable."""

import ragloom.llamaindex
from ragloom.testkit.public_api import check_public_api


def test_public_api() -> None:
    check_public_api(
        ragloom.llamaindex,
        [
            "LlamaIndexContentRetriever",
            "LlamaIndexDocumentLoader",
            "LlamaIndexEmbeddingModel",
            "RagloomEmbedding",
            "RagloomRetriever",
            "RagloomVectorStore",
            "to_ragloom_document",
            "to_ragloom_filter",
        ],
    )
