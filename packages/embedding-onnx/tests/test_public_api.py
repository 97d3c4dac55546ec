"""ragloom.embeddings.onnx: __all__ is pinned and importable; its errors are RagloomErrors."""

import ragloom.embeddings.onnx as package
from ragloom.core.errors import RagloomError

EXPECTED_ALL = [
    "AllMiniLmL6V2QuantizedEmbeddingModel",
    "AllMiniLmL6V2Tokenizer",
    "EmbeddingModelError",
    "OnnxEmbeddingModel",
    "TextTooLongError",
]


def test_all_is_pinned_and_importable() -> None:
    assert sorted(package.__all__) == EXPECTED_ALL
    namespace: dict[str, object] = {}
    exec(f"from {package.__name__} import *", namespace)
    assert set(EXPECTED_ALL) <= set(namespace)


def test_every_public_error_is_a_ragloom_error() -> None:
    public = [getattr(package, name) for name in package.__all__]
    errors = [v for v in public if isinstance(v, type) and issubclass(v, BaseException)]
    assert [e for e in errors if not issubclass(e, RagloomError)] == []
