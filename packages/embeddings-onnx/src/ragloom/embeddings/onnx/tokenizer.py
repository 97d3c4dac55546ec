"""Count a model's tokens with a Hugging Face ``tokenizer.json`` (for token-sized splitting)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ragloom.embeddings.onnx.errors import EmbeddingModelError

if TYPE_CHECKING:
    from tokenizers import Tokenizer


def load_tokenizer(path: str | os.PathLike[str]) -> Tokenizer:
    """Load ``tokenizer.json`` with padding and truncation switched off."""
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


class HuggingFaceTokenizer:
    """Counts tokens as the model's own tokenizer does, with no truncation.

    By default the special tokens the model adds around every text (``[CLS]`` and
    ``[SEP]`` for BERT models) are not counted, so that the count of a text is the
    count of its own pieces and counts of adjacent pieces add up; the model itself
    sees ``count_tokens(text) + special_tokens`` tokens. Pass
    ``add_special_tokens=True`` to count them too.
    """

    def __init__(
        self, tokenizer_path: str | os.PathLike[str], *, add_special_tokens: bool = False
    ) -> None:
        self._path = Path(tokenizer_path)
        self._tokenizer = load_tokenizer(self._path)
        self._add_special_tokens = add_special_tokens
        self._special = self._tokenizer.num_special_tokens_to_add(False)

    @property
    def special_tokens(self) -> int:
        """How many special tokens the model adds to every single text."""
        return self._special

    def count_tokens(self, text: str) -> int:
        """The number of tokens of ``text`` (no truncation)."""
        if not isinstance(text, str):
            raise TypeError(f"count_tokens expects str, got {type(text).__name__}")
        encoding = self._tokenizer.encode(text, add_special_tokens=self._add_special_tokens)
        return len(encoding.ids)

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        """The token counts of ``texts``, in order (one parallel call into ``tokenizers``)."""
        items = list(texts)
        for index, text in enumerate(items):
            if not isinstance(text, str):
                raise TypeError(
                    f"count_tokens_batch expects str, got {type(text).__name__} at index {index}"
                )
        if not items:
            return []
        encodings = self._tokenizer.encode_batch_fast(
            items, add_special_tokens=self._add_special_tokens
        )
        return [len(encoding.ids) for encoding in encodings]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self._path)!r})"
