"""Embedding models both ways: ragloom's in LlamaIndex, LlamaIndex's in ragloom."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr

from ragloom.core import aio
from ragloom.core.embedding import EmbeddingModel
from ragloom.core.kit.foreign import ForeignEmbeddingModel

__all__ = ["LlamaIndexEmbeddingModel", "RagloomEmbedding"]


class RagloomEmbedding(BaseEmbedding):
    """A ragloom ``EmbeddingModel`` as a LlamaIndex embedding model (queries and texts
    embedded alike, as ragloom does; batches of ``embed_batch_size`` per call)."""

    _model: EmbeddingModel = PrivateAttr()

    def __init__(self, model: EmbeddingModel, **kwargs: Any) -> None:
        kwargs.setdefault("model_name", type(model).__name__)
        super().__init__(**kwargs)
        self._model = model

    @classmethod
    def class_name(cls) -> str:
        return "RagloomEmbedding"

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._model.embed(query).embedding.to_list()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return (await aio.aembed(self._model, query)).embedding.to_list()

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._model.embed(text).embedding.to_list()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [e.to_list() for e in self._model.embed_all(texts).embeddings]

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [e.to_list() for e in (await aio.aembed_all(self._model, texts)).embeddings]


class LlamaIndexEmbeddingModel(ForeignEmbeddingModel):
    """A LlamaIndex embedding model as a ragloom ``EmbeddingModel``, through its
    ``get_text_embedding_batch`` (which batches by the model's ``embed_batch_size``).
    LlamaIndex reports no token usage. ``dimension``, when not given, is measured once.
    Failures of the wrapped model are :class:`EmbeddingModelError` naming it (core's
    :class:`~ragloom.core.kit.foreign.ForeignEmbeddingModel`)."""

    def __init__(self, embed_model: BaseEmbedding, *, dimension: int | None = None) -> None:
        super().__init__(
            lambda batch: self.embed_model.get_text_embedding_batch(batch),
            lambda batch: self.embed_model.aget_text_embedding_batch(batch),
            what=type(embed_model).__name__,
            dimension=dimension,
        )
        self.embed_model = embed_model
