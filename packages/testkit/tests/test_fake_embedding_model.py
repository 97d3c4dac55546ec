"""FakeEmbeddingModel passes the model suite and is deterministic across processes."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from ragloom.core import EmbeddingModel, TextSegment, TokenUsage
from ragloom.testkit import EmbeddingModelSuite, FakeEmbeddingModel


class TestFakeEmbeddingModel(EmbeddingModelSuite):
    @pytest.fixture
    def model(self) -> FakeEmbeddingModel:
        return FakeEmbeddingModel(dimension=64)


def test_is_an_embedding_model_with_normalized_vectors() -> None:
    model = FakeEmbeddingModel(dimension=16)
    assert isinstance(model, EmbeddingModel)
    vector = model.embed("hello world").embedding.vector
    assert vector.shape == (16,)
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-6)


def test_same_vector_in_another_process() -> None:
    code = (
        "from ragloom.testkit import FakeEmbeddingModel;"
        "print(FakeEmbeddingModel(8).embed('stable across runs').embedding.to_list())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(
        FakeEmbeddingModel(8).embed("stable across runs").embedding.to_list()
    )


def test_counts_words_and_records_batches() -> None:
    model = FakeEmbeddingModel()
    result = model.embed_all(["one two", TextSegment("three"), ""])
    assert result.token_usage == TokenUsage(3, 0, 3)
    assert model.calls == [3]
    assert np.linalg.norm(result.embeddings[2].vector) == pytest.approx(1.0, abs=1e-6)


def test_rejects_a_bad_dimension() -> None:
    with pytest.raises(ValueError, match="dimension"):
        FakeEmbeddingModel(0)
