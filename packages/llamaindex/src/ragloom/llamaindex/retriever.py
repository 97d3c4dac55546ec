"""RagloomRetriever: any ragloom ContentRetriever (hybrid included) as a LlamaIndex retriever."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle

from ragloom.core import aio
from ragloom.core.errors import InvalidArgumentTypeError
from ragloom.core.query import Query
from ragloom.core.retrievers.base import ContentRetriever
from ragloom.llamaindex._nodes import content_node

__all__ = ["RagloomRetriever"]


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
