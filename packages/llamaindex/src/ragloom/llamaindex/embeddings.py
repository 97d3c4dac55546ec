"""Embedding models both ways: ragloom's in LlamaIndex, LlamaIndex's in ragloom."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr

from ragloom.core import aio
from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding, EmbeddingModel, EmbeddingResult, text_of
from ragloom.core.errors import EmbeddingModelError, InvalidArgumentError, RagloomError

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


class LlamaIndexEmbeddingModel(EmbeddingModel):
    """A LlamaIndex embedding model as a ragloom ``EmbeddingModel``, through its
    ``get_text_embedding_batch`` (which batches by the model's ``embed_batch_size``).
    LlamaIndex reports no token usage. ``dimension``, when not given, is measured once.
    Failures of the wrapped model are :class:`EmbeddingModelError` naming it."""

    def __init__(self, embed_model: BaseEmbedding, *, dimension: int | None = None) -> None:
        if dimension is not None and (type(dimension) is not int or dimension < 1):
            raise InvalidArgumentError(f"dimension must be a positive int, got {dimension!r}")
        self.embed_model = embed_model
        self._dimension = dimension

    @property
    def dimension(self) -> int:
        """The size of the vectors (given, or measured on first use)."""
        if self._dimension is None:
            self._dimension = self.embed("dimension").embedding.dimension
        return self._dimension

    def embed_all(self, texts: Sequence[str | TextSegment]) -> EmbeddingResult:
        """One embedding per text, in order."""
        batch = [text_of(item) for item in texts]
        if not batch:
            return EmbeddingResult([])
        try:
            vectors = self.embed_model.get_text_embedding_batch(batch)
        except RagloomError:
            raise
        except Exception as exc:
            raise EmbeddingModelError(f"{self._name} failed: {exc}") from exc
        return self._result(vectors, len(batch))

    async def aembed_all(self, texts: Sequence[str | TextSegment]) -> EmbeddingResult:
        """:meth:`embed_all` through ``aget_text_embedding_batch``, without blocking."""
        batch = [text_of(item) for item in texts]
        if not batch:
            return EmbeddingResult([])
        try:
            vectors = await self.embed_model.aget_text_embedding_batch(batch)
        except RagloomError:
            raise
        except Exception as exc:
            raise EmbeddingModelError(f"{self._name} failed: {exc}") from exc
        return self._result(vectors, len(batch))

    def _result(self, vectors: list[list[float]], expected: int) -> EmbeddingResult:
        if len(vectors) != expected:
            raise EmbeddingModelError(
                f"{self._name} returned {len(vectors)} embeddings for {expected} texts"
            )
        try:
            return EmbeddingResult([Embedding(vector) for vector in vectors])
        except ValueError as exc:
            raise EmbeddingModelError(f"{self._name} returned an invalid embedding: {exc}") from exc

    @property
    def _name(self) -> str:
        return type(self.embed_model).__name__
