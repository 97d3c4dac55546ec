"""The testkit's EmbeddingModelSuite, unchanged, on the bundled model."""

from __future__ import annotations

import pytest

from ragloom.embeddings.onnx import AllMiniLmL6V2QuantizedEmbeddingModel
from ragloom.testkit.embedding_model import EmbeddingModelSuite


class TestAllMiniLmL6V2Quantized(EmbeddingModelSuite):
    @pytest.fixture
    def model(
        self, shared_model: AllMiniLmL6V2QuantizedEmbeddingModel
    ) -> AllMiniLmL6V2QuantizedEmbeddingModel:
        return shared_model
