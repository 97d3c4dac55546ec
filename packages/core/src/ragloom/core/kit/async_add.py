"""``aadd`` for a store with native async writes, as ``EmbeddingStore`` gives ``add``.

In the kit (not in :mod:`ragloom.core.aio`, which re-exports it) because store authors build
on it: the remote-store base mixes it in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding

__all__ = ["AsyncAddMixin"]


class _AddsAllAsync(Protocol):
    """What the mixin needs of its store: the native ``aadd_all``."""

    async def aadd_all(
        self,
        embeddings: Sequence[Embedding],
        segments: Sequence[TextSegment] | None = None,
        *,
        ids: Sequence[str] | None = None,
    ) -> list[str]: ...


class AsyncAddMixin:
    """``aadd`` for an :class:`~ragloom.core.aio.AsyncEmbeddingStore`, through its ``aadd_all``.

    The async side of :meth:`~ragloom.core.stores.base.EmbeddingStore.add`; a mixin, not a
    protocol member, so that a structural ``AsyncEmbeddingStore`` need not define it::

        class MyStore(EmbeddingStore, AsyncAddMixin):
            async def aadd_all(self, embeddings, segments=None, *, ids=None): ...
    """

    async def aadd(
        self: _AddsAllAsync,
        embedding: Embedding,
        segment: TextSegment | None = None,
        *,
        id: str | None = None,
    ) -> str:
        """Add one embedding (with its segment, under ``id`` when given) without blocking;
        returns its id."""
        segments = None if segment is None else [segment]
        ids = None if id is None else [id]
        return (await self.aadd_all([embedding], segments, ids=ids))[0]
