"""Await any component: its native coroutine when it has one, else its sync method in a thread.

The component protocols (:class:`~ragloom.core.embedding.EmbeddingModel`,
:class:`~ragloom.core.stores.base.EmbeddingStore`,
:class:`~ragloom.core.retrievers.base.ContentRetriever`, the loaders) are structural: a
class with the right sync methods is one, whether it subclasses the protocol or not, and
``isinstance`` checks every member a protocol declares. So the async variants are not
protocol members (that would make every existing structural implementation fail those
checks); they are

- the ``Async*`` protocols below, which an implementation with native async I/O
  satisfies by defining the ``a``-prefixed coroutine next to the sync method, and
- one helper per operation, which every caller uses to await *any* component::

      from ragloom.core import aio

      contents = await aio.aretrieve(retriever, query)
      ids = await aio.aadd_all(store, embeddings, segments)

  The helper awaits the component's own coroutine (``aretrieve``, ``aadd_all``, ...) when
  it defines one, and otherwise runs the sync method with :func:`asyncio.to_thread`.

A store with a native ``aadd_all`` gets ``aadd`` (one entry) from :class:`AsyncAddMixin`,
as an :class:`~ragloom.core.stores.base.EmbeddingStore` subclass gets ``add``.

Cancelling a helper that runs a sync method in a thread stops waiting for it, not the
thread: the call completes in the background. Native implementations stop their I/O.

The author's side (the ``Steps`` driver, :class:`AsyncAddMixin`) lives in the kit,
:mod:`ragloom.core.kit.steps` and :mod:`ragloom.core.kit.async_add`; this module re-exports
those names where they were.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from ragloom.core.content import Content
from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding, EmbeddingModel, EmbeddingResult
from ragloom.core.errors import EmbeddingModelError
from ragloom.core.filters import Filter
from ragloom.core.kit.async_add import AsyncAddMixin
from ragloom.core.kit.steps import ClientCall, Steps, arun_steps, run_steps
from ragloom.core.query import Query
from ragloom.core.retrievers.base import ContentRetriever
from ragloom.core.stores.base import (
    EmbeddingSearchRequest,
    EmbeddingSearchResult,
    EmbeddingStore,
    StoredEmbedding,
)

__all__ = [
    "AsyncAddMixin",
    "AsyncContentRetriever",
    "AsyncEmbeddingModel",
    "AsyncEmbeddingStore",
    "ClientCall",
    "Steps",
    "aadd_all",
    "aembed",
    "aembed_all",
    "aget",
    "aload_documents",
    "aremove_all",
    "aretrieve",
    "arun_steps",
    "asearch",
    "run_steps",
]


@runtime_checkable
class AsyncEmbeddingModel(Protocol):
    """An embedding model with native async I/O (besides the sync ``embed_all``)."""

    async def aembed_all(self, texts: Sequence[str | TextSegment]) -> EmbeddingResult:
        """:meth:`~ragloom.core.embedding.EmbeddingModel.embed_all` without blocking."""
        ...


@runtime_checkable
class AsyncEmbeddingStore(Protocol):
    """A store with native async I/O (besides the sync methods, same semantics)."""

    async def aadd_all(
        self,
        embeddings: Sequence[Embedding],
        segments: Sequence[TextSegment] | None = None,
        *,
        ids: Sequence[str] | None = None,
    ) -> list[str]:
        """:meth:`~ragloom.core.stores.base.EmbeddingStore.add_all` without blocking."""
        ...

    async def asearch(self, request: EmbeddingSearchRequest) -> EmbeddingSearchResult:
        """:meth:`~ragloom.core.stores.base.EmbeddingStore.search` without blocking."""
        ...

    async def aremove_all(
        self, ids: Iterable[str] | None = None, *, filter: Filter | None = None
    ) -> None:
        """:meth:`~ragloom.core.stores.base.EmbeddingStore.remove_all` without blocking."""
        ...


@runtime_checkable
class AsyncContentRetriever(Protocol):
    """A retriever with a native coroutine (it still implements the sync ``retrieve``)."""

    async def aretrieve(self, query: Query) -> list[Content]:
        """The relevant contents, most relevant first."""
        ...


def _native(component: object, name: str) -> Any:
    """The component's own coroutine method ``name``, or None."""
    method = getattr(component, name, None)
    return method if callable(method) else None


async def aembed_all(model: EmbeddingModel, texts: Sequence[str | TextSegment]) -> EmbeddingResult:
    """``model.embed_all(texts)``, awaited."""
    native = _native(model, "aembed_all")
    if native is not None:
        result: EmbeddingResult = await native(texts)
        return result
    return await asyncio.to_thread(model.embed_all, texts)


async def aembed(model: EmbeddingModel, text: str | TextSegment) -> EmbeddingResult:
    """One text embedded (as ``model.embed``), awaited; the result holds one embedding."""
    result = await aembed_all(model, [text])
    if len(result.embeddings) != 1:
        raise EmbeddingModelError(
            f"{type(model).__name__}.embed_all returned {len(result.embeddings)} "
            "embeddings for 1 text"
        )
    return result


async def aadd_all(
    store: EmbeddingStore,
    embeddings: Sequence[Embedding],
    segments: Sequence[TextSegment] | None = None,
    *,
    ids: Sequence[str] | None = None,
) -> list[str]:
    """``store.add_all(embeddings, segments, ids=ids)``, awaited."""
    native = _native(store, "aadd_all")
    if native is not None:
        added: list[str] = await native(embeddings, segments, ids=ids)
        return added
    return await asyncio.to_thread(store.add_all, embeddings, segments, ids=ids)


async def asearch(store: EmbeddingStore, request: EmbeddingSearchRequest) -> EmbeddingSearchResult:
    """``store.search(request)``, awaited."""
    native = _native(store, "asearch")
    if native is not None:
        result: EmbeddingSearchResult = await native(request)
        return result
    return await asyncio.to_thread(store.search, request)


async def aremove_all(
    store: EmbeddingStore, ids: Iterable[str] | None = None, *, filter: Filter | None = None
) -> None:
    """``store.remove_all(ids, filter=filter)``, awaited."""
    native = _native(store, "aremove_all")
    if native is not None:
        await native(ids, filter=filter)
        return
    await asyncio.to_thread(store.remove_all, ids, filter=filter)


async def aget(
    store: EmbeddingStore, ids: Iterable[str], *, embeddings: bool = False
) -> list[StoredEmbedding]:
    """``store.get(ids, embeddings=embeddings)``, awaited."""
    native = _native(store, "aget")
    if native is not None:
        entries: list[StoredEmbedding] = await native(ids, embeddings=embeddings)
        return entries
    return await asyncio.to_thread(store.get, ids, embeddings=embeddings)


async def aretrieve(retriever: ContentRetriever, query: Query) -> list[Content]:
    """``retriever.retrieve(query)``, awaited."""
    native = _native(retriever, "aretrieve")
    if native is not None:
        contents: list[Content] = await native(query)
        return contents
    return await asyncio.to_thread(retriever.retrieve, query)


async def aload_documents(loader: Any, *args: Any, **kwargs: Any) -> Any:
    """``loader.load_documents(*args, **kwargs)``, awaited (loaders' signatures differ by
    source, so the arguments are passed through)."""
    native = _native(loader, "aload_documents")
    if native is not None:
        return await native(*args, **kwargs)
    return await asyncio.to_thread(loader.load_documents, *args, **kwargs)
