"""ParentDocumentRetriever: find small segments, answer with their parents.

The retrieval half of parent-document retrieval (LangChain's ``ParentDocumentRetriever``):
segments split by :class:`~ragloom.core.splitters.parent_child.ParentChildSplitter` are
searched by any :class:`ContentRetriever` (embedding, keyword, hybrid), and each match is
replaced by its parent from the :class:`~ragloom.core.parent_store.ParentStore` -- once,
at the rank of its best child. Small segments embed one idea each and match sharply; their
parent gives the model the context around them.

A parent content carries its best child's retrieval metadata (``score``,
``embedding_id``, ...) plus ``matched_spans``: the ``(start, end)`` document offsets of
the children that matched, best first, so a citation can point at the parent span
(the segment's ``start``/``end``) and at the exact sentences that matched.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragloom.core import aio
from ragloom.core.content import SCORE, Content
from ragloom.core.document import END, START, TextSegment
from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError
from ragloom.core.parent_store import PARENT_ID, ParentStore
from ragloom.core.query import Query
from ragloom.core.retrievers.base import ContentRetriever

__all__ = [
    "MATCHED_SPANS",
    "ParentDocumentRetriever",
    "matched_spans",
    "with_parent",
]

MATCHED_SPANS = "matched_spans"
"""Content metadata key: the ``(start, end)`` document offsets of the segments that matched
(a tuple of pairs, best first), where a small-to-big retriever answered with a larger span."""

Span = tuple[int, int]


class ParentDocumentRetriever:
    """Runs ``retriever`` and replaces its contents by their parents (see the module
    docstring); contents without a stored parent are kept as they are. ``max_results``
    cuts the list of parents (``None``: keep all) -- give ``retriever`` a larger
    ``max_results``, since several children often share a parent."""

    def __init__(
        self,
        retriever: ContentRetriever,
        parent_store: ParentStore,
        *,
        max_results: int | None = None,
    ) -> None:
        _check(retriever, parent_store, max_results)
        self.retriever = retriever
        self.parent_store = parent_store
        self.max_results = max_results

    def retrieve(self, query: Query) -> list[Content]:
        """The parents of the retrieved contents, in the rank of their best child."""
        return self._parents(self.retriever.retrieve(query))

    async def aretrieve(self, query: Query) -> list[Content]:
        """:meth:`retrieve` for asyncio (the child retrieval awaited natively when it can be)."""
        return self._parents(await aio.aretrieve(self.retriever, query))

    def _parents(self, contents: list[Content]) -> list[Content]:
        ids = [content.text_segment.metadata.get(PARENT_ID) for content in contents]
        parents = self.parent_store.get_all(dict.fromkeys(i for i in ids if isinstance(i, str)))
        groups: dict[object, list[Content]] = {}
        for position, (content, id) in enumerate(zip(contents, ids, strict=True)):
            groups.setdefault(id if id in parents else position, []).append(content)
        results = [
            with_parent(parents[key], children) if isinstance(key, str) else children[0]
            for key, children in groups.items()
        ]
        return results[: self.max_results]

    def __repr__(self) -> str:
        return f"ParentDocumentRetriever({self.retriever!r})"


def matched_spans(content: Content) -> tuple[Span, ...]:
    """The document spans that matched for ``content``: its ``matched_spans`` when a
    small-to-big retriever set them, else its own ``start``/``end`` (none when unknown)."""
    spans = content.metadata.get(MATCHED_SPANS)
    if spans is not None:
        return tuple(spans)
    metadata = content.text_segment.metadata
    if START in metadata and END in metadata:
        return ((int(metadata[START]), int(metadata[END])),)
    return ()


def with_parent(parent: TextSegment, children: Sequence[Content]) -> Content:
    """``parent`` as a content standing for ``children`` (best first): the best child's
    metadata, the best score among them, and every child's matched spans."""
    metadata = dict(children[0].metadata)
    scores = [child.score for child in children if child.score is not None]
    if scores:
        metadata[SCORE] = max(scores)
    metadata[MATCHED_SPANS] = tuple(
        dict.fromkeys(span for child in children for span in matched_spans(child))
    )
    return Content(parent, metadata)


def _check(retriever: object, parent_store: object, max_results: int | None) -> None:
    if not isinstance(retriever, ContentRetriever):
        raise InvalidArgumentTypeError(
            f"retriever must be a ContentRetriever, got {type(retriever).__name__}"
        )
    if not isinstance(parent_store, ParentStore):
        raise InvalidArgumentTypeError(
            f"parent_store must be a ParentStore, got {type(parent_store).__name__}"
        )
    if max_results is not None and (
        isinstance(max_results, bool) or not isinstance(max_results, int) or max_results < 1
    ):
        raise InvalidArgumentError(f"max_results must be an int >= 1 or None, got {max_results!r}")
