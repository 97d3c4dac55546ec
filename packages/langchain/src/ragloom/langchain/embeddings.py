"""Embedding models both ways: ragloom's as LangChain ``Embeddings``, LangChain's as ragloom's."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.embeddings import Embeddings

from ragloom.core import aio
from ragloom.core.document import TextSegment
from ragloom.core.embedding import EmbeddingModel, EmbeddingResult, text_of
from ragloom.core.errors import EmbeddingModelError, InvalidArgumentError, RagloomError
from ragloom.langchain._documents import to_embeddings

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


class LangChainEmbeddingModel(EmbeddingModel):
    """LangChain ``Embeddings`` as a ragloom ``EmbeddingModel``.

    Every text goes through ``embed_documents`` (ragloom does not tell queries from
    documents). LangChain reports no token usage, so results carry none. ``dimension``,
    when not given, is measured once by embedding a probe text. Failures of the wrapped
    object are raised as :class:`EmbeddingModelError` naming it.
    """

    def __init__(self, embeddings: Embeddings, *, dimension: int | None = None) -> None:
        if dimension is not None and (type(dimension) is not int or dimension < 1):
            raise InvalidArgumentError(f"dimension must be a positive int, got {dimension!r}")
        self.embeddings = embeddings
        self._dimension = dimension

    @property
    def dimension(self) -> int:
        """The size of the vectors (given, or measured on first use)."""
        if self._dimension is None:
            self._dimension = self.embed("dimension").embedding.dimension
        return self._dimension

    def embed_all(self, texts: Sequence[str | TextSegment]) -> EmbeddingResult:
        """One embedding per text, in order, in one ``embed_documents`` call."""
        batch = [text_of(item) for item in texts]
        if not batch:
            return EmbeddingResult([])
        try:
            raw = self.embeddings.embed_documents(batch)
        except RagloomError:
            raise
        except Exception as exc:
            raise EmbeddingModelError(f"{self._name}.embed_documents failed: {exc}") from exc
        return EmbeddingResult(to_embeddings(raw, len(batch), f"{self._name}.embed_documents"))

    async def aembed_all(self, texts: Sequence[str | TextSegment]) -> EmbeddingResult:
        """:meth:`embed_all` through ``aembed_documents``, without blocking."""
        batch = [text_of(item) for item in texts]
        if not batch:
            return EmbeddingResult([])
        try:
            raw = await self.embeddings.aembed_documents(batch)
        except RagloomError:
            raise
        except Exception as exc:
            raise EmbeddingModelError(f"{self._name}.aembed_documents failed: {exc}") from exc
        return EmbeddingResult(to_embeddings(raw, len(batch), f"{self._name}.aembed_documents"))

    @property
    def _name(self) -> str:
        return type(self.embeddings).__name__
