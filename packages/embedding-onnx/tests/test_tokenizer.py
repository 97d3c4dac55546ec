"""The token counter of all-MiniLM-L6-v2 (core's Tokenizer protocol)."""

from __future__ import annotations

from ragloom.core.splitters import RecursiveDocumentSplitter
from ragloom.core.tokenizer import Tokenizer
from ragloom.embeddings.onnx import AllMiniLmL6V2QuantizedEmbeddingModel, AllMiniLmL6V2Tokenizer


def test_is_a_core_tokenizer() -> None:
    assert isinstance(AllMiniLmL6V2Tokenizer(), Tokenizer)


def test_counts_wordpiece_tokens_without_special_tokens() -> None:
    tokenizer = AllMiniLmL6V2Tokenizer()
    assert tokenizer.count_tokens("hello world") == 2
    assert tokenizer.count_tokens("") == 0
    assert tokenizer.count_tokens("unbelievably") > 1  # split into word pieces


def test_does_not_truncate() -> None:
    assert AllMiniLmL6V2Tokenizer().count_tokens("word " * 1000) == 1000


def test_batch_counts_match_single_counts() -> None:
    tokenizer = AllMiniLmL6V2Tokenizer()
    texts = ["hello world", "", "Naïve café — déjà vu!", "x " * 300]
    assert tokenizer.count_tokens_batch(texts) == [tokenizer.count_tokens(t) for t in texts]
    assert tokenizer.count_tokens_batch([]) == []


def test_model_tokenizer_counts_what_the_model_reads(
    model: AllMiniLmL6V2QuantizedEmbeddingModel,
) -> None:
    text = "Counting tokens the way the model does keeps segments inside its limit."
    counted = model.tokenizer.count_tokens(text)
    assert counted == AllMiniLmL6V2Tokenizer().count_tokens(text)
    usage = model.embed(text).token_usage
    assert usage is not None
    assert usage.input_token_count == counted + model.special_tokens


def test_splitter_with_the_tokenizer_makes_segments_the_model_reads_whole(
    model: AllMiniLmL6V2QuantizedEmbeddingModel,
) -> None:
    from ragloom.core import Document

    tokenizer = AllMiniLmL6V2Tokenizer()
    limit = model.max_length - model.special_tokens
    text = "\n\n".join(
        f"Section {i}. The ingestion pipeline loads, parses, splits and embeds documents; "
        "each segment must fit the embedding model's window of tokens." * (i % 4 + 1)
        for i in range(30)
    )
    segments = RecursiveDocumentSplitter(limit, 20, tokenizer=tokenizer).split(Document(text))
    assert len(segments) > 1
    strict = AllMiniLmL6V2QuantizedEmbeddingModel(strict=True)
    result = strict.embed_all(segments)  # raises TextTooLongError if one did not fit
    assert len(result.embeddings) == len(segments)
