"""Count a model's tokens, for token-sized splitting (core's ``Tokenizer`` protocol)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ragloom.core.tokenizer import HuggingFaceTokenizer
from ragloom.embeddings.onnx._files import tokenizer_file
from ragloom.embeddings.onnx.errors import EmbeddingModelError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = [
    "load_tokenizer",
    "AllMiniLmL6V2Tokenizer",
]


def load_tokenizer(path: str | os.PathLike[str]) -> Tokenizer:
    """Load a ``tokenizer.json`` with padding and truncation switched off."""
    from tokenizers import Tokenizer

    file = Path(path)
    if not file.is_file():
        raise EmbeddingModelError(f"tokenizer file not found: {file}")
    try:
        tokenizer = Tokenizer.from_file(str(file))
    except Exception as exc:  # tokenizers raises plain Exception on a bad file
        raise EmbeddingModelError(f"cannot load tokenizer {file}: {exc}") from exc
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


class AllMiniLmL6V2Tokenizer(HuggingFaceTokenizer):
    """Counts all-MiniLM-L6-v2 tokens, for splitters (``count_tokens``/``count_tokens_batch``).

    Counts are not truncated and leave out the ``[CLS]``/``[SEP]`` the model adds to
    every text, so a segment of ``n`` counted tokens costs the model ``n + 2``.
    """

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(load_tokenizer(tokenizer_file()))
