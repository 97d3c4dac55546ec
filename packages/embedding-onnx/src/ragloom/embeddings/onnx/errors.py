"""Errors of the ONNX embedding model, in ragloom's error hierarchy."""

from __future__ import annotations

from ragloom.core.errors import EmbeddingModelError

__all__ = ["EmbeddingModelError", "TextTooLongError"]


class TextTooLongError(EmbeddingModelError, ValueError):
    """A text has more tokens than the model accepts and the model is ``strict``.

    ``index`` is the position of the text in the ``embed_all`` call, ``token_count`` its
    length in model tokens (special tokens included) and ``max_length`` the limit.
    """

    def __init__(self, index: int, token_count: int, max_length: int) -> None:
        self.index = index
        self.token_count = token_count
        self.max_length = max_length
        super().__init__(
            f"text at index {index} has {token_count} tokens (special tokens included), "
            f"more than the model's limit of {max_length}; split it into smaller segments, "
            "or create the model with strict=False to truncate it"
        )
