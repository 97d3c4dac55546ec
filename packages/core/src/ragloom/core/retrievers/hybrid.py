"""HybridContentRetriever: fuses a dense (embedding) and a keyword (full-text) retriever.

Dense retrieval finds paraphrases but misses exact names, codes and rare words; keyword
retrieval is the other way round. Fusing both ranked lists usually beats either. Two
fusions are offered:

* ``"rrf"`` -- reciprocal rank fusion, ``score = sum(w_i / (k + rank_i))`` (ranks from 1,
  ``k = 60`` as in Cormack et al. 2009). Uses ranks only, so the components' score scales
  (cosine vs. unbounded BM25) do not matter; the robust default.
* ``"weighted"`` -- ``score = sum(w_i * normalized_score_i)`` with each list's scores
  min-max normalized to [0, 1] (a list of one, or of equal scores, normalizes to 1; a list
  without scores uses ``1 - (rank - 1) / length``). A content missing from a list gets 0
  from it.

A content found by both retrievers is recognized by its segment (text and source
metadata, see :func:`~ragloom.core.fusion.content_key`), so any two
:class:`ContentRetriever` s over the same documents combine, whatever ids they attach.
With ``group_by`` (a metadata key naming each segment's document, e.g. ``document_id``
as the ingestor sets it) contents are documents instead: each list keeps a document's
best segment only (max aggregation) and the fused list has one content per document,
so a document found through one segment by dense search and through another by keyword
search adds up both. Fused contents carry
``score`` (the fused score) and, per component, ``dense_score``/``keyword_score`` and
``dense_rank``/``keyword_rank`` (absent when that component did not find it), besides the
components' own metadata (e.g. ``embedding_id``, ``segment_id``). Give the components a
larger ``max_results`` than the fused list needs: fusion can only reorder what they return.

Measured on CISI (``docs/evaluation.md``): weighted fusion beat RRF by +0.01 to +0.02
nDCG@10, and grouping split documents by document another +0.005; summing a document's
segments instead of taking the best one lost 0.05 to 0.13 (long documents win), so
only the maximum is offered.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, Literal, get_args

from ragloom.core import aio
from ragloom.core.content import SCORE, Content
from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError
from ragloom.core.fusion import content_key, fuse_reciprocal_ranks, fuse_weighted_scores
from ragloom.core.query import Query
from ragloom.core.retrievers.base import ContentRetriever

__all__ = [
    "DENSE_RANK",
    "DENSE_SCORE",
    "KEYWORD_RANK",
    "KEYWORD_SCORE",
    "Fusion",
    "HybridContentRetriever",
]

Fusion = Literal["rrf", "weighted"]

DENSE_SCORE = "dense_score"
KEYWORD_SCORE = "keyword_score"
DENSE_RANK = "dense_rank"
KEYWORD_RANK = "keyword_rank"
_COMPONENTS = ((DENSE_SCORE, DENSE_RANK), (KEYWORD_SCORE, KEYWORD_RANK))

_in_pool = threading.local()  # set in the threads of the keyword-leg pool
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _mark_pool_thread() -> None:
    _in_pool.value = True


def _legs() -> ThreadPoolExecutor:
    """The shared pool the keyword legs of sync hybrid retrievals run on (made on first use)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(
                thread_name_prefix="ragloom-hybrid", initializer=_mark_pool_thread
            )
        return _pool


