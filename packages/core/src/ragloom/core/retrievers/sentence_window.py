"""SentenceWindowRetriever: find single sentences, answer with the window around each.

The retrieval half of sentence-window retrieval (LlamaIndex's
``MetadataReplacementPostProcessor``): each content that a
:class:`~ragloom.core.splitters.sentence_window.SentenceWindowSplitter` segment yields is
replaced by its window, kept in the segment's own metadata, so no second store is read.
The returned segment's ``start``/``end`` are the window's offsets in the document, and
``matched_spans`` holds the matched sentence's, so citations stay exact. Contents without
a window pass unchanged; overlapping windows of neighbouring hits are kept apart (each is
at the rank of its sentence).
"""

from __future__ import annotations

from ragloom.core import aio
from ragloom.core.content import Content
from ragloom.core.document import END, START, TextSegment
from ragloom.core.errors import InvalidArgumentTypeError
from ragloom.core.query import Query
from ragloom.core.retrievers.base import ContentRetriever
from ragloom.core.retrievers.parent_document import MATCHED_SPANS, matched_spans
from ragloom.core.splitters.sentence_window import WINDOW, WINDOW_END, WINDOW_START

__all__ = [
    "SentenceWindowRetriever",
]

_WINDOW_KEYS = (WINDOW, WINDOW_START, WINDOW_END)


class SentenceWindowRetriever:
    """Runs ``retriever`` and replaces each sentence it returns by its window."""

    def __init__(self, retriever: ContentRetriever) -> None:
        if not isinstance(retriever, ContentRetriever):
            raise InvalidArgumentTypeError(
                f"retriever must be a ContentRetriever, got {type(retriever).__name__}"
            )
        self.retriever = retriever

    def retrieve(self, query: Query) -> list[Content]:
        """The retrieved sentences' windows, in the sentences' order."""
        return [_windowed(content) for content in self.retriever.retrieve(query)]

    async def aretrieve(self, query: Query) -> list[Content]:
        """:meth:`retrieve` for asyncio (the retrieval awaited natively when it can be)."""
        return [_windowed(content) for content in await aio.aretrieve(self.retriever, query)]

    def __repr__(self) -> str:
        return f"SentenceWindowRetriever({self.retriever!r})"


def _windowed(content: Content) -> Content:
    """``content`` with its window as its text, or unchanged when it has none."""
    source = content.text_segment.metadata
    window = source.get(WINDOW)
    if not isinstance(window, str) or WINDOW_START not in source or WINDOW_END not in source:
        return content
    metadata = {key: value for key, value in source.items() if key not in _WINDOW_KEYS}
    metadata[START] = source[WINDOW_START]
    metadata[END] = source[WINDOW_END]
    retrieval = dict(content.metadata)
    retrieval[MATCHED_SPANS] = matched_spans(content)
    return Content(TextSegment._trusted(window, metadata), retrieval)
