"""ragloom.langchain: __all__ is pinned and importable."""

import ragloom.langchain
from ragloom.testkit.public_api import check_public_api


def test_public_api() -> None:
    check_public_api(
        ragloom.langchain,
        [
            "FilterLike",
            "LangChainChatModel",
            "LangChainContentRetriever",
            "LangChainDocumentLoader",
            "LangChainEmbeddingModel",
            "RagloomEmbeddings",
            "RagloomRetriever",
            "RagloomVectorStore",
            "to_ragloom_document",
            "to_ragloom_filter",
        ],
    )
