"""Rank fusion: combine ranked lists of contents into one (RRF and weighted scores).

Shared by the content aggregators (two-stage RRF over queries and retrievers) and the
hybrid retriever (dense + keyword). Contents are the same when their segments are: the
same text from the same source (equal segment metadata, leaving out positions and the
ingestor's bookkeeping), so a dense leg and a keyword leg built over the same documents
add up, while documents that share a text (boilerplate, a copied paragraph) stay apart.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from ragloom.core.content import Content
from ragloom.core.document import END, INDEX, START
from ragloom.core.errors import InvalidArgumentError
from ragloom.core.ingestor import DOCUMENT_ID, DOCUMENT_VERSION

__all__ = [
    "RRF_K",
    "content_key",
    "Key",
    "fuse_reciprocal_ranks",
    "fuse_weighted_scores",
    "reciprocal_rank_fusion",
]

RRF_K = 60
_BOOKKEEPING = frozenset({DOCUMENT_ID, DOCUMENT_VERSION, INDEX, START, END})


def content_key(content: Content) -> Hashable:
    """What makes two contents the same: their segment's text and source metadata, without
    the positions a splitter adds (``index``, ``start``, ``end``) and the keys only the
    ingestor adds (``document_id``, ``document_version``), which a keyword index built from
    the same documents may lack. Retrieval metadata (scores, ids) does not count."""
    metadata = content.text_segment.metadata
    return (
        content.text,
        frozenset(
            (key, type(value), value) for key, value in metadata.items() if key not in _BOOKKEEPING
        ),
    )


Key = Callable[[Content], Hashable]


def fuse_reciprocal_ranks(
    rankings: Sequence[Sequence[Content]],
    weights: Sequence[float],
    k: float = RRF_K,
    *,
    key: Key = content_key,
) -> list[tuple[Content, float]]:
    """``sum(weight / (k + rank))`` per content over ``rankings``, with the fused scores;
    best first, ties in order of first appearance. With weights of 1 the order is that of
    :func:`reciprocal_rank_fusion`. ``key`` says which contents are the same (default
    :func:`content_key`; e.g. a document id to fuse documents rather than segments)."""
    return _fuse(
        rankings,
        [
            [weight / (k + rank) for rank in range(1, len(ranking) + 1)]
            for ranking, weight in zip(rankings, weights, strict=True)
        ],
        key,
    )


def fuse_weighted_scores(
    rankings: Sequence[Sequence[Content]],
    weights: Sequence[float],
    *,
    key: Key = content_key,
) -> list[tuple[Content, float]]:
    """``sum(weight * min-max normalized score)`` per content: a convex combination of
    the lists' scores, each scaled to [0, 1] over the list (a list of one, or of equal
    scores, gives 1; a list without scores uses ``1 - (rank - 1) / length``); a content
    missing from a list gets 0 from it. ``key`` as for :func:`fuse_reciprocal_ranks`."""
    return _fuse(
        rankings,
        [
            [weight * value for value in _normalized(ranking)]
            for ranking, weight in zip(rankings, weights, strict=True)
        ],
        key,
    )


def _normalized(ranking: Sequence[Content]) -> list[float]:
    scores = [content.score for content in ranking]
    if any(score is None for score in scores):
        return [1 - rank / len(ranking) for rank in range(len(ranking))]
    present = [score for score in scores if score is not None]
    if not present:
        return []
    low, high = min(present), max(present)
    if high == low:
        return [1.0] * len(present)
    return [(score - low) / (high - low) for score in present]


def _fuse(
    rankings: Sequence[Sequence[Content]], parts: Sequence[Sequence[float]], key_of: Key
) -> list[tuple[Content, float]]:
    fused: dict[Hashable, list[Any]] = {}  # key -> [content, score]
    for ranking, values in zip(rankings, parts, strict=True):
        seen: set[Hashable] = set()
        for content, value in zip(ranking, values, strict=True):
            key = key_of(content)
            if key in seen:  # a list naming one entry twice counts its best rank only
                continue
            seen.add(key)
            if key in fused:
                fused[key][1] += value
            else:
                fused[key] = [content, value]
    entries = sorted(fused.values(), key=lambda entry: -entry[1])  # stable: ties keep order
    return [(content, score) for content, score in entries]


def reciprocal_rank_fusion(
    ranked_lists: Sequence[Sequence[Content]], *, k: int = RRF_K
) -> list[Content]:
    """Fuse ranked lists: each content scores ``sum(1 / (k + rank))``, ranks from 1.

    Contents naming the same entry (see :func:`content_key`) are one content (the first
    one seen is kept, with its metadata). Ties keep the order of first appearance, so the
    result is deterministic.
    """
    if type(k) is not int or k < 0:
        raise InvalidArgumentError(f"k must be a non-negative int, got {k!r}")
    fused = fuse_reciprocal_ranks(ranked_lists, [1.0] * len(ranked_lists), k)
    return [content for content, _ in fused]
