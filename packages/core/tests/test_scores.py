"""exact_cosines to the bit: every store rescores with it, so its float64 sums must not
drift when its implementation changes (each row summed as ``ndarray.sum`` sums it)."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest

from ragloom.core.stores.scores import exact_cosines, exact_scores, relevance_score


def _reference(
    vectors: npt.NDArray[np.float32], query: npt.NDArray[np.float32]
) -> npt.NDArray[np.float64]:
    """The definition, one row at a time: float64 dot over float64 norms, clipped."""
    query64 = query.astype(np.float64)
    query_norm = math.sqrt(float(query64 @ query64))
    cosines = []
    for row in vectors.astype(np.float64):
        norm = math.sqrt(float((row * row).sum())) * query_norm
        cosines.append(min(max(float((row * query64).sum()) / max(norm, 1e-300), -1.0), 1.0))
    return np.array(cosines)


@pytest.mark.parametrize("count", [1, 10, 5000])  # 5000: more than one chunk
def test_exact_cosines_equal_the_definition_to_the_bit(count: int) -> None:
    rng = np.random.default_rng(count)
    scales = rng.choice([1e-20, 1e-3, 1.0, 1e3, 1e15], size=(count, 1))
    vectors = (rng.standard_normal((count, 384)) * scales).astype(np.float32)
    vectors[0] = 0.0  # a zero row: cosine 0
    queries = [rng.standard_normal(384).astype(np.float32), 3 * vectors[-1]]  # -1: itself
    rows = rng.integers(0, count, size=min(count, 40)).astype(np.intp)
    for query in queries:
        expected = _reference(vectors, query)
        assert exact_cosines(vectors, query).view(np.int64).tolist() == (
            expected.view(np.int64).tolist()
        )
        assert exact_cosines(vectors, query, rows).view(np.int64).tolist() == (
            expected[rows].view(np.int64).tolist()
        )


@pytest.mark.parametrize("dimension", [1, 7, 128, 130, 384, 1000])
def test_exact_scores_are_the_relevance_of_exact_cosines_to_the_bit(dimension: int) -> None:
    """The search's few-row path (floats) against the array path, zero rows, tiny and
    huge norms and a row parallel to the query (cosine clipped at 1) included."""
    rng = np.random.default_rng(dimension)
    scales = rng.choice([1e-20, 1e-3, 1.0, 1e3, 1e15], size=(40, 1))
    vectors = (rng.standard_normal((40, dimension)) * scales).astype(np.float32)
    vectors[0] = 0.0
    for query in (rng.standard_normal(dimension).astype(np.float32), 3 * vectors[-1]):
        query64 = query.astype(np.float64)
        norm = math.sqrt(float(query64 @ query64))
        rows = rng.permutation(40)[:25].astype(np.intp)
        expected = relevance_score(exact_cosines(vectors, query, rows))
        got = exact_scores(vectors.take(rows, axis=0), query64, norm)
        assert all(type(score) is float for score in got)
        assert np.array(got).view(np.int64).tolist() == expected.view(np.int64).tolist()
