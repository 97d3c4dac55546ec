"""RagloomVectorStore: any ragloom EmbeddingStore as a LlamaIndex vector store.

``VectorStoreIndex``, its retrievers and query engines then run on a ragloom store (in
memory, pgvector, Qdrant, Milvus, ...), filtering natively with ragloom filters compiled
from ``MetadataFilters``. Similarities are ragloom's relevance ``(cosine + 1) / 2`` in
[0, 1], so the top-k order is the cosine order LlamaIndex expects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import BaseNode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)

from ragloom.core import aio
from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding
from ragloom.core.errors import InvalidArgumentError
from ragloom.core.filters import Filter, IsEqualTo, IsIn, and_
from ragloom.core.stores.base import (
    EmbeddingMatch,
    EmbeddingSearchRequest,
    EmbeddingSearchResult,
    EmbeddingStore,
    StoredEmbedding,
)
from ragloom.core.stores.scores import exact_cosines, relevance_score
from ragloom.llamaindex._nodes import REF_DOC_ID_KEY, node_entry, segment_node
from ragloom.llamaindex.filters import to_ragloom_filter

__all__ = ["RagloomVectorStore"]


class RagloomVectorStore(BasePydanticVectorStore):
    """A LlamaIndex ``BasePydanticVectorStore`` over ragloom's ``store``.

    Nodes are stored with their text and metadata, plus the keys every LlamaIndex store
    writes (``_node_content``, ``_node_type``, ``doc_id``, ``document_id``,
    ``ref_doc_id``), so queries give back whole nodes and ``delete(ref_doc_id)`` is a
    filtered removal. Segments written by ragloom itself come back as ``TextNode``s.
    Queries take the default (dense) mode, ``filters``, ``doc_ids`` and ``node_ids`` (the
    search then ranks just those nodes, read with the store's ``get``); ``get_nodes``
    reads nodes by id.
    """

    stores_text: bool = True
    flat_metadata: bool = True

    _store: EmbeddingStore = PrivateAttr()

    def __init__(self, store: EmbeddingStore, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._store = store

    @classmethod
    def class_name(cls) -> str:
        return "RagloomVectorStore"

    @property
    def client(self) -> EmbeddingStore:
        """The ragloom store underneath."""
        return self._store

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """Store the nodes (each with its embedding) under their node ids, in one batch."""
        embeddings, segments, ids = self._entries(nodes)
        return self._store.add_all(embeddings, segments, ids=ids)

    async def async_add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        """:meth:`add` without blocking (the store's own coroutine when it has one)."""
        embeddings, segments, ids = self._entries(nodes)
        return await aio.aadd_all(self._store, embeddings, segments, ids=ids)

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Remove every node of the source document ``ref_doc_id``."""
        self._store.remove_all(filter=IsEqualTo(REF_DOC_ID_KEY, ref_doc_id))

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """:meth:`delete` without blocking."""
        await aio.aremove_all(self._store, filter=IsEqualTo(REF_DOC_ID_KEY, ref_doc_id))

    def delete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        """Remove the nodes ``node_ids`` or those matching ``filters`` (exactly one)."""
        ids, filter = _removal(node_ids, filters)
        self._store.remove_all(ids, filter=filter)

    async def adelete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        """:meth:`delete_nodes` without blocking."""
        ids, filter = _removal(node_ids, filters)
        await aio.aremove_all(self._store, ids, filter=filter)

    def clear(self) -> None:
        """Remove every entry of the store."""
        self._store.remove_all()

    async def aclear(self) -> None:
        """:meth:`clear` without blocking."""
        await aio.aremove_all(self._store)

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """The ``similarity_top_k`` nodes nearest ``query.query_embedding`` that pass
        ``query.filters`` (and belong to ``query.doc_ids`` and are among
        ``query.node_ids``, when given)."""
        request = _request(query)
        if query.node_ids:
            entries = self._store.get(query.node_ids, embeddings=True)
            return _result(_ranked(entries, request))
        return _result(self._store.search(request))

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """:meth:`query` without blocking."""
        request = _request(query)
        if query.node_ids:
            entries = await aio.aget(self._store, query.node_ids, embeddings=True)
            return _result(_ranked(entries, request))
        return _result(await aio.asearch(self._store, request))

    def get_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        """The nodes stored under ``node_ids`` (in that order; missing ones left out) that
        pass ``filters``, when given."""
        ids, filter = _lookup(node_ids, filters)
        return _nodes(self._store.get(ids), filter)

    async def aget_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        """:meth:`get_nodes` without blocking (the store's own ``aget`` when it has one)."""
        ids, filter = _lookup(node_ids, filters)
        return _nodes(await aio.aget(self._store, ids), filter)

    def _entries(
        self, nodes: Sequence[BaseNode]
    ) -> tuple[list[Embedding], list[TextSegment], list[str]]:
        entries = [node_entry(node, self.flat_metadata) for node in nodes]
        return (
            [embedding for embedding, _ in entries],
            [segment for _, segment in entries],
            [node.node_id for node in nodes],
        )


def _request(query: VectorStoreQuery) -> EmbeddingSearchRequest:
    if query.mode != VectorStoreQueryMode.DEFAULT:
        raise InvalidArgumentError(
            f"query mode {query.mode.value!r} is not supported; RagloomVectorStore answers "
            "dense (default) queries (use a ragloom HybridContentRetriever through "
            "RagloomRetriever for hybrid search)"
        )
    if query.query_embedding is None:
        raise InvalidArgumentError("a query needs query_embedding (a dense query)")
    filter = to_ragloom_filter(query.filters)
    if query.doc_ids:
        by_document = IsIn(REF_DOC_ID_KEY, tuple(query.doc_ids))
        filter = by_document if filter is None else and_(filter, by_document)
    return EmbeddingSearchRequest(
        query.query_embedding, max_results=query.similarity_top_k, filter=filter
    )


def _result(result: EmbeddingSearchResult) -> VectorStoreQueryResult:
    found = [
        (match, segment_node(match.embedded, match.embedding_id))
        for match in result.matches
        if match.embedded is not None  # a bare embedding is no node
    ]
    return VectorStoreQueryResult(
        nodes=[node for _, node in found],
        similarities=[match.score for match, _ in found],
        ids=[match.embedding_id for match, _ in found],
    )


def _ranked(
    entries: list[StoredEmbedding], request: EmbeddingSearchRequest
) -> EmbeddingSearchResult:
    """The search ``request`` over just ``entries`` (read with their vectors): those passing
    its filter, scored as a store scores them (exact float64 cosines), best first, ties in
    the order the ids were asked."""
    condition = request.filter
    kept: list[tuple[str, Embedding, TextSegment]] = []
    for entry in entries:
        embedding, segment = entry.embedding, entry.embedded
        if embedding is None or segment is None:  # a bare embedding is no node
            continue
        if condition is None or condition.test(segment.metadata):
            kept.append((entry.embedding_id, embedding, segment))
    if not kept:
        return EmbeddingSearchResult([])
    vectors = np.stack([embedding.vector for _, embedding, _ in kept])
    scores = relevance_score(exact_cosines(vectors, request.query_embedding.vector))
    order = np.argsort(-scores, kind="stable")[: request.max_results].tolist()
    return EmbeddingSearchResult([EmbeddingMatch(float(scores[i]), *kept[i]) for i in order])


def _lookup(
    node_ids: list[str] | None, filters: MetadataFilters | None
) -> tuple[list[str], Filter | None]:
    """The ids and the filter of ``get_nodes``: ids are required (the store contract reads
    by id; a filter alone would be a scan no store offers)."""
    if node_ids is None:
        raise InvalidArgumentError(
            "get_nodes needs node_ids (filters only narrow them); to find nodes by metadata, "
            "query with filters"
        )
    return node_ids, to_ragloom_filter(filters)


def _nodes(entries: list[StoredEmbedding], filter: Filter | None) -> list[BaseNode]:
    """The nodes of entries ``get`` gave back (a bare embedding is no node) passing
    ``filter``, in its order."""
    return [
        segment_node(entry.embedded, entry.embedding_id)
        for entry in entries
        if entry.embedded is not None and (filter is None or filter.test(entry.embedded.metadata))
    ]


def _removal(
    node_ids: list[str] | None, filters: MetadataFilters | None
) -> tuple[list[str] | None, Filter | None]:
    filter = to_ragloom_filter(filters)
    if (node_ids is None) == (filter is None):
        raise InvalidArgumentError(
            "delete_nodes takes node_ids or filters (exactly one); clear() removes everything"
        )
    return node_ids, filter
