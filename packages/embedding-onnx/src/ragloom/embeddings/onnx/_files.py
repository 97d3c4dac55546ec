"""Where the bundled all-MiniLM-L6-v2 files are (found with ``importlib.resources``)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ragloom.embeddings.onnx.errors import EmbeddingModelError

MODEL_NAME = "all-MiniLM-L6-v2"


def _resource(package: str, *parts: str, distribution: str) -> Path:
    try:
        traversable = resources.files(package).joinpath(*parts)
    except ModuleNotFoundError as exc:
        raise EmbeddingModelError(
            f"the {MODEL_NAME} files need the package {distribution!r}: pip install {distribution}"
        ) from exc
    path = Path(str(traversable))
    if not path.is_file():
        raise EmbeddingModelError(f"{'/'.join(parts)} is missing from the package {distribution!r}")
    return path


def model_file() -> Path:
    """The fused ONNX file of all-MiniLM-L6-v2 with int8-stored weights, shipped in this
    package (made by ``tools/build_model.py``)."""
    return _resource(
        "ragloom.embeddings.onnx",
        "resources",
        MODEL_NAME,
        "model.onnx",
        distribution="ragloom-embedding-onnx",
    )


def tokenizer_file() -> Path:
    """The ``tokenizer.json`` of all-MiniLM-L6-v2 shipped in this package."""
    return _resource(
        "ragloom.embeddings.onnx",
        "resources",
        MODEL_NAME,
        "tokenizer.json",
        distribution="ragloom-embedding-onnx",
    )
