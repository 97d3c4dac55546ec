"""Embedding models both ways: ragloom's as LangChain ``Embeddings``, LangChain's as ragloom's."""

from __future__ import annotations

from langchain_core.embeddings import Embeddings

from ragloom.core import aio
from ragloom.core.embedding import EmbeddingModel
from ragloom.core.kit.foreign import ForeignEmbeddingModel

__all__ = ["LangChainEmbeddingModel", "RagloomEmbeddings"]


class RagloomEmbeddings(Embeddings):
    """A ragloom ``EmbeddingModel`` as LangChain ``Embeddings`` (queries and documents are
    embedded alike, as ragloom does); the async methods use the model's own coroutine
    when it has one."""

    def __init__(self, model: EmbeddingModel) -> None:
        self.model = model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order, in one ``embed_all`` call."""
        return [e.to_list() for e in self.model.embed_all(texts).embeddings]

    def embed_query(self, text: str) -> list[float]:
        """The vector of one query text."""
        return self.model.embed(text).embedding.to_list()

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """:meth:`embed_documents` without blocking."""
        return [e.to_list() for e in (await aio.aembed_all(self.model, texts)).embeddings]

    async def aembed_query(self, text: str) -> list[float]:
        """:meth:`embed_query` without blocking."""
        return (await aio.aembed(self.model, text)).embedding.to_list()


class LangChainEmbeddingModel(ForeignEmbeddingModel):
    """LangChain ``Embeddings`` as a ragloom ``EmbeddingModel``.

    Every text goes through ``embed_documents`` (ragloom does not tell queries from
    documents). LangChain reports no token usage, so results carry none. ``dimension``,
    when not given, is measured once by embedding a probe text. Failures of the wrapped
    object are raised as :class:`EmbeddingModelError` naming it (core's
    :class:`~ragloom.core.kit.foreign.ForeignEmbeddingModel`).
    """

    def __init__(self, embeddings: Embeddings, *, dimension: int | None = None) -> None:
        name = type(embeddings).__name__
        super().__init__(
            lambda batch: self.embeddings.embed_documents(batch),
            lambda batch: self.embeddings.aembed_documents(batch),
            what=f"{name}.embed_documents",
            awhat=f"{name}.aembed_documents",
            dimension=dimension,
        )
        self.embeddings = embeddings
