"""ragloom.testkit: __all__ is pinned and importable; its errors are RagloomErrors."""

import ragloom.testkit
from ragloom.testkit.public_api import check_public_api


def test_public_api() -> None:
    check_public_api(
        ragloom.testkit,
        [
            "AsyncEmbeddingStoreSuite",
            "Capability",
            "ChatModelSuite",
            "ChatRequest",
            "ConformanceSuite",
            "ContentRetrieverSuite",
            "Deviation",
            "DocumentLoaderSuite",
            "DocumentParserSuite",
            "EmbeddingModelSuite",
            "EmbeddingStoreFilterSuite",
            "EmbeddingStoreSuite",
            "FakeEmbeddingModel",
            "FakeScoringModel",
            "HybridContentRetrieverSuite",
            "HybridRetrieverHarness",
            "LoaderHarness",
            "ObjectStoreHarness",
            "ObjectStoreLoaderSuite",
            "ParserSample",
            "ScriptedChatModel",
            "SuiteWeakenedError",
            "WebSearchEngineSuite",
            "WebSearchHarness",
            "declared_deviations",
            "if_fails",
        ],
    )
