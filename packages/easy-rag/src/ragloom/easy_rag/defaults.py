"""The Easy RAG defaults: recursive splitting sized to the default model's window.

The spec splits into 300-token segments with a 30-token overlap because its default model
(bge-small-en-v1.5) reads 512 tokens. Our default model, all-MiniLM-L6-v2, reads 256
tokens including ``[CLS]`` and ``[SEP]``: a 300-token segment would be silently cut. So
segments hold at most 254 model tokens (the window minus the two special tokens), with
the spec's 30-token overlap, counted with the model's own tokenizer.

Hybrid retrieval fuses the dense and the keyword results of those segments by a convex
combination of their min-max normalised scores (equal weights), each leg giving at
least 100 candidates: the best passage-level configuration measured on CISI
(``docs/evaluation.md``: +0.014 nDCG@10 over RRF; 100 candidates +0.004 over 50).
:func:`index_hybrid_retriever` is that recipe over an index's store and keyword index,
the one ``ragloom query``/``ask`` and the server use. :data:`EVAL_DEFAULTS`, ``ragloom
eval``'s defaults, are made of the same constants, so the command evaluates what
``ragloom query`` retrieves with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ragloom.core import (
    BM25ContentRetriever,
    BM25Index,
    Content,
    EmbeddingModel,
    EmbeddingStore,
    EmbeddingStoreContentRetriever,
    Filter,
    Query,
    document_splitters,
)
from ragloom.core.retrievers.base import ContentRetriever
from ragloom.core.retrievers.hybrid import Fusion, HybridContentRetriever
from ragloom.core.splitters.base import DocumentSplitter
from ragloom.embeddings.onnx import AllMiniLmL6V2Tokenizer

__all__ = [
    "MODEL_WINDOW_TOKENS",
    "SPECIAL_TOKENS",
    "MAX_SEGMENT_TOKENS",
    "MAX_OVERLAP_TOKENS",
    "HYBRID_CANDIDATES",
    "HYBRID_FUSION",
    "RETRIEVAL_MODE",
    "EVAL_DEFAULTS",
    "default_document_splitter",
    "hybrid_candidates",
    "default_hybrid_retriever",
    "MinScoreRetriever",
    "index_hybrid_retriever",
]

MODEL_WINDOW_TOKENS = 256
SPECIAL_TOKENS = 2  # [CLS] and [SEP]
MAX_SEGMENT_TOKENS = MODEL_WINDOW_TOKENS - SPECIAL_TOKENS
MAX_OVERLAP_TOKENS = 30
HYBRID_CANDIDATES = 100  # each leg's candidates at least (the docs advise 20-100)
HYBRID_FUSION: Fusion = "weighted"
RETRIEVAL_MODE: Literal["hybrid"] = "hybrid"  # `ragloom query`/`ask` without --mode

#: ``ragloom eval``'s option defaults (core's evaluation command): the default splitter's
#: segments, and Easy RAG's hybrid: its fusion over segments, its candidates per leg.
EVAL_DEFAULTS: dict[str, Any] = {
    "mode": [RETRIEVAL_MODE],
    "fusion": [HYBRID_FUSION],
    "group": ["segment"],
    "segments": True,
    "candidates": HYBRID_CANDIDATES,
}


def default_document_splitter() -> DocumentSplitter:
    """Recursive splitting into segments the default model embeds whole (254/30 tokens)."""
    return document_splitters.recursive(
        MAX_SEGMENT_TOKENS, MAX_OVERLAP_TOKENS, AllMiniLmL6V2Tokenizer()
    )


def hybrid_candidates(max_results: int) -> int:
    """How many contents each hybrid leg returns for ``max_results`` fused ones."""
    return max(max_results, HYBRID_CANDIDATES)


def default_hybrid_retriever(
    dense: ContentRetriever, keyword: ContentRetriever, max_results: int
) -> HybridContentRetriever:
    """Easy RAG's hybrid: weighted (convex, min-max normalised) fusion of passages; fused
    scores are 0-1, 1 = first in both lists. Give the legs :func:`hybrid_candidates`."""
    return HybridContentRetriever(dense, keyword, fusion=HYBRID_FUSION, max_results=max_results)


@dataclass
class MinScoreRetriever:
    """The contents of ``retriever`` scoring at least ``min_score``."""

    retriever: ContentRetriever
    min_score: float = 0.0

    def retrieve(self, query: Query) -> list[Content]:
        contents = self.retriever.retrieve(query)
        return [c for c in contents if (c.score or 0.0) >= self.min_score]


def index_hybrid_retriever(
    store: EmbeddingStore,
    keywords: BM25Index,
    embedding_model: EmbeddingModel,
    max_results: int,
    *,
    min_score: float = 0.0,
    filter: Filter | None = None,
) -> MinScoreRetriever:
    """Easy RAG's hybrid over an index: dense (``store``, ``embedding_model``) and
    keyword (``keywords``) legs of :func:`hybrid_candidates` each, both under
    ``filter``, fused by :func:`default_hybrid_retriever`, fused scores below
    ``min_score`` dropped (after fusion: the legs' own scores are on other scales)."""
    candidates = hybrid_candidates(max_results)
    return MinScoreRetriever(
        default_hybrid_retriever(
            EmbeddingStoreContentRetriever(
                store, embedding_model, max_results=candidates, filter=filter
            ),
            BM25ContentRetriever(keywords, max_results=candidates, filter=filter),
            max_results,
        ),
        min_score,
    )
