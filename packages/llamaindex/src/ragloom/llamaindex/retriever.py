"""Retrievers both ways: any ragloom ContentRetriever (hybrid included) as a LlamaIndex
retriever, and any LlamaIndex retriever as a ragloom ContentRetriever."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

from ragloom.core import aio
from ragloom.core.content import SCORE, SEGMENT_ID, Content
from ragloom.core.document import TextSegment
from ragloom.core.errors import InvalidArgumentTypeError
from ragloom.core.kit.foreign import ForeignRetriever
from ragloom.core.query import Query
from ragloom.core.retrievers.base import ContentRetriever
from ragloom.llamaindex._nodes import content_node
from ragloom.llamaindex.reader import convert_metadata

__all__ = ["LlamaIndexContentRetriever", "RagloomRetriever"]


class RagloomRetriever(BaseRetriever):
    """A LlamaIndex ``BaseRetriever`` over ragloom's ``retriever``: each content becomes a
    node scored by the retriever (its segment's metadata; the embedding or keyword index
    id as node id). Query engines, routers and postprocessors then work on ragloom's
    retrieval; ``aretrieve`` uses the retriever's own coroutine when it has one."""

    def __init__(self, retriever: ContentRetriever, **kwargs: Any) -> None:
        if not isinstance(retriever, ContentRetriever):
            raise InvalidArgumentTypeError(
                f"retriever must be a ragloom ContentRetriever, got {type(retriever).__name__}"
            )
        super().__init__(**kwargs)
        self.retriever = retriever

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        contents = self.retriever.retrieve(Query(query_bundle.query_str))
        return [content_node(content) for content in contents]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        contents = await aio.aretrieve(self.retriever, Query(query_bundle.query_str))
        return [content_node(content) for content in contents]


class LlamaIndexContentRetriever(ForeignRetriever[NodeWithScore]):
    """A LlamaIndex retriever as a ragloom ``ContentRetriever``: a ``VectorStoreIndex``'s,
    a BM25 one, a router, any ``BaseRetriever``, serving a ragloom pipeline.

    Each node becomes a content with the node's text (without its metadata), its metadata
    converted as the reader converts it, its score as ``score`` and its id as
    ``segment_id``. Failures of the wrapped retriever are :class:`RetrievalError` (core's
    :class:`~ragloom.core.kit.foreign.ForeignRetriever`).
    """

    def __init__(self, retriever: BaseRetriever) -> None:
        if not isinstance(retriever, BaseRetriever):
            raise InvalidArgumentTypeError(
                f"retriever must be a LlamaIndex BaseRetriever, got {type(retriever).__name__}"
            )
        name = type(retriever).__name__
        super().__init__(
            lambda text: self.retriever.retrieve(text),
            lambda text: self.retriever.aretrieve(text),
            _content,
            what=f"{name}.retrieve",
            awhat=f"{name}.aretrieve",
        )
        self.retriever = retriever


def _content(scored: NodeWithScore) -> Content:
    node = scored.node
    segment = TextSegment(
        node.get_content(metadata_mode=MetadataMode.NONE), convert_metadata(node.metadata)
    )
    metadata: dict[str, object] = {SEGMENT_ID: node.node_id}
    if scored.score is not None:
        metadata[SCORE] = scored.score
    return Content(segment, metadata)
