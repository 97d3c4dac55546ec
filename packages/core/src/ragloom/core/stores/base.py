"""The EmbeddingStore contract: search request, result, match and the store protocol.

Every store (in memory, pgvector, Milvus, ...) follows the same rules, which the
``ragloom-testkit`` suites check:

- ids are non-empty ``str``; a store generates UUID4 strings when none are given;
  adding an id that already exists replaces its entry;
- a match's ``score`` is the relevance ``(cosine + 1) / 2`` in [0, 1]; matches come
  sorted by score descending, ties in insertion order; ``min_score`` is inclusive;
- ``get(ids)`` gives the stored entries of ``ids`` back in the order asked (unknown ids
  omitted, an id asked twice given once), vectors only on request, exactly as added;
- bad input raises :class:`~ragloom.core.errors.EmbeddingStoreError` and leaves the
  store unchanged.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Protocol, runtime_checkable

import numpy.typing as npt

from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding
from ragloom.core.errors import EmbeddingStoreError
from ragloom.core.filters import Filter
from ragloom.core.stores.arguments import (
    check_filter,
    check_max_results,
    check_min_score,
    validate_ids,
)

__all__ = [
    "EmbeddingSearchRequest",
    "EmbeddingMatch",
    "EmbeddingSearchResult",
    "EmbeddingStore",
    "StoredEmbedding",
]


@dataclass(frozen=True, slots=True, init=False)
class EmbeddingSearchRequest:
    """What to search for: the query embedding, how many matches, and which ones.

    ``query_embedding`` may be an :class:`Embedding` or anything array-like (converted).
    Raises :class:`EmbeddingStoreError` when ``max_results < 1``, ``min_score`` is outside
    [0, 1] or the query vector is not finite.
    """

    query_embedding: Embedding
    max_results: int = 3
    min_score: float = 0.0
    filter: Filter | None = None

    def __init__(
        self,
        query_embedding: Embedding | npt.ArrayLike,
        max_results: int = 3,
        min_score: float = 0.0,
        filter: Filter | None = None,
    ) -> None:
        if not isinstance(query_embedding, Embedding):
            try:
                query_embedding = Embedding(query_embedding)
            except ValueError as exc:
                raise EmbeddingStoreError(f"invalid query embedding: {exc}") from exc
        # The checks' usual case inline (a query's request is built every search); any
        # other value goes through the full check, which raises or accepts it.
        if type(max_results) is not int or max_results < 1:
            check_max_results(max_results)
        if type(min_score) is not float or not 0.0 <= min_score <= 1.0:
            min_score = check_min_score(min_score)
        if filter is not None:
            check_filter(filter)
        # The slots' setters, which a frozen dataclass leaves usable: ~0.1 us less each
        # than object.__setattr__, which looks the name up.
        _SET_QUERY(self, query_embedding)
        _SET_MAX_RESULTS(self, max_results)
        _SET_MIN_SCORE(self, min_score)
        _SET_FILTER(self, filter)


_SET_QUERY, _SET_MAX_RESULTS, _SET_MIN_SCORE, _SET_FILTER = (
    EmbeddingSearchRequest.__dict__[name].__set__
    for name in ("query_embedding", "max_results", "min_score", "filter")
)


@dataclass(frozen=True, slots=True)
class EmbeddingMatch:
    """One search hit: relevance ``score`` in [0, 1], the entry's id, vector and segment.

    ``embedded`` is ``None`` when the embedding was stored without a segment.
    """

    score: float
    embedding_id: str
    embedding: Embedding
    embedded: TextSegment | None = None

    @classmethod
    def _trusted_list(
        cls,
        scores: Sequence[float],
        ids: Sequence[str],
        embeddings: Sequence[Embedding],
        segments: Sequence[TextSegment | None],
    ) -> list[EmbeddingMatch]:
        """Matches of values a store built itself, set slot by slot (internal: a third of
        the frozen ``__init__``'s cost, which goes through ``object.__setattr__``). The
        objects are made, then each slot set for all of them, by ``map`` run in C: no
        Python step a match (2.2 against 2.8 us for 10 matches). Raises ``ValueError``
        when the sequences' lengths differ."""
        count = len(ids)
        if not len(scores) == len(embeddings) == len(segments) == count:
            raise ValueError("scores, ids, embeddings and segments differ in length")
        matches = list(map(object.__new__, repeat(cls, count)))
        _CONSUME(map(_SET_SCORE, matches, scores))
        _CONSUME(map(_SET_ID, matches, ids))
        _CONSUME(map(_SET_EMBEDDING, matches, embeddings))
        _CONSUME(map(_SET_EMBEDDED, matches, segments))
        return matches


_CONSUME: Callable[[Iterable[object]], None] = deque[object](maxlen=0).extend  # runs one out, in C
# The slot descriptors' setters, which a frozen dataclass leaves usable internally.
_SET_SCORE, _SET_ID, _SET_EMBEDDING, _SET_EMBEDDED = (
    EmbeddingMatch.__dict__[name].__set__
    for name in ("score", "embedding_id", "embedding", "embedded")
)


@dataclass(frozen=True, slots=True)
class EmbeddingSearchResult:
    """The matches of a search, best first."""

    matches: list[EmbeddingMatch] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class StoredEmbedding:
    """One stored entry as :meth:`EmbeddingStore.get` gives it back.

    ``embedded`` is ``None`` for an embedding stored without a segment; ``embedding`` is
    the vector as added (float32) only when asked for (``get(..., embeddings=True)``).
    """

    embedding_id: str
    embedded: TextSegment | None
    embedding: Embedding | None = None


@runtime_checkable
class EmbeddingStore(Protocol):
    """A vector store: add embeddings (optionally with their segments), search, remove.

    Implementations define :meth:`add_all`, :meth:`search`, :meth:`remove_all` and
    :meth:`get`; subclassing this protocol explicitly inherits :meth:`add` and
    :meth:`remove`, which delegate to them.

    :meth:`get` is a protocol member, as ``add`` and ``remove`` are: every member is part
    of the contract the testkit checks and that callers (the LangChain and LlamaIndex
    adapters, parent-document retrieval) rely on, so a structural store without ``get``
    is not an ``EmbeddingStore`` for ``isinstance`` (unlike the optional async variants,
    kept out of the protocol in :mod:`ragloom.core.aio`). It has no default: it cannot be
    derived from the other methods.
    """

    def add_all(
        self,
        embeddings: Sequence[Embedding],
        segments: Sequence[TextSegment] | None = None,
        *,
        ids: Sequence[str] | None = None,
    ) -> list[str]:
        """Add embeddings (with their segments and ids, when given) in one batch.

        Returns the ids in input order. Everything is validated first (lengths agree,
        ids unique non-empty strings, one dimension, finite values): on error nothing
        is added.
        """
        ...

    def search(self, request: EmbeddingSearchRequest) -> EmbeddingSearchResult:
        """The at most ``request.max_results`` most relevant entries passing the filter."""
        ...

    def remove_all(self, ids: Iterable[str] | None = None, *, filter: Filter | None = None) -> None:
        """Remove the given ids, or the entries matching ``filter``, or (neither) everything.

        Unknown ids are ignored; an empty ``ids`` removes nothing; passing both is an error.
        A :class:`~ragloom.core.Filter` passed positionally is taken as ``filter``.
        """
        ...

    def get(self, ids: Iterable[str], *, embeddings: bool = False) -> list[StoredEmbedding]:
        """The stored entries of ``ids``, in the order asked; unknown ids omitted; an id
        asked twice is given once (first place). Ids validated as add_all validates them
        (EmbeddingStoreError naming the bad id). Vectors only when ``embeddings=True`` (as
        stored: the float32 values given to add_all)."""
        ...

    def add(
        self,
        embedding: Embedding,
        segment: TextSegment | None = None,
        *,
        id: str | None = None,
    ) -> str:
        """Add one embedding (with its segment, under ``id`` when given); returns its id."""
        segments = None if segment is None else [segment]
        ids = None if id is None else [id]
        return self.add_all([embedding], segments, ids=ids)[0]

    def remove(self, id: str) -> None:
        """Remove the entry with this id; an unknown id is ignored."""
        self.remove_all(validate_ids([id], 1))
