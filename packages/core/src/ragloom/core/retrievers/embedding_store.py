"""EmbeddingStoreContentRetriever: semantic search of an embedding store for a query."""

from __future__ import annotations

from typing import cast

from ragloom.core import aio, plugins
from ragloom.core.content import EMBEDDING_ID, SCORE, Content
from ragloom.core.embedding import Embedding, EmbeddingModel
from ragloom.core.errors import InvalidArgumentTypeError
from ragloom.core.filters import Filter
from ragloom.core.query import Query
from ragloom.core.retrievers.dynamic import Dynamic, resolve_dynamic
from ragloom.core.retrievers.rocchio import Rocchio
from ragloom.core.stores.base import (
    EmbeddingSearchRequest,
    EmbeddingSearchResult,
    EmbeddingStore,
)

__all__ = [
    "EmbeddingStoreContentRetriever",
]


class EmbeddingStoreContentRetriever:
    """Embeds the query with ``embedding_model`` and searches ``embedding_store``.

    ``max_results``, ``min_score`` and ``filter`` may each be a value or a function of the
    :class:`Query` (e.g. a filter built from ``query.metadata.chat_memory_id`` to restrict
    a user to their own documents). Each :class:`Content` carries the match's ``score``
    and ``embedding_id`` in its metadata; matches stored without a segment are skipped.
    ``feedback=Rocchio()`` searches twice, the second time with the query vector moved
    towards its first hits (pseudo-relevance feedback; see
    :mod:`ragloom.core.retrievers.rocchio`).
    """

    def __init__(
        self,
        embedding_store: EmbeddingStore,
        embedding_model: EmbeddingModel | None = None,
        *,
        max_results: Dynamic[int] = 3,
        min_score: Dynamic[float] = 0.0,
        filter: Dynamic[Filter | None] = None,
        display_name: str = "default",
        feedback: Rocchio | None = None,
    ) -> None:
        if feedback is not None and not isinstance(feedback, Rocchio):
            raise InvalidArgumentTypeError(
                f"feedback must be a Rocchio or None, got {type(feedback).__name__}"
            )
        self.feedback = feedback
        self.embedding_store = embedding_store
        self.embedding_model = embedding_model or cast(
            EmbeddingModel, plugins.load_default(plugins.EMBEDDING_MODELS)
        )
        self.max_results = max_results
        self.min_score = min_score
        self.filter = filter
        self.display_name = display_name
        if not callable(max_results) or not callable(min_score):
            # Validate static settings now rather than at the first query.
            EmbeddingSearchRequest(
                [1.0],
                max_results=max_results if not callable(max_results) else 1,
                min_score=min_score if not callable(min_score) else 0.0,
            )

    @classmethod
    def from_defaults(cls, embedding_store: EmbeddingStore) -> EmbeddingStoreContentRetriever:
        """The spec's ``EmbeddingStoreContentRetriever.from(store)``: default model, top 3."""
        return cls(embedding_store)

    def retrieve(self, query: Query) -> list[Content]:
        """The most similar stored segments, best first."""
        embedding = self.embedding_model.embed(query.text).embedding
        filter = resolve_dynamic(self.filter, query)
        if self.feedback is not None:
            hits = self.embedding_store.search(self._feedback_request(embedding, filter)).matches
            embedding = self.feedback.update(embedding, [hit.embedding for hit in hits])
        return _contents(self.embedding_store.search(self._request(embedding, query, filter)))

    async def aretrieve(self, query: Query) -> list[Content]:
        """:meth:`retrieve` for asyncio: the model's and store's native coroutines when they
        have them (see :mod:`ragloom.core.aio`), worker threads otherwise."""
        embedding = (await aio.aembed(self.embedding_model, query.text)).embedding
        filter = resolve_dynamic(self.filter, query)
        if self.feedback is not None:
            first = self._feedback_request(embedding, filter)
            hits = (await aio.asearch(self.embedding_store, first)).matches
            embedding = self.feedback.update(embedding, [hit.embedding for hit in hits])
        request = self._request(embedding, query, filter)
        return _contents(await aio.asearch(self.embedding_store, request))

    def _feedback_request(
        self, embedding: Embedding, filter: Filter | None
    ) -> EmbeddingSearchRequest:
        assert self.feedback is not None
        return EmbeddingSearchRequest(embedding, max_results=self.feedback.documents, filter=filter)

    def _request(
        self, embedding: Embedding, query: Query, filter: Filter | None
    ) -> EmbeddingSearchRequest:
        return EmbeddingSearchRequest(
            embedding,
            max_results=resolve_dynamic(self.max_results, query),
            min_score=resolve_dynamic(self.min_score, query),
            filter=filter,
        )

    def __repr__(self) -> str:
        return f"EmbeddingStoreContentRetriever({self.display_name!r})"


def _contents(result: EmbeddingSearchResult) -> list[Content]:
    """The matches that have a segment, as contents with their score and id."""
    return [
        Content(match.embedded, {SCORE: match.score, EMBEDDING_ID: match.embedding_id})
        for match in result.matches
        if match.embedded is not None
    ]
