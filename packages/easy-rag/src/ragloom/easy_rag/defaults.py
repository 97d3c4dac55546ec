"""The Easy RAG defaults: recursive splitting in 300 model tokens with 30 overlap."""

from __future__ import annotations

from ragloom.core import document_splitters
from ragloom.core.splitters.base import DocumentSplitter
from ragloom.embeddings.onnx import AllMiniLmL6V2Tokenizer

MAX_SEGMENT_TOKENS = 300
MAX_OVERLAP_TOKENS = 30


def default_document_splitter() -> DocumentSplitter:
    """The spec's Easy RAG splitter: recursive, 300 tokens, 30 overlap, in model tokens."""
    return document_splitters.recursive(
        MAX_SEGMENT_TOKENS, MAX_OVERLAP_TOKENS, AllMiniLmL6V2Tokenizer()
    )
