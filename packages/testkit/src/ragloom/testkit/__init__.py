"""ragloom-testkit: conformance suites that every ragloom integration passes unchanged.

Subclass a suite in your tests and provide its one fixture (``store`` or ``model``);
see the package README. Suites can be extended with more tests, never weakened; a rule
the backend cannot honour is declared off with ``<capability> = Deviation("why")``.
"""

import pytest

# Rewrite the suites' asserts so that failures show values; must run before their import.
pytest.register_assert_rewrite(
    "ragloom.testkit.async_embedding_store",
    "ragloom.testkit.chat_model",
    "ragloom.testkit.content_retriever",
    "ragloom.testkit.document_loader",
    "ragloom.testkit.document_parser",
    "ragloom.testkit.embedding_model",
    "ragloom.testkit.embedding_store",
    "ragloom.testkit.embedding_store_filter",
    "ragloom.testkit.hybrid_content_retriever",
    "ragloom.testkit.object_store_loader",
    "ragloom.testkit.servers",
    "ragloom.testkit.web_search_engine",
)

from ragloom.testkit.async_embedding_store import AsyncEmbeddingStoreSuite  # noqa: E402
from ragloom.testkit.chat_model import ChatModelSuite  # noqa: E402
from ragloom.testkit.content_retriever import ContentRetrieverSuite  # noqa: E402
from ragloom.testkit.document_loader import DocumentLoaderSuite, LoaderHarness  # noqa: E402
from ragloom.testkit.document_parser import DocumentParserSuite, ParserSample  # noqa: E402
from ragloom.testkit.embedding_model import EmbeddingModelSuite  # noqa: E402
from ragloom.testkit.embedding_store import EmbeddingStoreSuite  # noqa: E402
from ragloom.testkit.embedding_store_filter import EmbeddingStoreFilterSuite  # noqa: E402
from ragloom.testkit.fake_embedding_model import FakeEmbeddingModel  # noqa: E402
from ragloom.testkit.fake_scoring_model import FakeScoringModel  # noqa: E402
from ragloom.testkit.hybrid_content_retriever import (  # noqa: E402
    HybridContentRetrieverSuite,
    HybridRetrieverHarness,
)
from ragloom.testkit.object_store_loader import (  # noqa: E402
    ObjectStoreHarness,
    ObjectStoreLoaderSuite,
)
from ragloom.testkit.scripted_chat_model import ChatRequest, ScriptedChatModel  # noqa: E402
from ragloom.testkit.suite import (  # noqa: E402
    Capability,
    ConformanceSuite,
    Deviation,
    SuiteWeakenedError,
    declared_deviations,
    if_fails,
)
from ragloom.testkit.web_search_engine import (  # noqa: E402
    WebSearchEngineSuite,
    WebSearchHarness,
)

__all__ = [
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
]
