"""Parity of the bundled model (fused graph, int8-stored weights) with the fp32
sentence-transformers reference: it guards every change to the file or its session."""

from __future__ import annotations

from typing import Any

import numpy as np

from ragloom.embeddings.onnx import AllMiniLmL6V2QuantizedEmbeddingModel

MIN_COSINE = 0.999  # measured: 0.9997 at the least


def cosines(model: AllMiniLmL6V2QuantizedEmbeddingModel, texts: list[str], ref: Any) -> Any:
    result = model.embed_all(texts)
    got = np.array([np.asarray(e) for e in result.embeddings], dtype=np.float64)
    want = np.array(ref, dtype=np.float64)
    want /= np.linalg.norm(want, axis=1, keepdims=True)  # undo the rounding to 6 decimals
    return (got * want).sum(axis=1) / np.linalg.norm(got, axis=1)


def test_fixture_is_what_the_test_expects(reference: dict[str, Any]) -> None:
    assert reference["dimension"] == 384
    assert reference["max_seq_length"] == 256
    assert len(reference["items"]) >= 10
    assert any(item["tokens"]["full"] > 256 for item in reference["items"])  # truncation case


def test_cosine_with_fp32_reference_in_one_batch(
    model: AllMiniLmL6V2QuantizedEmbeddingModel, reference: dict[str, Any]
) -> None:
    texts = [item["text"] for item in reference["items"]]
    sims = cosines(model, texts, [item["embedding"] for item in reference["items"]])
    assert sims.min() >= MIN_COSINE, dict(zip(texts, sims.round(4).tolist(), strict=True))


def test_cosine_with_fp32_reference_one_by_one(
    model: AllMiniLmL6V2QuantizedEmbeddingModel, reference: dict[str, Any]
) -> None:
    for item in reference["items"]:
        sims = cosines(model, [item["text"]], [item["embedding"]])
        assert sims[0] >= MIN_COSINE, (item["text"][:40], sims[0])


def test_token_counts_match_the_reference_tokenizer(
    model: AllMiniLmL6V2QuantizedEmbeddingModel, reference: dict[str, Any]
) -> None:
    for item in reference["items"]:
        usage = model.embed(item["text"]).token_usage
        assert usage is not None
        assert usage.input_token_count == item["tokens"]["truncated"]
        full = model.tokenizer.count_tokens(item["text"]) + model.special_tokens
        assert full == item["tokens"]["full"]
