"""ragloom core: the RAG domain model, interfaces and in-memory implementations."""

from ragloom.core import document_splitters, plugins
from ragloom.core.assistant import AsyncTokenStream, RagAssistant, Result, TokenStream
from ragloom.core.bm25 import Analyzer, BM25Index, BM25Match, StandardAnalyzer
from ragloom.core.chat import (
    AiMessage,
    AsyncChatStream,
    ChatMemory,
    ChatMemoryProvider,
    ChatMemoryStore,
    ChatMessage,
    ChatModel,
    ChatResponse,
    ChatStream,
    FinishReason,
    InMemoryChatMemoryStore,
    MessageWindowChatMemory,
    SystemMessage,
    UserMessage,
)
from ragloom.core.content import RERANKED_SCORE, Content
from ragloom.core.content_aggregators import (
    ContentAggregator,
    DefaultContentAggregator,
    ReRankingContentAggregator,
)
from ragloom.core.content_injectors import ContentInjector, DefaultContentInjector
from ragloom.core.document import Document, TextSegment
from ragloom.core.embedding import (
    Embedding,
    EmbeddingModel,
    EmbeddingResult,
    TokenUsage,
)
from ragloom.core.errors import (
    BM25IndexError,
    ChatModelError,
    DocumentLoadError,
    DocumentParseError,
    DocumentSplitError,
    EmbeddingModelError,
    EmbeddingStoreError,
    EmptyDocumentError,
    EncryptedDocumentError,
    EvaluationDataError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidFilterError,
    InvalidMetadataError,
    PluginError,
    PromptTemplateError,
    RagIndexError,
    RagloomError,
    RetrievalError,
    UnsupportedDocumentError,
    UnsupportedFilterError,
)
from ragloom.core.filter_parser import parse_filter
from ragloom.core.filters import (
    And,
    ContainsString,
    Filter,
    IsEqualTo,
    IsGreaterThan,
    IsGreaterThanOrEqualTo,
    IsIn,
    IsLessThan,
    IsLessThanOrEqualTo,
    IsNotEqualTo,
    IsNotIn,
    Not,
    Or,
    and_,
    metadata_key,
    not_,
    or_,
)
from ragloom.core.fusion import reciprocal_rank_fusion
from ragloom.core.ingestor import DocumentOutcome, EmbeddingStoreIngestor, IngestionResult
from ragloom.core.loaders.file_system import FileSystemDocumentLoader
from ragloom.core.loaders.package_resource import (
    ClassPathDocumentLoader,
    PackageResourceDocumentLoader,
)
from ragloom.core.loaders.result import LoadedDocuments, LoadFailure
from ragloom.core.loaders.url import UrlDocumentLoader
from ragloom.core.metadata import Metadata, MetadataValue
from ragloom.core.parsers.base import DocumentParser
from ragloom.core.parsers.dispatch import DispatchingDocumentParser
from ragloom.core.parsers.text import TextDocumentParser
from ragloom.core.prompt_template import PromptTemplate
from ragloom.core.query import Query, QueryMetadata
from ragloom.core.query_routers import (
    DefaultQueryRouter,
    FallbackStrategy,
    LanguageModelQueryRouter,
    QueryRouter,
)
from ragloom.core.query_transformers import (
    CompressingQueryTransformer,
    DefaultQueryTransformer,
    ExpandingQueryTransformer,
    QueryTransformer,
)
from ragloom.core.retrieval_augmentor import (
    AsyncContentRetriever,
    AugmentationResult,
    DefaultRetrievalAugmentor,
    RetrievalAugmentor,
)
from ragloom.core.retrievers.base import ContentRetriever
from ragloom.core.retrievers.bm25 import BM25ContentRetriever
from ragloom.core.retrievers.embedding_store import EmbeddingStoreContentRetriever
from ragloom.core.retrievers.hybrid import HybridContentRetriever
from ragloom.core.scoring import ScoringModel, ScoringResult
from ragloom.core.splitters import (
    DocumentByCharacterSplitter,
    DocumentByLineSplitter,
    DocumentByParagraphSplitter,
    DocumentByRegexSplitter,
    DocumentBySentenceSplitter,
    DocumentByWordSplitter,
    DocumentSplitter,
    RecursiveDocumentSplitter,
)
from ragloom.core.stores.base import (
    EmbeddingMatch,
    EmbeddingSearchRequest,
    EmbeddingSearchResult,
    EmbeddingStore,
)
from ragloom.core.stores.in_memory import InMemoryEmbeddingStore
from ragloom.core.tokenizer import HuggingFaceTokenizer, Tokenizer
from ragloom.core.transformers import DocumentTransformer, TextSegmentTransformer

__all__ = [
    "AiMessage",
    "Analyzer",
    "And",
    "AsyncChatStream",
    "AsyncContentRetriever",
    "AsyncTokenStream",
    "AugmentationResult",
    "BM25ContentRetriever",
    "BM25Index",
    "BM25IndexError",
    "BM25Match",
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
    "DocumentTransformer",
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
    "InMemoryChatMemoryStore",
    "InMemoryEmbeddingStore",
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
    "MessageWindowChatMemory",
    "Metadata",
    "MetadataValue",
    "Not",
    "Or",
    "PackageResourceDocumentLoader",
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
    "ScoringModel",
    "ScoringResult",
    "StandardAnalyzer",
    "SystemMessage",
    "TextDocumentParser",
    "TextSegment",
    "TextSegmentTransformer",
    "TokenStream",
    "TokenUsage",
    "Tokenizer",
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
