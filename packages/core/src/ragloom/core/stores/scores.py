"""Relevance scores: the spec's ``(cosine + 1) / 2`` in [0, 1], and exact cosines.

Every store reports the same score for the same vectors: a backend that returns a cosine
distance converts it with :func:`cosine_from_distance`, then :func:`relevance_score`.
Stores that fetch the candidate vectors rescore them with :func:`exact_cosines`, so the
in-memory store and a database agree to the last bit.
"""

from __future__ import annotations

import math
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

__all__ = ["cosine_from_distance", "exact_cosines", "exact_scores", "relevance_score"]

Number = TypeVar("Number", float, npt.NDArray[np.float64])

_CHUNK = 4096  # rows converted to float64 at a time


def relevance_score(cosine: Number) -> Number:
    """The relevance score of a cosine similarity: ``(cosine + 1) / 2`` (scalar or array)."""
    return (cosine + 1.0) / 2.0


def cosine_from_distance(distance: Number) -> Number:
    """The cosine similarity of a cosine distance ``1 - cosine`` (pgvector ``<=>``, ...)."""
    return 1.0 - distance


def exact_cosines(
    vectors: npt.NDArray[np.float32],
    query: npt.NDArray[np.floating[Any]],
    rows: npt.NDArray[np.intp] | None = None,
    *,
    query_norm: float | None = None,
) -> npt.NDArray[np.float64]:
    """float64 cosines between ``query`` and ``vectors`` (or its ``rows``), in [-1, 1].

    Products of float32 values are exact in float64 and each row's sums are deterministic,
    so the same vectors give the same cosines in every store. A zero vector (or query)
    has cosine 0 with everything. ``query_norm``: the query's float64 norm, when the
    caller has it already.
    """
    query64 = np.asarray(query, dtype=np.float64)
    if query_norm is None:
        query_norm = math.sqrt(float(query64 @ query64))
    count = vectors.shape[0] if rows is None else rows.size
    if query_norm == 0.0:
        return np.zeros(count, dtype=np.float64)
    if count <= _CHUNK:  # a search's dozen rows: as few numpy calls as can be
        picked = vectors if rows is None else vectors.take(rows, axis=0)
        return _block_cosines(picked, query64, query_norm)
    result = np.empty(count, dtype=np.float64)
    for start in range(0, count, _CHUNK):
        chunk = (
            vectors[start : start + _CHUNK]
            if rows is None
            else vectors.take(rows[start : start + _CHUNK], axis=0)
        )
        result[start : start + chunk.shape[0]] = _block_cosines(chunk, query64, query_norm)
    return result


def exact_scores(
    rows: npt.NDArray[np.float32], query64: npt.NDArray[np.float64], query_norm: float
) -> list[float]:
    """Relevance scores ``(cosine + 1) / 2`` of a few gathered float32 ``rows`` (a
    search's dozen) against a float64 query of norm ``query_norm`` > 0, as floats: the
    bits of ``relevance_score(exact_cosines(...))``. The products and their pairwise sums
    are numpy's, as there (each row along its contiguous axis); the rest is the same IEEE
    operations on floats, without builtins: right after a graph walk has evicted the
    caches, each numpy call or builtin costs several microseconds, a float operation not."""
    rows64 = rows.astype(np.float64)
    dots = _SUM(rows64 * query64, axis=1).tolist()
    squares = _SUM(rows64 * rows64, axis=1).tolist()
    sqrt = math.sqrt
    scores = []
    for dot, square in zip(dots, squares, strict=True):
        norm = sqrt(square) * query_norm
        cosine = dot / (norm if norm > 1e-300 else 1e-300)  # max(norm, 1e-300), no NaN here
        scores.append(((1.0 if cosine > 1.0 else -1.0 if cosine < -1.0 else cosine) + 1.0) / 2.0)
    return scores


def _block_cosines(
    rows: npt.NDArray[np.float32], query64: npt.NDArray[np.float64], query_norm: float
) -> npt.NDArray[np.float64]:
    """Cosines of ``rows`` with a query of norm ``query_norm`` > 0, clipped to [-1, 1];
    0 for a zero row. The products with the query and the squares go into one array, so
    one reduction sums both (each row pairwise, as ``ndarray.sum`` does: the same bits)."""
    products = np.empty((2, *rows.shape), dtype=np.float64)
    block = products[1]
    block[...] = rows
    np.multiply(block, query64, out=products[0])
    np.multiply(block, block, out=block)
    dots, norms = _SUM(products, axis=2)
    np.sqrt(norms, out=norms)
    norms *= query_norm
    # A zero row's dot product is 0, and stays 0 divided by a tiny norm; any other row's
    # norm here is above 1e-90 (float32 subnormals squared, times the query's norm).
    np.maximum(norms, 1e-300, out=norms)
    dots /= norms
    cosines: npt.NDArray[np.float64] = _CLIP(dots, -1.0, 1.0, out=dots)
    return cosines


_SUM = np.add.reduce  # what ndarray.sum calls, pairwise per row
# np.clip's ufunc (numpy 2: np._core, 1.x: np.core), without np.clip's Python wrapper.
_CLIP: Any = (getattr(np, "_core", None) or np.core).umath.clip
