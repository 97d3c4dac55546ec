"""Shared fixtures: one loaded bundled model per test session (loading takes ~0.3 s)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragloom.embeddings.onnx import AllMiniLmL6V2QuantizedEmbeddingModel

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def shared_model() -> AllMiniLmL6V2QuantizedEmbeddingModel:
    model = AllMiniLmL6V2QuantizedEmbeddingModel()
    model.load()
    return model


@pytest.fixture
def model(
    shared_model: AllMiniLmL6V2QuantizedEmbeddingModel,
) -> AllMiniLmL6V2QuantizedEmbeddingModel:
    return shared_model


@pytest.fixture(scope="session")
def reference() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (FIXTURES / "reference_embeddings.json").read_text(encoding="utf-8")
    )
    return data
