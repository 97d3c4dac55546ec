"""RagloomVectorStore: any ragloom EmbeddingStore as a LangChain VectorStore.

LangChain code (retrievers, chains, the indexing API) keeps its calls; the vectors go to a
ragloom store (in memory, pgvector, Qdrant, Milvus, ...), searched with ragloom's filters
and MMR. Scores are ragloom's relevance ``(cosine + 1) / 2`` in [0, 1], higher is better,
so ``similarity_search_with_relevance_scores`` reports them unchanged.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Self

import numpy as np
from langchain_core.documents import Document as LcDocument
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from ragloom.core import aio
from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding
from ragloom.core.errors import InvalidArgumentError
from ragloom.core.filters import Filter
from ragloom.core.kit.foreign import foreign_embeddings
from ragloom.core.mmr import maximal_marginal_relevance
from ragloom.core.stores.base import (
    EmbeddingMatch,
    EmbeddingSearchRequest,
    EmbeddingSearchResult,
    EmbeddingStore,
    StoredEmbedding,
)
from ragloom.langchain._documents import to_document, to_segment
from ragloom.langchain.filters import FilterLike, to_ragloom_filter

__all__ = ["RagloomVectorStore"]


class RagloomVectorStore(VectorStore):
    """A LangChain ``VectorStore`` over ragloom's ``store``, embedding with ``embedding``.

    ``get_by_ids`` reads entries with the store's ``get`` (entries added by ragloom itself
    too; a bare embedding without a segment is no document). ``filter=`` takes a ragloom
    ``Filter``, a ragloom filter string or LangChain's dict form
    (:mod:`ragloom.langchain.filters`).
    """

    def __init__(self, store: EmbeddingStore, embedding: Embeddings) -> None:
        self.store = store
        self._embedding = embedding

    @property
    def embeddings(self) -> Embeddings:
        """The LangChain embeddings that embed texts and queries."""
        return self._embedding

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        store: EmbeddingStore | None = None,
        **kwargs: Any,
    ) -> Self:
        """``store`` (required: e.g. ``InMemoryEmbeddingStore()``) holding ``texts``."""
        _no_options("from_texts", kwargs)
        if store is None:
            raise InvalidArgumentError(
                "from_texts needs store=<a ragloom EmbeddingStore>, e.g. "
                "store=InMemoryEmbeddingStore() from ragloom.core.stores.in_memory"
            )
        vectorstore = cls(store, embedding)
        vectorstore.add_texts(texts, metadatas, ids=ids)
        return vectorstore

    # -- writing ----------------------------------------------------------------------

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Embed and add ``texts`` in one batch; an existing id is replaced. Missing ids
        (``None`` entries included) get UUID4s."""
        batch, segments, entry_ids = self._prepare(texts, metadatas, ids, kwargs)
        vectors = self._embed_documents(self._embedding.embed_documents(batch), len(batch))
        return self.store.add_all(vectors, segments, ids=entry_ids)

    async def aadd_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """:meth:`add_texts` without blocking (the store's own coroutine when it has one)."""
        batch, segments, entry_ids = self._prepare(texts, metadatas, ids, kwargs)
        raw = await self._embedding.aembed_documents(batch)
        vectors = self._embed_documents(raw, len(batch))
        return await aio.aadd_all(self.store, vectors, segments, ids=entry_ids)

    def delete(
        self, ids: list[str] | None = None, *, filter: FilterLike | None = None, **kwargs: Any
    ) -> bool:
        """Remove the entries with ``ids`` (unknown ids are ignored) or those matching
        ``filter``; one of the two is required, so that nothing empties the store by
        accident (``store.remove_all()`` does that)."""
        _no_options("delete", kwargs)
        removed_ids, removed_filter = _removal(ids, filter)
        self.store.remove_all(removed_ids, filter=removed_filter)
        return True

    async def adelete(
        self, ids: list[str] | None = None, *, filter: FilterLike | None = None, **kwargs: Any
    ) -> bool:
        """:meth:`delete` without blocking."""
        _no_options("adelete", kwargs)
        removed_ids, removed_filter = _removal(ids, filter)
        await aio.aremove_all(self.store, removed_ids, filter=removed_filter)
        return True

    # -- reading by id ----------------------------------------------------------------

    def get_by_ids(self, ids: Sequence[str], /) -> list[LcDocument]:
        """The documents stored under ``ids``, in the order asked; missing ids are left out."""
        return _documents(self.store.get(ids))

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[LcDocument]:
        """:meth:`get_by_ids` without blocking (the store's own ``aget`` when it has one)."""
        return _documents(await aio.aget(self.store, ids))

    # -- similarity search ------------------------------------------------------------

    def similarity_search(
        self, query: str, k: int = 4, filter: FilterLike | None = None, **kwargs: Any
    ) -> list[LcDocument]:
        """The ``k`` documents most similar to ``query`` that pass ``filter``."""
        return [doc for doc, _ in self.similarity_search_with_score(query, k, filter, **kwargs)]

    async def asimilarity_search(
        self, query: str, k: int = 4, filter: FilterLike | None = None, **kwargs: Any
    ) -> list[LcDocument]:
        """:meth:`similarity_search` without blocking."""
        scored = await self.asimilarity_search_with_score(query, k, filter, **kwargs)
        return [doc for doc, _ in scored]

    def similarity_search_with_score(
        self, query: str, k: int = 4, filter: FilterLike | None = None, **kwargs: Any
    ) -> list[tuple[LcDocument, float]]:
        """The ``k`` best documents with their relevance ``(cosine + 1) / 2``, best first."""
        _no_options("similarity_search", kwargs)
        vector = self._embed_query(self._embedding.embed_query(query))
        return _scored(self.store.search(_request(vector, k, filter)))

    async def asimilarity_search_with_score(
        self, query: str, k: int = 4, filter: FilterLike | None = None, **kwargs: Any
    ) -> list[tuple[LcDocument, float]]:
        """:meth:`similarity_search_with_score` without blocking."""
        _no_options("similarity_search", kwargs)
        vector = self._embed_query(await self._embedding.aembed_query(query))
        return _scored(await aio.asearch(self.store, _request(vector, k, filter)))

    def similarity_search_by_vector(
        self, embedding: list[float], k: int = 4, filter: FilterLike | None = None, **kwargs: Any
    ) -> list[LcDocument]:
        """The ``k`` documents most similar to the vector ``embedding``."""
        _no_options("similarity_search_by_vector", kwargs)
        request = _request(self._embed_query(embedding), k, filter)
        return [doc for doc, _ in _scored(self.store.search(request))]

    async def asimilarity_search_by_vector(
        self, embedding: list[float], k: int = 4, filter: FilterLike | None = None, **kwargs: Any
    ) -> list[LcDocument]:
        """:meth:`similarity_search_by_vector` without blocking."""
        _no_options("similarity_search_by_vector", kwargs)
        request = _request(self._embed_query(embedding), k, filter)
        return [doc for doc, _ in _scored(await aio.asearch(self.store, request))]

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        """Scores are already relevances in [0, 1]: reported as they are."""
        return _identity

    # -- maximal marginal relevance ---------------------------------------------------

    def max_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: FilterLike | None = None,
        **kwargs: Any,
    ) -> list[LcDocument]:
        """``k`` of the ``fetch_k`` most similar documents, picked by ragloom's MMR
        (``lambda_mult`` 1 is relevance only, 0 diversity only)."""
        vector = self._embedding.embed_query(query)
        return self.max_marginal_relevance_search_by_vector(
            vector, k, fetch_k, lambda_mult, filter, **kwargs
        )

    async def amax_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: FilterLike | None = None,
        **kwargs: Any,
    ) -> list[LcDocument]:
        """:meth:`max_marginal_relevance_search` without blocking."""
        vector = await self._embedding.aembed_query(query)
        return await self.amax_marginal_relevance_search_by_vector(
            vector, k, fetch_k, lambda_mult, filter, **kwargs
        )

    def max_marginal_relevance_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: FilterLike | None = None,
        **kwargs: Any,
    ) -> list[LcDocument]:
        """:meth:`max_marginal_relevance_search` for a query vector."""
        _no_options("max_marginal_relevance_search", kwargs)
        query = self._embed_query(embedding)
        result = self.store.search(_request(query, max(k, fetch_k), filter))
        return _mmr(query, result, k, lambda_mult)

    async def amax_marginal_relevance_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: FilterLike | None = None,
        **kwargs: Any,
    ) -> list[LcDocument]:
        """:meth:`max_marginal_relevance_search_by_vector` without blocking."""
        _no_options("max_marginal_relevance_search", kwargs)
        query = self._embed_query(embedding)
        result = await aio.asearch(self.store, _request(query, max(k, fetch_k), filter))
        return _mmr(query, result, k, lambda_mult)

    # -- helpers ----------------------------------------------------------------------

    def _prepare(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None,
        ids: list[str] | None,
        options: dict[str, Any],
    ) -> tuple[list[str], list[TextSegment], list[str]]:
        """The texts, their segments and their ids."""
        options.pop("batch_size", None)  # LangChain's indexing API passes it; one batch here
        _no_options("add_texts", options)
        batch = list(texts)
        if metadatas is not None and len(metadatas) != len(batch):
            raise InvalidArgumentError(f"{len(metadatas)} metadatas for {len(batch)} texts")
        if ids is not None and len(ids) != len(batch):
            raise InvalidArgumentError(f"{len(ids)} ids for {len(batch)} texts")
        entry_ids = [
            str(uuid.uuid4()) if ids is None or ids[i] is None else ids[i]
            for i in range(len(batch))
        ]
        segments = [
            to_segment(text, None if metadatas is None else metadatas[i])
            for i, text in enumerate(batch)
        ]
        return batch, segments, entry_ids

    def _embed_documents(self, raw: list[list[float]], expected: int) -> list[Embedding]:
        return foreign_embeddings(
            raw, expected, f"{type(self._embedding).__name__}.embed_documents"
        )

    def _embed_query(self, raw: list[float]) -> Embedding:
        return foreign_embeddings([raw], 1, f"{type(self._embedding).__name__}.embed_query")[0]


