"""FakeEmbeddingModel: a deterministic, dependency-free embedding model for tests.

Hashes the word n-grams of a text into a fixed number of signed buckets (the "hashing
trick") and normalizes the result. Texts sharing words get similar vectors, the same
text always gets the same vector in every process (BLAKE2b, not ``hash``), and no model
file or network is needed.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Sequence

import numpy as np

from ragloom.core.document import TextSegment
from ragloom.core.embedding import (
    Embedding,
    EmbeddingModel,
    EmbeddingResult,
    TokenUsage,
    text_of,
)
from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = ["FakeEmbeddingModel"]

_WORD = re.compile(r"\w+")


class FakeEmbeddingModel(EmbeddingModel):
    """Embeds lowercased word n-grams (1 to ``max_ngram``) into ``dimension`` buckets.

    ``calls`` records the batch size of every ``embed_all`` call, so tests can check
    batching. Token usage counts words as input tokens. A text without words embeds to
    the vector of an empty marker feature, never to the zero vector.
    """

    def __init__(self, dimension: int = 64, *, max_ngram: int = 2) -> None:
        if type(dimension) is not int or dimension < 1:
            raise InvalidArgumentError(f"dimension must be a positive int, got {dimension!r}")
        if type(max_ngram) is not int or max_ngram < 1:
            raise InvalidArgumentError(f"max_ngram must be a positive int, got {max_ngram!r}")
        self._dimension = dimension
        self._max_ngram = max_ngram
        self._lock = threading.Lock()
        self.calls: list[int] = []

    @property
    def dimension(self) -> int:
        """The configured dimension."""
        return self._dimension

    def embed_all(self, texts: Sequence[str | TextSegment]) -> EmbeddingResult:
        """One normalized embedding per text, in order; usage counts words."""
        if isinstance(texts, str | TextSegment):
            raise InvalidArgumentTypeError("embed_all takes a sequence of texts; use embed for one")
        words = [_WORD.findall(text_of(item).lower()) for item in texts]
        with self._lock:
            self.calls.append(len(words))
        embeddings = [self._embed_words(item) for item in words]
        return EmbeddingResult(embeddings, TokenUsage(sum(len(item) for item in words), 0))

    def _embed_words(self, words: list[str]) -> Embedding:
        vector = np.zeros(self._dimension, dtype=np.float64)
        features = [
            " ".join(words[start : start + n])
            for n in range(1, self._max_ngram + 1)
            for start in range(len(words) - n + 1)
        ] or ["\x00empty"]
        for feature in features:
            digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest())
            vector[digest % self._dimension] += 1.0 if digest >> 63 else -1.0
        norm = float(np.linalg.norm(vector))
        if norm == 0.0:  # every feature cancelled out: fall back to the first bucket
            vector[0], norm = 1.0, 1.0
        return Embedding._trusted((vector / norm).astype(np.float32))
