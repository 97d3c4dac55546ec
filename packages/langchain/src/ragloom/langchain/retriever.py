"""Retrievers both ways: any ragloom ContentRetriever (hybrid included) as a LangChain
retriever, and any LangChain retriever as a ragloom ContentRetriever."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document as LcDocument
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from ragloom.core import aio
from ragloom.core.content import SEGMENT_ID, Content
from ragloom.core.document import TextSegment
from ragloom.core.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
)
from ragloom.core.kit.foreign import ForeignRetriever
from ragloom.core.query import Query
from ragloom.core.retrievers.base import ContentRetriever
from ragloom.langchain._documents import content_to_document
from ragloom.langchain.loader import to_ragloom_document

__all__ = ["LangChainContentRetriever", "RagloomRetriever"]


class RagloomRetriever(BaseRetriever):
    """A LangChain ``BaseRetriever`` over ragloom's ``retriever``.

    Each content becomes a document with the segment's metadata, its retrieval metadata
    (``score``, ``embedding_id``, ...) under ``metadata["ragloom"]``, and the embedding
    (or keyword index) id as ``id``. ``k`` (in the constructor or per call, as
    ``invoke(query, k=3)``) caps the number of documents; how many the ragloom retriever
    fetches is its own setting (``max_results``), so set that at least as high.
    ``ainvoke`` uses the retriever's own ``aretrieve`` when it has one.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    retriever: Any = Field(description="the ragloom ContentRetriever")
    k: int | None = Field(default=None, description="at most this many documents")

    def model_post_init(self, context: Any, /) -> None:
        """Check the settings once, at construction."""
        if not isinstance(self.retriever, ContentRetriever):
            raise InvalidArgumentError(
                f"retriever must be a ragloom ContentRetriever, got {type(self.retriever).__name__}"
            )
        _check_k(self.k)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[LcDocument]:
        contents: list[Content] = self.retriever.retrieve(Query(query))
        return self._documents(contents, k)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
    ) -> list[LcDocument]:
        return self._documents(await aio.aretrieve(self.retriever, Query(query)), k)

    def _documents(self, contents: list[Content], k: int | None) -> list[LcDocument]:
        limit = _check_k(k) if k is not None else self.k
        kept = contents if limit is None else contents[:limit]
        return [content_to_document(content) for content in kept]


def _check_k(k: int | None) -> int | None:
    if k is not None and (type(k) is not int or k < 1):
        raise InvalidArgumentError(f"k must be a positive int or None, got {k!r}")
    return k


class LangChainContentRetriever(ForeignRetriever[LcDocument]):
    """A LangChain ``BaseRetriever`` as a ragloom ``ContentRetriever``, so that a LangChain
    retriever (a vector database's, a web search's, a self-query one) serves a ragloom
    pipeline, alone or fused in a ``HybridContentRetriever``.

    Documents keep their order (LangChain gives no scores); metadata is converted as the
    loader converts it, and the document's ``id`` is the content's ``segment_id``.
    Failures of the wrapped retriever are :class:`RetrievalError` naming it (core's
    :class:`~ragloom.core.kit.foreign.ForeignRetriever`).
    """

    def __init__(self, retriever: BaseRetriever) -> None:
        if not isinstance(retriever, BaseRetriever):
            raise InvalidArgumentTypeError(
                f"retriever must be a LangChain BaseRetriever, got {type(retriever).__name__}"
            )
        name = type(retriever).__name__
        super().__init__(
            lambda text: self.retriever.invoke(text),
            lambda text: self.retriever.ainvoke(text),
            _content,
            what=f"{name}.invoke",
            awhat=f"{name}.ainvoke",
        )
        self.retriever = retriever


def _content(document: LcDocument) -> Content:
    converted = to_ragloom_document(document)
    segment = TextSegment(converted.text, converted.metadata)
    return Content(segment, {} if document.id is None else {SEGMENT_ID: document.id})
