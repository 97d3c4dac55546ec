"""ragloom.core: __all__ is pinned and importable, and its errors form one drawn tree."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

import ragloom.core
from ragloom.core import (
    Document,
    Embedding,
    MessageWindowChatMemory,
    PromptTemplate,
    UserMessage,
    errors,
    reciprocal_rank_fusion,
)
from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError, RagloomError

EXPECTED_ALL = [
    "AiMessage",
    "Analyzer",
    "And",
    "AsyncChatStream",
    "AsyncContentRetriever",
    "AsyncTokenStream",
    "AugmentationResult",
    "AutoMergingRetriever",
    "BM25ContentRetriever",
    "BM25Index",
    "BM25IndexError",
    "BM25Match",
    "BucketNotFoundError",
    "ChatMemory",
    "ChatMemoryProvider",
    "ChatMemoryStore",
    "ChatMessage",
    "ChatModel",
    "ChatModelError",
    "ChatResponse",
    "ChatStream",
    "ClassPathDocumentLoader",
    "CompressingQueryTransformer",
    "ContainsString",
    "Content",
    "ContentAggregator",
    "ContentInjector",
    "ContentRetriever",
    "ContextualHeaderTransformer",
    "DefaultContentAggregator",
    "DefaultContentInjector",
    "DefaultQueryRouter",
    "DefaultQueryTransformer",
    "DefaultRetrievalAugmentor",
    "DispatchingDocumentParser",
    "Document",
    "DocumentByCharacterSplitter",
    "DocumentByLineSplitter",
    "DocumentByParagraphSplitter",
    "DocumentByRegexSplitter",
    "DocumentBySentenceSplitter",
    "DocumentByWordSplitter",
    "DocumentLoadError",
    "DocumentOutcome",
    "DocumentParseError",
    "DocumentParser",
    "DocumentSplitError",
    "DocumentSplitter",
    "DocumentSummaryTransformer",
    "DocumentTransformer",
    "EgressRefusedError",
    "Embedding",
    "EmbeddingMatch",
    "EmbeddingModel",
    "EmbeddingModelError",
    "EmbeddingResult",
    "EmbeddingSearchRequest",
    "EmbeddingSearchResult",
    "EmbeddingStore",
    "EmbeddingStoreContentRetriever",
    "EmbeddingStoreError",
    "EmbeddingStoreIngestor",
    "EmptyDocumentError",
    "EncryptedDocumentError",
    "EvaluationDataError",
    "ExpandingQueryTransformer",
    "FallbackStrategy",
    "FileSystemDocumentLoader",
    "Filter",
    "FinishReason",
    "HuggingFaceTokenizer",
    "HybridContentRetriever",
    "HydeQueryTransformer",
    "InMemoryChatMemoryStore",
    "InMemoryEmbeddingStore",
    "InMemoryParentStore",
    "IngestionResult",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "InvalidFilterError",
    "InvalidMetadataError",
    "IsEqualTo",
    "IsGreaterThan",
    "IsGreaterThanOrEqualTo",
    "IsIn",
    "IsLessThan",
    "IsLessThanOrEqualTo",
    "IsNotEqualTo",
    "IsNotIn",
    "LanguageModelQueryRouter",
    "LoadFailure",
    "LoadedDocuments",
    "MATCHED_SPANS",
    "MessageWindowChatMemory",
    "Metadata",
    "MetadataTypeError",
    "MetadataValue",
    "Not",
    "ObjectNotFoundError",
    "ObjectStoreAccessError",
    "ObjectStoreUnavailableError",
    "ObjectTooLargeError",
    "Or",
    "PackageResourceDocumentLoader",
    "ParentChildSplitter",
    "ParentDocumentRetriever",
    "ParentStore",
    "PluginError",
    "PromptTemplate",
    "PromptTemplateError",
    "Query",
    "QueryMetadata",
    "QueryRouter",
    "QueryTransformer",
    "RERANKED_SCORE",
    "RagAssistant",
    "RagIndexError",
    "RagloomError",
    "ReRankingContentAggregator",
    "RecursiveDocumentSplitter",
    "Result",
    "RetrievalAugmentor",
    "RetrievalError",
    "RetrieverTool",
    "RewritingQueryTransformer",
    "ScoringAuthenticationError",
    "ScoringConnectionError",
    "ScoringModel",
    "ScoringModelError",
    "ScoringRateLimitError",
    "ScoringResponseError",
    "ScoringResult",
    "ScoringServerError",
    "ScoringStatusError",
    "ScoringTimeoutError",
    "SentenceWindowRetriever",
    "SentenceWindowSplitter",
    "StandardAnalyzer",
    "StepBackQueryTransformer",
    "StoredEmbedding",
    "SystemMessage",
    "TextDocumentParser",
    "TextSegment",
    "TextSegmentTransformer",
    "TokenStream",
    "TokenUsage",
    "Tokenizer",
    "ToolExecutionRequest",
    "ToolExecutionResultMessage",
    "ToolSpecification",
    "UnsupportedDocumentError",
    "UnsupportedFilterError",
    "UrlDocumentLoader",
    "UserMessage",
    "and_",
    "document_splitters",
    "metadata_key",
    "not_",
    "or_",
    "parse_filter",
    "plugins",
    "reciprocal_rank_fusion",
]

DOCS = Path(__file__).resolve().parents[3] / "docs" / "errors.md"


def error_classes() -> list[type[RagloomError]]:
    """Every class errors.py exports."""
    return [getattr(errors, name) for name in errors.__all__]


def test_all_is_pinned() -> None:
    assert sorted(ragloom.core.__all__) == EXPECTED_ALL
    assert len(set(ragloom.core.__all__)) == len(ragloom.core.__all__)


def test_every_name_in_all_is_importable() -> None:
    namespace: dict[str, object] = {}
    exec("from ragloom.core import *", namespace)
    assert set(EXPECTED_ALL) <= set(namespace)


def test_every_public_error_is_a_ragloom_error_exported_from_core() -> None:
    exported = {getattr(ragloom.core, name) for name in ragloom.core.__all__}
    raised = {
        value for value in exported if isinstance(value, type) and issubclass(value, BaseException)
    }
    assert raised == set(error_classes())
    assert all(issubclass(cls, RagloomError) for cls in raised)


def test_the_docstring_tree_draws_every_error_with_its_bases() -> None:
    """Each tree line is ``<prefix>Name (SecondBase)``; every 4 prefix chars are one level."""
    drawn: dict[str, tuple[str | None, str | None]] = {}
    parents: list[str] = []
    for line in (errors.__doc__ or "").splitlines():
        match = re.fullmatch(r"([ │├└─]*)(\w+Error)(?: \((\w+)\))?", line)
        if match is None:
            continue
        prefix, name, second_base = match.groups()
        del parents[len(prefix) // 4 - 1 :]
        drawn[name] = (parents[-1] if parents else None, second_base)
        parents.append(name)
    expected = {
        cls.__name__: (
            cls.__bases__[0].__name__ if cls is not RagloomError else None,
            cls.__bases__[1].__name__ if len(cls.__bases__) > 1 else None,
        )
        for cls in error_classes()
    }
    assert drawn == expected


def test_docs_list_every_error() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert [cls.__name__ for cls in error_classes() if f"`{cls.__name__}`" not in text] == []


@pytest.mark.parametrize(
    ("call", "error", "names"),
    [
        (lambda: Document(3), InvalidArgumentTypeError, "Document text"),  # type: ignore[arg-type]
        (lambda: PromptTemplate(3), InvalidArgumentTypeError, "template"),  # type: ignore[arg-type]
        (lambda: UserMessage("hi", name=3), InvalidArgumentTypeError, "name"),  # type: ignore[arg-type]
        (lambda: Embedding([]), InvalidArgumentError, "vector"),
        (lambda: MessageWindowChatMemory(0), InvalidArgumentError, "max_messages"),
        (lambda: reciprocal_rank_fusion([], k=-1), InvalidArgumentError, "k must"),
    ],
)
def test_bad_input_raises_a_ragloom_error_naming_the_argument(
    call: Callable[[], object], error: type[RagloomError], names: str
) -> None:
    with pytest.raises(error, match=names) as raised:
        call()
    assert isinstance(raised.value, ValueError if error is InvalidArgumentError else TypeError)
