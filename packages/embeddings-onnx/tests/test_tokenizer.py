"""The token counter of all-MiniLM-L6-v2."""

from __future__ import annotations

import pytest

from ragloom.embeddings.onnx import AllMiniLmL6V2Tokenizer, HuggingFaceTokenizer
from ragloom.embeddings.onnx.all_minilm import tokenizer_file


def test_counts_wordpiece_tokens_without_special_tokens() -> None:
    tokenizer = AllMiniLmL6V2Tokenizer()
    assert tokenizer.count_tokens("hello world") == 2
    assert tokenizer.count_tokens("") == 0
    assert tokenizer.count_tokens("unbelievably") > 1  # split into word pieces
    assert tokenizer.special_tokens == 2


def test_counts_special_tokens_when_asked() -> None:
    tokenizer = AllMiniLmL6V2Tokenizer(add_special_tokens=True)
    assert tokenizer.count_tokens("hello world") == 4
    assert tokenizer.count_tokens("") == 2


def test_does_not_truncate() -> None:
    tokenizer = HuggingFaceTokenizer(tokenizer_file())
    assert tokenizer.count_tokens("word " * 1000) == 1000


def test_batch_counts_match_single_counts() -> None:
    tokenizer = AllMiniLmL6V2Tokenizer()
    texts = ["hello world", "", "Naïve café — déjà vu!", "x " * 300]
    assert tokenizer.count_tokens_batch(texts) == [tokenizer.count_tokens(t) for t in texts]
    assert tokenizer.count_tokens_batch([]) == []


def test_rejects_non_strings() -> None:
    tokenizer = AllMiniLmL6V2Tokenizer()
    with pytest.raises(TypeError):
        tokenizer.count_tokens(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="index 1"):
        tokenizer.count_tokens_batch(["ok", 3])  # type: ignore[list-item]
