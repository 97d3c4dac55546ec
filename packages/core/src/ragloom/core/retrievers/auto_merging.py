"""AutoMergingRetriever: when enough children of a parent are found, answer with the parent.

The retrieval half of auto-merging retrieval (LlamaIndex's ``AutoMergingRetriever``), over
the hierarchy a :class:`~ragloom.core.splitters.parent_child.ParentChildSplitter` with
several ``parent_splitters`` writes. The retrieved contents are grouped by ``parent_id``;
a parent of which more than ``ratio`` of its children (``child_count``) were retrieved
replaces them, at the rank of the best of them, with their best score and their
``matched_spans``. Merged parents count as children of the level above, and merging
repeats until nothing changes. A content lying inside a merged parent (its ``start``/``end``
within the parent's, same ``document_id``) is folded into that parent, which then takes the
content's rank and score if better, so no text is returned twice. Unlike
:class:`~ragloom.core.retrievers.parent_document.ParentDocumentRetriever`, isolated hits
stay small: the context grows only where the matches cluster.
"""

from __future__ import annotations

from ragloom.core import aio
from ragloom.core.content import Content
from ragloom.core.document import END, START
from ragloom.core.errors import InvalidArgumentError
from ragloom.core.ingestor import DOCUMENT_ID
from ragloom.core.parent_store import CHILD_COUNT, PARENT_ID, ParentStore
from ragloom.core.query import Query
from ragloom.core.retrievers.base import ContentRetriever
from ragloom.core.retrievers.parent_document import _check, with_parent

__all__ = [
    "AutoMergingRetriever",
]


class AutoMergingRetriever:
    """Runs ``retriever`` and merges its contents into their parents where more than
    ``ratio`` of a parent's children were found (see the module docstring). ``max_results``
    cuts the merged list (``None``: keep all)."""

    def __init__(
        self,
        retriever: ContentRetriever,
        parent_store: ParentStore,
        *,
        ratio: float = 0.5,
        max_results: int | None = None,
    ) -> None:
        _check(retriever, parent_store, max_results)
        if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not 0 <= ratio < 1:
            raise InvalidArgumentError(f"ratio must be a number in [0, 1), got {ratio!r}")
        self.retriever = retriever
        self.parent_store = parent_store
        self.ratio = ratio
        self.max_results = max_results

    def retrieve(self, query: Query) -> list[Content]:
        """The retrieved contents, merged into their parents where enough of them cluster."""
        return self._merged(self.retriever.retrieve(query))

    async def aretrieve(self, query: Query) -> list[Content]:
        """:meth:`retrieve` for asyncio (the child retrieval awaited natively when it can be)."""
        return self._merged(await aio.aretrieve(self.retriever, query))

    def _merged(self, contents: list[Content]) -> list[Content]:
        items = contents
        returned: list[Content] = []  # the merged parents, some merged further since
        while True:
            groups: dict[str, list[Content]] = {}
            for content in items:
                key = content.text_segment.metadata.get(PARENT_ID)
                if isinstance(key, str):
                    groups.setdefault(key, []).append(content)
            parents = self.parent_store.get_all(groups)
            merging = {
                key: with_parent(parents[key], children)
                for key, children in groups.items()
                if key in parents and self._enough(children, parents[key].metadata.get(CHILD_COUNT))
            }
            if not merging:
                break
            merged: list[Content] = []
            for content in items:
                key = content.text_segment.metadata.get(PARENT_ID)
                if not isinstance(key, str) or key not in merging:
                    merged.append(content)
                elif content is groups[key][0]:  # the rank of the best child
                    merged.append(merging[key])
                    returned.append(merging[key])
            items = merged
        return _absorbed(items, returned)[: self.max_results]

    def _enough(self, children: list[Content], child_count: object) -> bool:
        """Whether more than ``ratio`` of the parent's children are among ``children``."""
        if not isinstance(child_count, int) or child_count < 1:
            return False
        distinct = {
            (c.text_segment.metadata.get(START), c.text_segment.metadata.get(END), c.text)
            for c in children
        }
        return len(distinct) / child_count > self.ratio

    def __repr__(self) -> str:
        return f"AutoMergingRetriever({self.retriever!r}, ratio={self.ratio})"


def _absorbed(items: list[Content], returned: list[Content]) -> list[Content]:
    """``items`` with each content lying within a merged parent of its document folded into
    that parent, which takes the rank, score and spans of the best of them."""
    containers = [
        (parent, where)
        for parent in returned
        if any(parent is item for item in items) and (where := _position(parent)) is not None
    ]
    slots: dict[int, tuple[Content, list[Content]]] = {}
    for content in items:
        owner = content
        if (where := _position(content)) is not None:
            document, start, end = where
            for parent, (home, lo, hi) in containers:
                if parent is not content and home == document and lo <= start and end <= hi:
                    owner = parent
                    break
        slots.setdefault(id(owner), (owner, []))[1].append(content)
    return [
        owner if members == [owner] else with_parent(owner.text_segment, members)
        for owner, members in slots.values()
    ]


def _position(content: Content) -> tuple[object, int, int] | None:
    """The document and ``start``/``end`` of ``content``, when its segment records them."""
    metadata = content.text_segment.metadata
    if DOCUMENT_ID not in metadata or START not in metadata or END not in metadata:
        return None
    return metadata[DOCUMENT_ID], int(metadata[START]), int(metadata[END])
