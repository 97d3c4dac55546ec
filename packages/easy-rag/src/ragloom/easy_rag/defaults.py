"""The Easy RAG defaults: recursive splitting sized to the default model's window.

The spec splits into 300-token segments with a 30-token overlap because its default model
(bge-small-en-v1.5) reads 512 tokens. Our default model, all-MiniLM-L6-v2, reads 256
tokens including ``[CLS]`` and ``[SEP]``: a 300-token segment would be silently cut. So
segments hold at most 254 model tokens (the window minus the two special tokens), with
the spec's 30-token overlap, counted with the model's own tokenizer.
"""

from __future__ import annotations

from ragloom.core import document_splitters
from ragloom.core.splitters.base import DocumentSplitter
from ragloom.embeddings.onnx import AllMiniLmL6V2Tokenizer

MODEL_WINDOW_TOKENS = 256
SPECIAL_TOKENS = 2  # [CLS] and [SEP]
MAX_SEGMENT_TOKENS = MODEL_WINDOW_TOKENS - SPECIAL_TOKENS
MAX_OVERLAP_TOKENS = 30


def default_document_splitter() -> DocumentSplitter:
    """Recursive splitting into segments the default model embeds whole (254/30 tokens)."""
    return document_splitters.recursive(
        MAX_SEGMENT_TOKENS, MAX_OVERLAP_TOKENS, AllMiniLmL6V2Tokenizer()
    )
