"""In-process embedding models on onnxruntime, with the bundled all-MiniLM-L6-v2 (int8).

>>> from ragloom.embeddings.onnx import AllMiniLmL6V2QuantizedEmbeddingModel
>>> model = AllMiniLmL6V2QuantizedEmbeddingModel()
>>> model.embed("Hello").embedding.dimension
384

onnxruntime is imported only when the first text is embedded.
"""

from ragloom.embeddings.onnx.all_minilm import AllMiniLmL6V2QuantizedEmbeddingModel
from ragloom.embeddings.onnx.errors import EmbeddingModelError, TextTooLongError
from ragloom.embeddings.onnx.model import OnnxEmbeddingModel
from ragloom.embeddings.onnx.tokenizer import AllMiniLmL6V2Tokenizer

__all__ = [
    "AllMiniLmL6V2QuantizedEmbeddingModel",
    "AllMiniLmL6V2Tokenizer",
    "EmbeddingModelError",
    "OnnxEmbeddingModel",
    "TextTooLongError",
]
