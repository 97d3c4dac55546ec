"""The bundled default: all-MiniLM-L6-v2 with int8 weights (384 dimensions).

The ONNX file (fused by onnxruntime's transformer optimizer, weights stored as int8
with block-wise scales, computed in fp32) and the tokenizer (``tokenizer.json``) ship
inside this package (Apache-2.0, see the NOTICE beside them). Nothing is downloaded at
run time.
"""

from __future__ import annotations

from ragloom.core.errors import InvalidArgumentError
from ragloom.embeddings.onnx._files import MODEL_NAME, model_file, tokenizer_file
from ragloom.embeddings.onnx.model import OnnxEmbeddingModel

__all__ = [
    "DEFAULT_MAX_LENGTH",
    "DIMENSION",
    "MAX_POSITIONS",
    "MODEL_NAME",
    "AllMiniLmL6V2QuantizedEmbeddingModel",
    "model_file",
    "tokenizer_file",
]

DIMENSION = 384
#: sentence-transformers' max_seq_length of this model; its position table allows 512.
DEFAULT_MAX_LENGTH = 256
MAX_POSITIONS = 512


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
        max_batch_tokens: int | None = 2048,
        intra_op_threads: int | None = None,
        inter_op_threads: int | None = None,
        enable_cpu_mem_arena: bool = True,
        spinning: bool = False,
        strict: bool = False,
    ) -> None:
        if type(max_length) is int and max_length > MAX_POSITIONS:
            raise InvalidArgumentError(
                f"max_length of {MODEL_NAME} is at most {MAX_POSITIONS}, got {max_length!r}"
            )
        super().__init__(
            model_file(),
            tokenizer_file(),
            pooling="mean",
            normalize=True,
            max_length=max_length,
            batch_size=batch_size,
            max_batch_tokens=max_batch_tokens,
            intra_op_threads=intra_op_threads,
            inter_op_threads=inter_op_threads,
            enable_cpu_mem_arena=enable_cpu_mem_arena,
            spinning=spinning,
            strict=strict,
        )

    @property
    def dimension(self) -> int:
        """384 (known without loading the model)."""
        return DIMENSION
