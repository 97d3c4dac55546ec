"""ParentChildSplitter: small segments to embed, linked to the larger parents around them.

The ingestion half of parent-document and auto-merging retrieval (see
:mod:`ragloom.core.parent_store`). Each document is cut into a hierarchy: the top level is
the whole document, or the segments of ``parent_splitters[0]``; each further parent splitter
cuts every segment of the level above; ``child_splitter`` cuts the last level into the
children. The children are returned (for the ingestor to embed and store), each with the
``parent_id`` of its parent; the parents go into the :class:`ParentStore`, each with its own
``parent_id`` (below the top level) and ``child_count``. Every segment's ``start``/``end``
are offsets in the original document, so citations of children and parents alike are exact.

Parent ids derive from the document's identity and version (as the ingestor's segment ids
do), so re-ingesting writes the same ids, and children of an older version of a document
keep pointing at that version's parents until they are replaced.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ragloom.core.document import END, INDEX, START, Document, TextSegment
from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError
from ragloom.core.ingestor import DOCUMENT_ID, document_identity, document_version, segment_id
from ragloom.core.parent_store import CHILD_COUNT, PARENT_ID, ParentStore
from ragloom.core.splitters.base import DocumentSplitter

__all__ = [
    "ParentChildSplitter",
]


class ParentChildSplitter:
    """Returns the children of each document and puts their parents in ``parent_store``.

    Without ``parent_splitters`` each child's parent is its whole document (LangChain's
    full-document mode); with several, the parents form levels from largest to smallest
    (LlamaIndex's hierarchical parser, for :class:`AutoMergingRetriever`). The splitters
    must record ``start``/``end`` offsets (ragloom's own do).
    """

    def __init__(
        self,
        child_splitter: DocumentSplitter,
        parent_store: ParentStore,
        *,
        parent_splitters: Sequence[DocumentSplitter] = (),
    ) -> None:
        for splitter in (child_splitter, *parent_splitters):
            if not isinstance(splitter, DocumentSplitter):
                raise InvalidArgumentTypeError(
                    f"splitters must be DocumentSplitters, got {type(splitter).__name__}"
                )
        if not isinstance(parent_store, ParentStore):
            raise InvalidArgumentTypeError(
                f"parent_store must be a ParentStore, got {type(parent_store).__name__}"
            )
        self.child_splitter = child_splitter
        self.parent_store = parent_store
        self.parent_splitters = tuple(parent_splitters)

    def split(self, document: Document) -> list[TextSegment]:
        """The children of ``document``, in order; its parents are stored as a side effect."""
        identity = document_identity(document)
        key = f"{identity}@{document_version(document)}"
        if self.parent_splitters:
            level = _pieces(self.parent_splitters[0], document, 0, document.text)
        else:
            whole = document.metadata.copy().put_all({INDEX: 0, START: 0, END: len(document.text)})
            level = [TextSegment(document.text, whole)] if document.text.strip() else []
        parents: dict[str, TextSegment] = {}
        ids = _ids(key, 0, level)
        owners: Sequence[str | None] = [None] * len(level)
        for depth, splitter in enumerate((*self.parent_splitters[1:], self.child_splitter), 1):
            _link(identity, level, owners, parents)
            parents.update(zip(ids, level, strict=True))
            level, owners = _split_level(splitter, document, level, ids)
            ids = _ids(key, depth, level)
        _link(identity, level, owners, parents)
        # A parent whose text yields no children is unreachable: store the others.
        self.parent_store.put_all({id: p for id, p in parents.items() if CHILD_COUNT in p.metadata})
        return level

    def split_all(self, documents: Iterable[Document]) -> list[TextSegment]:
        """The children of every document, document after document."""
        return [child for document in documents for child in self.split(document)]


def _ids(key: str, depth: int, level: list[TextSegment]) -> list[str]:
    """The ids of the segments of one level of a document version's hierarchy."""
    return [segment_id(f"{key}/{depth}", index) for index in range(len(level))]


def _link(
    identity: str,
    level: list[TextSegment],
    owners: Sequence[str | None],
    parents: dict[str, TextSegment],
) -> None:
    """Record each segment's document and parent, and each parent's number of children."""
    for segment, owner in zip(level, owners, strict=True):
        segment.metadata[DOCUMENT_ID] = identity
        if owner is not None:
            segment.metadata[PARENT_ID] = owner
            parent = parents[owner].metadata
            parent[CHILD_COUNT] = int(parent.get(CHILD_COUNT, 0)) + 1


def _split_level(
    splitter: DocumentSplitter, document: Document, level: list[TextSegment], ids: list[str]
) -> tuple[list[TextSegment], list[str]]:
    """The pieces of every segment of ``level`` (numbered through the document) and the id
    of the segment each came from."""
    pieces: list[TextSegment] = []
    owners: list[str] = []
    for segment, id in zip(level, ids, strict=True):
        found = _pieces(splitter, document, int(segment.metadata[START]), segment.text)
        pieces += found
        owners += [id] * len(found)
    for index, piece in enumerate(pieces):
        piece.metadata[INDEX] = index
    return pieces, owners


def _pieces(
    splitter: DocumentSplitter, document: Document, offset: int, text: str
) -> list[TextSegment]:
    """``splitter``'s segments of ``text`` (which starts at ``offset`` in ``document``),
    with the document's metadata and ``start``/``end`` as offsets in the document."""
    pieces = []
    for segment in splitter.split(Document(text, document.metadata)):
        meta = segment.metadata
        if START not in meta or END not in meta:
            raise InvalidArgumentError(
                f"{type(splitter).__name__} records no start/end offsets; small-to-big "
                "retrieval needs them to cite the original document"
            )
        start, end = int(meta[START]) + offset, int(meta[END]) + offset
        if document.text[start:end] != segment.text:
            raise InvalidArgumentError(
                f"{type(splitter).__name__}'s start/end offsets do not match its segment text"
            )
        pieces.append(TextSegment(segment.text, meta.copy().put_all({START: start, END: end})))
    return pieces
