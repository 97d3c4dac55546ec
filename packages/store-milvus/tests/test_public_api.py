"""ragloom.stores.milvus: __all__ is pinned and importable; its errors are RagloomErrors."""

import ragloom.stores.milvus
from ragloom.testkit.public_api import check_public_api


def test_public_api() -> None:
    check_public_api(
        ragloom.stores.milvus, ["MilvusEmbeddingStore", "MilvusHybridContentRetriever"]
    )