class HybridContentRetriever:
    """Runs ``dense`` and ``keyword`` for each query and fuses their lists (see the module
    docstring). ``weights`` are (dense, keyword): default (1, 1) for ``"rrf"`` and
    (0.5, 0.5) for ``"weighted"``. ``max_results`` cuts the fused list (``None``: keep all).
    ``group_by`` names the segment metadata key of the document, to fuse documents
    (their best segments) rather than segments; segments without it stay apart.
    """

    def __init__(
        self,
        dense: ContentRetriever,
        keyword: ContentRetriever,
        *,
        fusion: Fusion = "rrf",
        k: float = 60,
        weights: tuple[float, float] | None = None,
        max_results: int | None = None,
        group_by: str | None = None,
    ) -> None:
        for name, retriever in (("dense", dense), ("keyword", keyword)):
            if not isinstance(retriever, ContentRetriever):
                raise InvalidArgumentTypeError(
                    f"{name} must be a ContentRetriever, got {type(retriever).__name__}"
                )
        if fusion not in get_args(Fusion):
            raise InvalidArgumentError(f"fusion must be one of {get_args(Fusion)}, got {fusion!r}")
        if not isinstance(k, int | float) or isinstance(k, bool) or not k >= 0:
            raise InvalidArgumentError(f"k must be a number >= 0, got {k!r}")
        if weights is None:
            weights = (1.0, 1.0) if fusion == "rrf" else (0.5, 0.5)
        if len(weights) != 2 or not all(
            isinstance(w, int | float) and not isinstance(w, bool) and w >= 0 for w in weights
        ):
            raise InvalidArgumentError(
                f"weights must be two numbers >= 0 (dense, keyword), got {weights!r}"
            )
        if max_results is not None and (type(max_results) is not int or max_results < 1):
            raise InvalidArgumentError(
                f"max_results must be a positive int or None, got {max_results!r}"
            )
        if group_by is not None and (not isinstance(group_by, str) or not group_by):
            raise InvalidArgumentError(
                f"group_by must be a metadata key (a non-empty str) or None, got {group_by!r}"
            )
        self.dense = dense
        self.keyword = keyword
        self.fusion = fusion
        self.k = float(k)
        self.weights = (float(weights[0]), float(weights[1]))
        self.max_results = max_results
        self.group_by = group_by

    def _key(self, content: Content) -> Hashable:
        """What makes two contents the same: their document (``group_by``) or segment."""
        if self.group_by is not None:
            value = content.text_segment.metadata.get(self.group_by)
            if value is not None:
                return ("document", type(value), value)
        return content_key(content)

    def _best_per_key(self, ranking: Sequence[Content]) -> list[Content]:
        """``ranking`` (best first) with each entry's first, best content only."""
        seen: set[Hashable] = set()
        kept = []
        for content in ranking:
            key = self._key(content)
            if key not in seen:
                seen.add(key)
                kept.append(content)
        return kept

    def retrieve(self, query: Query) -> list[Content]:
        """The fused contents of both retrievers for ``query``, best first.

        The two retrievers run concurrently: the keyword one on a shared worker thread
        (sequentially when called from that pool, so nested hybrids cannot exhaust it).
        """
        if getattr(_in_pool, "value", False):
            return self._fuse([self.dense.retrieve(query), self.keyword.retrieve(query)])
        keyword = _legs().submit(contextvars.copy_context().run, self.keyword.retrieve, query)
        try:
            dense = self.dense.retrieve(query)
        except BaseException:
            wait([keyword])  # no leg outlives the call; the dense failure is raised
            raise
        return self._fuse([dense, keyword.result()])

    async def aretrieve(self, query: Query) -> list[Content]:
        """:meth:`retrieve` for asyncio: both retrievers awaited concurrently (native
        coroutines when they have them, see :mod:`ragloom.core.aio`)."""
        legs = [
            asyncio.ensure_future(aio.aretrieve(self.dense, query)),
            asyncio.ensure_future(aio.aretrieve(self.keyword, query)),
        ]
        try:
            dense, keyword = await asyncio.gather(*legs)
        except BaseException:  # a failure or a cancellation: stop the other leg too
            for leg in legs:
                leg.cancel()
            await asyncio.gather(*legs, return_exceptions=True)
            raise
        return self._fuse([dense, keyword])

    def _fuse(self, rankings: list[list[Content]]) -> list[Content]:
        """The fused list of the (dense, keyword) rankings."""
        if self.group_by is not None:  # max aggregation: a document's best segment
            rankings = [self._best_per_key(ranking) for ranking in rankings]
        if self.fusion == "rrf":
            fused = fuse_reciprocal_ranks(rankings, self.weights, self.k, key=self._key)
        else:
            fused = fuse_weighted_scores(rankings, self.weights, key=self._key)
        if self.max_results is not None:
            fused = fused[: self.max_results]
        found: list[dict[Hashable, tuple[int, Content]]] = [{} for _ in rankings]
        for ranking, positions in zip(rankings, found, strict=True):
            for rank, content in enumerate(ranking, start=1):
                positions.setdefault(self._key(content), (rank, content))
        results = []
        for content, score in fused:
            key = self._key(content)
            metadata: dict[str, Any] = {}
            components: dict[str, Any] = {}
            for positions, (score_key, rank_key) in zip(found, _COMPONENTS, strict=True):
                if key in positions:
                    rank, own = positions[key]
                    metadata = {**own.metadata, **metadata}
                    components[score_key] = own.score
                    components[rank_key] = rank
            results.append(Content(content.text_segment, {**metadata, **components, SCORE: score}))
        return results

    def __repr__(self) -> str:
        return (
            f"HybridContentRetriever({self.dense!r}, {self.keyword!r}, fusion={self.fusion!r}, "
            f"k={self.k:g}, weights={self.weights}, group_by={self.group_by!r})"
        )