def _identity(score: float) -> float:
    return score


def _no_options(method: str, options: dict[str, Any]) -> None:
    """Reject options this adapter does not know, rather than ignore a misspelled one."""
    if options:
        raise InvalidArgumentError(
            f"RagloomVectorStore.{method} got unknown options {sorted(options)}"
        )


def _request(vector: Embedding, k: int, filter: FilterLike | None) -> EmbeddingSearchRequest:
    return EmbeddingSearchRequest(vector, max_results=k, filter=to_ragloom_filter(filter))


def _removal(
    ids: list[str] | None, filter: FilterLike | None
) -> tuple[list[str] | None, Filter | None]:
    """What ``remove_all`` gets for ``delete(ids, filter=...)``: exactly one of the two."""
    compiled = to_ragloom_filter(filter)
    if (ids is None) == (compiled is None):
        raise InvalidArgumentError(
            "delete takes ids or filter (exactly one); to empty the store call store.remove_all()"
        )
    return ids, compiled


def _documents(entries: list[StoredEmbedding]) -> list[LcDocument]:
    """The documents of entries ``get`` gave back (those with a segment), in its order."""
    return [
        to_document(entry.embedded, entry.embedding_id)
        for entry in entries
        if entry.embedded is not None
    ]


def _with_segments(result: EmbeddingSearchResult) -> list[tuple[EmbeddingMatch, LcDocument]]:
    """The matches that have a segment (a bare embedding is no document), with theirs."""
    return [
        (match, to_document(match.embedded, match.embedding_id))
        for match in result.matches
        if match.embedded is not None
    ]


def _scored(result: EmbeddingSearchResult) -> list[tuple[LcDocument, float]]:
    return [(document, match.score) for match, document in _with_segments(result)]


def _mmr(
    query: Embedding, result: EmbeddingSearchResult, k: int, lambda_mult: float
) -> list[LcDocument]:
    found = _with_segments(result)
    if not found:
        return []
    vectors = np.stack([match.embedding.vector for match, _ in found])
    order = maximal_marginal_relevance(query.vector, vectors, lambda_=lambda_mult, max_results=k)
    return [found[i][1] for i in order]
