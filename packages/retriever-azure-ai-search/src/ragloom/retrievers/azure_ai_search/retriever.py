"""AzureAiSearchContentRetriever: vector, full-text, hybrid and semantic-reranked search
over an existing Azure AI Search index, through the official ``azure-search-documents``.

Scores (``Content.score``, ragloom's [0, 1], higher better):

- ``VECTOR``: Azure reports ``1 / (1 + (1 - cos))`` for a cosine field; it is turned back
  into the cosine and then into ragloom's ``(cos + 1) / 2`` (core's ``relevance_score``).
- ``HYBRID_WITH_RERANKING``: the semantic ranker's ``@search.rerankerScore`` (0-4) / 4.
- ``FULL_TEXT`` and ``HYBRID``: BM25 is unbounded and the hybrid score is an RRF sum, so
  there is no ragloom score; the raw ``@search.score`` is under ``azure_score`` and
  ``min_score`` must stay 0.

Every Content also keeps ``azure_score`` (and ``azure_reranker_score``) raw.

Bounds and async: a retriever that makes its own client sends through the bounded
transport (:mod:`~ragloom.retrievers.azure_ai_search.transport`: each search within
``timeout`` seconds as a whole, answers capped at ``max_response_bytes``); ``aretrieve``
runs the same request on an ``azure.search.documents.aio`` client of the running event
loop (closed by ``aclose``), or the sync ``retrieve`` in a worker thread when the client
was given or the credential has no async form.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Sequence
from typing import Any

import numpy as np
from azure.core.credentials import AzureKeyCredential
from azure.core.exceptions import AzureError
from azure.search.documents import SearchClient
from azure.search.documents.aio import SearchClient as AsyncSearchClient
from azure.search.documents.models import VectorizedQuery

from ragloom.core import aio
from ragloom.core.content import EMBEDDING_ID, SCORE, Content
from ragloom.core.document import TextSegment
from ragloom.core.embedding import EmbeddingModel
from ragloom.core.errors import InvalidArgumentError, RetrievalError
from ragloom.core.filters import Filter
from ragloom.core.kit.http import DEFAULT_MAX_RESPONSE_BYTES
from ragloom.core.query import Query
from ragloom.core.retrievers.base import ContentRetriever
from ragloom.core.retrievers.dynamic import Dynamic, resolve_dynamic
from ragloom.core.stores.scores import relevance_score
from ragloom.core.stores.validation import check_max_results, check_min_score
from ragloom.retrievers.azure_ai_search.odata import ODataFilterCompiler
from ragloom.retrievers.azure_ai_search.transport import DEFAULT_TIMEOUT, Bounds, has_async_form

__all__ = ["AZURE_RERANKER_SCORE", "AZURE_SCORE", "AzureAiSearchContentRetriever", "SearchMode"]

AZURE_SCORE = "azure_score"
AZURE_RERANKER_SCORE = "azure_reranker_score"


class SearchMode(enum.StrEnum):
    """How the index is searched (the spec's AzureAiSearchQueryType)."""

    VECTOR = "vector"
    FULL_TEXT = "full_text"
    HYBRID = "hybrid"
    HYBRID_WITH_RERANKING = "hybrid_with_reranking"


def cosine_from_azure(score: float) -> float:
    """Azure's cosine ``@search.score`` is ``1 / (1 + distance)``, distance ``1 - cos``."""
    return max(-1.0, min(1.0, 2.0 - 1.0 / score))


class AzureAiSearchContentRetriever(ContentRetriever):
    """Searches the index ``index_name`` at ``endpoint``.

    The index has a key field ``id_field``, a searchable text ``content_field`` and (for
    vector modes) a vector ``vector_field``; ``metadata_fields`` are the filterable fields
    returned as segment metadata and used by ``filter`` (keys = field names).
    ``embedding_model`` embeds the query in VECTOR and HYBRID modes;
    ``semantic_configuration`` names the index's semantic configuration for reranking.
    ``timeout`` (seconds) bounds each search as a whole and ``max_response_bytes`` its
    answer (for the clients the retriever makes; a given ``client`` keeps its transport).
    """

    def __init__(
        self,
        endpoint: str,
        index_name: str,
        credential: AzureKeyCredential | Any,
        *,
        mode: SearchMode = SearchMode.HYBRID,
        embedding_model: EmbeddingModel | None = None,
        semantic_configuration: str | None = None,
        id_field: str = "id",
        content_field: str = "content",
        vector_field: str = "content_vector",
        metadata_fields: Sequence[str] = (),
        max_results: Dynamic[int] = 3,
        min_score: Dynamic[float] = 0.0,
        filter: Dynamic[Filter | None] = None,
        client: SearchClient | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        mode = SearchMode(mode)
        if mode is not SearchMode.FULL_TEXT and embedding_model is None:
            raise InvalidArgumentError(f"search mode {mode} needs an embedding_model")
        if mode is SearchMode.HYBRID_WITH_RERANKING and not semantic_configuration:
            raise InvalidArgumentError(f"search mode {mode} needs a semantic_configuration")
        if not callable(max_results):
            check_max_results(max_results)
        if not callable(min_score):
            check_min_score(min_score)
            self._check_min_score_mode(mode, min_score)
        self.bounds = Bounds(timeout, max_response_bytes)
        self._own_client = client is None
        self._endpoint, self._credential = endpoint, credential
        self.client = client or SearchClient(
            endpoint, index_name, credential, transport=self.bounds.transport()
        )
        self._async_client: AsyncSearchClient | None = None
        self._async_loop: asyncio.AbstractEventLoop | None = None
        self.index_name = index_name
        self.mode = mode
        self.embedding_model = embedding_model
        self.semantic_configuration = semantic_configuration
        self.id_field = id_field
        self.content_field = content_field
        self.vector_field = vector_field
        self.metadata_fields = list(metadata_fields)
        self.max_results = max_results
        self.min_score = min_score
        self.filter = filter

    @staticmethod
    def _check_min_score_mode(mode: SearchMode, min_score: float) -> None:
        if min_score > 0 and mode in (SearchMode.FULL_TEXT, SearchMode.HYBRID):
            raise InvalidArgumentError(
                f"min_score={min_score} needs a bounded score; search mode {mode} has none "
                "(use VECTOR or HYBRID_WITH_RERANKING, or keep min_score 0)"
            )

    def retrieve(self, query: Query) -> list[Content]:
        """The best ``max_results`` contents (scoring at least ``min_score`` when scored)."""
        min_score, options = self._checked(query)
        if self.mode is not SearchMode.FULL_TEXT:
            assert self.embedding_model is not None
            self._add_vector(options, self.embedding_model.embed(query.text).embedding)
        try:
            with self.bounds.call():
                hits = list(self.client.search(**options))
        except AzureError as exc:
            raise self._error(query, exc) from exc
        return self._contents(hits, min_score)

    async def aretrieve(self, query: Query) -> list[Content]:
        """:meth:`retrieve` on this event loop's async client (the query embedded by the
        model's own coroutine when it has one); see the module docstring."""
        client = self._current_async_client()
        if client is None:
            return await asyncio.to_thread(self.retrieve, query)
        min_score, options = self._checked(query)
        if self.mode is not SearchMode.FULL_TEXT:
            assert self.embedding_model is not None
            self._add_vector(
                options, (await aio.aembed(self.embedding_model, query.text)).embedding
            )
        try:
            async with self.bounds.acall():
                hits = [hit async for hit in await client.search(**options)]
        except (AzureError, TimeoutError) as exc:
            raise self._error(query, exc) from exc
        return self._contents(hits, min_score)

    async def aclose(self) -> None:
        """Close the async client the retriever opened in the running loop, then the sync
        one as :meth:`close` does."""
        if self._async_client is not None:
            client, self._async_client, self._async_loop = self._async_client, None, None
            await client.close()
        self.close()

    def close(self) -> None:
        """Close the sync client, if the retriever made it."""
        if self._own_client:
            self.client.close()

    def _current_async_client(self) -> AsyncSearchClient | None:
        """The running loop's async client, opened on its first ``aretrieve``; None for a
        given client or a credential without an async form (a sync token credential)."""
        if not (self._own_client and has_async_form(self._credential)):
            return None
        loop = asyncio.get_running_loop()
        if self._async_client is None or self._async_loop is not loop:
            self._async_client = AsyncSearchClient(
                self._endpoint,
                self.index_name,
                self._credential,
                transport=self.bounds.async_transport(),
            )
            self._async_loop = loop
        return self._async_client

    def _checked(self, query: Query) -> tuple[float, dict[str, Any]]:
        """The query's ``min_score`` (checked) and the search's options, but the vector."""
        max_results = resolve_dynamic(self.max_results, query)
        min_score = resolve_dynamic(self.min_score, query)
        check_max_results(max_results)
        check_min_score(min_score)
        self._check_min_score_mode(self.mode, min_score)
        ragloom_filter = resolve_dynamic(self.filter, query)
        odata = None if ragloom_filter is None else ODataFilterCompiler().compile(ragloom_filter)
        options: dict[str, Any] = {
            "search_text": None if self.mode is SearchMode.VECTOR else query.text,
            "top": max_results,
            "filter": odata,
            "select": [self.id_field, self.content_field, *self.metadata_fields],
        }
        if self.mode is SearchMode.HYBRID_WITH_RERANKING:
            options["query_type"] = "semantic"
            options["semantic_configuration_name"] = self.semantic_configuration
        return min_score, options

    def _add_vector(self, options: dict[str, Any], embedding: Any) -> None:
        """The vector query of the embedded query, for the vector and hybrid modes."""
        options["vector_queries"] = [
            VectorizedQuery(
                vector=np.asarray(embedding).tolist(),
                k_nearest_neighbors=options["top"],
                fields=self.vector_field,
            )
        ]

    def _error(self, query: Query, exc: Exception) -> RetrievalError:
        return RetrievalError(
            f"Azure AI Search index {self.index_name!r} refused the {self.mode} search "
            f"for {query.text!r}: {self.bounds.reason(exc)}"
        )

    def _contents(self, hits: list[dict[str, Any]], min_score: float) -> list[Content]:
        """The answer's hits as Contents, those scored below ``min_score`` left out."""
        contents = [self._content(hit) for hit in hits]
        return [c for c in contents if c.score is None or c.score >= min_score]

    def _content(self, hit: dict[str, Any]) -> Content:
        raw = float(hit["@search.score"])
        reranker = hit.get("@search.reranker_score")
        metadata: dict[str, Any] = {AZURE_SCORE: raw, EMBEDDING_ID: str(hit[self.id_field])}
        if self.mode is SearchMode.VECTOR:
            metadata[SCORE] = float(relevance_score(cosine_from_azure(raw)))
        elif self.mode is SearchMode.HYBRID_WITH_RERANKING and reranker is not None:
            metadata[AZURE_RERANKER_SCORE] = float(reranker)
            metadata[SCORE] = max(0.0, min(1.0, float(reranker) / 4.0))
        segment_metadata = {
            key: hit[key] for key in self.metadata_fields if hit.get(key) is not None
        }
        return Content(TextSegment(str(hit[self.content_field]), segment_metadata), metadata)
