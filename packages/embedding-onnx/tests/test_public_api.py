"""ragloom.embeddings.onnx: __all__ is pinned and importable; its errors are RagloomErrors."""

import ragloom.embeddings.onnx
from ragloom.testkit.public_api import check_public_api


def test_public_api() -> None:
    check_public_api(
        ragloom.embeddings.onnx,
        [
            "AllMiniLmL6V2QuantizedEmbeddingModel",
            "AllMiniLmL6V2Tokenizer",
            "EmbeddingModelError",
            "OnnxEmbeddingModel",
            "TextTooLongError",
        ],
    )
