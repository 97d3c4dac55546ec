"""The bundled model is registered as an entry point and loads through the registry."""

from __future__ import annotations

import pytest

from ragloom.core import plugins
from ragloom.embeddings.onnx import AllMiniLmL6V2QuantizedEmbeddingModel

NAME = "all-minilm-l6-v2"


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(plugins.env_var(plugins.EMBEDDING_MODELS), raising=False)
    plugins.refresh()


def test_entry_point_is_registered() -> None:
    found = [ep for ep in plugins.providers(plugins.EMBEDDING_MODELS) if ep.name == NAME]
    assert len(found) == 1
    assert found[0].dist is not None
    assert found[0].dist.name == "ragloom-embedding-onnx"


def test_load_by_name() -> None:
    model = plugins.load(plugins.EMBEDDING_MODELS, NAME)
    assert isinstance(model, AllMiniLmL6V2QuantizedEmbeddingModel)


def test_load_default(monkeypatch: pytest.MonkeyPatch) -> None:
    if len(plugins.providers(plugins.EMBEDDING_MODELS)) > 1:
        # Another embedding model is installed in this environment: choose ours by name.
        monkeypatch.setenv(plugins.env_var(plugins.EMBEDDING_MODELS), NAME)
    model = plugins.load_default(plugins.EMBEDDING_MODELS)
    assert isinstance(model, AllMiniLmL6V2QuantizedEmbeddingModel)
    assert model.embed("hello").embedding.dimension == 384
