"""Maximal marginal relevance: hand-checked cases, properties against a plain-python
reference, and MmrContentAggregator as a content aggregator step."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.core import RERANKED_SCORE, Content, Query, ReRankingContentAggregator
from ragloom.core.errors import InvalidArgumentError, RetrievalError
from ragloom.core.mmr import MmrContentAggregator, maximal_marginal_relevance
from ragloom.testkit import FakeEmbeddingModel, FakeScoringModel

QUERY = [1.0, 0.0]
# a: cos .96 with the query; b: a duplicate of a; c: cos .6 with the query, .352 with a.
A, B, C = [0.96, 0.28], [0.96, 0.28], [0.6, -0.8]


def reference_mmr(
    query: Sequence[float],
    vectors: Sequence[Sequence[float]],
    lambda_: float,
    max_results: int | None = None,
    relevance: Sequence[float] | None = None,
) -> list[int]:
    """MMR in plain python, straight from the definition (the differential oracle)."""

    def cos(x: Sequence[float], y: Sequence[float]) -> float:
        nx, ny = math.sqrt(sum(v * v for v in x)), math.sqrt(sum(v * v for v in y))
        return (
            0.0 if nx == 0 or ny == 0 else sum(a * b for a, b in zip(x, y, strict=True)) / (nx * ny)
        )

    rel = list(relevance) if relevance is not None else [cos(v, query) for v in vectors]
    left, chosen = list(range(len(vectors))), []
    while left and (max_results is None or len(chosen) < max_results):

        def marginal(i: int) -> float:
            sims = [cos(vectors[i], vectors[j]) for j in chosen]
            return lambda_ * rel[i] - (1 - lambda_) * (max(sims) if sims else 0.0)

        best = max(left, key=lambda i: (marginal(i), -i))
        chosen.append(best)
        left.remove(best)
    return chosen


@pytest.mark.parametrize(
    ("lambda_", "expected"),
    [
        (1.0, [0, 1, 2]),  # relevance only
        (0.9, [0, 1, 2]),  # b: .864 - .1 * 1 = .764 beats c: .54 - .1 * .352 = .505
        (0.5, [0, 2, 1]),  # b: .48 - .5 = -.02 loses to c: .3 - .176 = .124
        (0.0, [0, 2, 1]),  # diversity only: c (-.352) before the duplicate (-1)
    ],
)
def test_hand_checked_three_items(lambda_: float, expected: list[int]) -> None:
    assert maximal_marginal_relevance(QUERY, [A, B, C], lambda_=lambda_) == expected


def test_max_results_cuts_after_the_diverse_pick() -> None:
    assert maximal_marginal_relevance(QUERY, [A, B, C], lambda_=0.5, max_results=2) == [0, 2]
    assert maximal_marginal_relevance(QUERY, [A, B, C], max_results=10) == [0, 2, 1]


def test_given_relevance_replaces_the_query_cosine() -> None:
    # relevance says c first; then a (sim .352 with c) before its duplicate b.
    order = maximal_marginal_relevance(None, [A, B, C], lambda_=0.7, relevance=[0.5, 0.5, 0.9])
    assert order == [2, 0, 1]


def test_zero_vectors_and_empty_input() -> None:
    assert maximal_marginal_relevance(QUERY, np.zeros((0, 2))) == []
    assert maximal_marginal_relevance(QUERY, [[0.0, 0.0], A], lambda_=1.0) == [1, 0]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lambda_": 1.5}, "lambda_ must be a number from 0 to 1"),
        ({"lambda_": True}, "lambda_ must be a number from 0 to 1"),
        ({"max_results": 0}, "max_results must be a positive int"),
        ({"embeddings": [1.0, 2.0]}, "2-D array"),
        ({"query_embedding": [1.0, 0.0, 0.0]}, "query_embedding must have shape \\(2,\\)"),
        ({"relevance": [1.0]}, "one score per embedding \\(3\\)"),
        ({"relevance": [1.0, math.nan, 0.0]}, "finite"),
    ],
)
def test_bad_input(kwargs: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"query_embedding": QUERY, "embeddings": [A, B, C], **kwargs}
    with pytest.raises(InvalidArgumentError, match=message):
        maximal_marginal_relevance(**arguments)  # type: ignore[arg-type]


vectors = st.integers(1, 4).flatmap(
    lambda d: st.tuples(
        st.lists(st.integers(-3, 3), min_size=d, max_size=d),
        st.lists(st.lists(st.integers(-3, 3), min_size=d, max_size=d), min_size=0, max_size=12),
    )
)


@settings(max_examples=150, deadline=None)
@given(vectors)
def test_lambda_one_is_the_stable_relevance_order(case: tuple[list[int], list[list[int]]]) -> None:
    query, items = case
    matrix = np.array(items, dtype=float).reshape(len(items), len(query))
    relevance = [float(v) for v in range(len(items))][::-1]  # distinct, then ties below
    # lambda=1: the relevance order, ties to the lower index (the definition's order)
    assert maximal_marginal_relevance(query, matrix, lambda_=1.0) == reference_mmr(
        query, items, 1.0
    )
    ties = [r // 3 for r in relevance]
    expected = sorted(range(len(items)), key=lambda i: -ties[i])
    assert maximal_marginal_relevance(query, matrix, lambda_=1.0, relevance=ties) == expected


@settings(max_examples=150, deadline=None)
@given(vectors, st.sampled_from([0.0, 0.3, 0.5, 0.7, 1.0]), st.integers(1, 12))
def test_agrees_with_the_plain_python_definition(
    case: tuple[list[int], list[list[int]]], lambda_: float, max_results: int
) -> None:
    query, items = case
    # integer relevance keeps ties exact in both implementations
    relevance = [float((7 * i) % 5) for i in range(len(items))]
    matrix = np.array(items, dtype=float).reshape(len(items), len(query))
    got = maximal_marginal_relevance(
        query, matrix, lambda_=lambda_, max_results=max_results, relevance=relevance
    )
    assert len(got) == len(set(got)) == min(max_results, len(items))
    if lambda_ in (0.0, 1.0) or _far_from_ties(query, items, lambda_, relevance):
        assert got == reference_mmr(query, items, lambda_, max_results, relevance)


def _units(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


def _far_from_ties(
    query: list[int], items: list[list[int]], lambda_: float, relevance: list[float]
) -> bool:
    """No two marginal values at any step are within float noise of each other."""
    chosen = reference_mmr(query, items, lambda_, None, relevance)
    units = _units(np.array(items, dtype=float).reshape(len(items), len(query)))
    for step in range(len(chosen)):
        left = [i for i in range(len(items)) if i not in chosen[:step]]
        values = sorted(
            lambda_ * relevance[i]
            - (1 - lambda_) * max((float(units[i] @ units[j]) for j in chosen[:step]), default=0.0)
            for i in left
        )
        if any(b - a < 1e-9 for a, b in itertools.pairwise(values)):
            return False
    return True


# --- the aggregator step ----------------------------------------------------------------

DOCS = [
    "bread oven temperature guide",
    "the bread oven temperature guide again",  # a near-duplicate chunk (cosine .80)
    "sourdough bread starter feeding",
    "chess openings",
]


def contents(*texts: str) -> list[Content]:
    return [Content.from_text(text) for text in texts]


def test_aggregator_demotes_the_duplicate() -> None:
    query = Query("bread oven temperature")
    model = FakeEmbeddingModel(64)
    plain = MmrContentAggregator(model, lambda_=1.0).aggregate({query: [contents(*DOCS)]})
    assert [c.text for c in plain][:2] == [DOCS[0], DOCS[1]]
    diverse = MmrContentAggregator(model, lambda_=0.5, max_results=2).aggregate(
        {query: [contents(*DOCS)]}
    )
    # cosines with the query .845 .674 .169 0; the near-duplicate's marginal
    # .5 * .674 - .5 * .798 < 0 loses to the sourdough chunk's .5 * .169 - .5 * .143 > 0.
    assert [c.text for c in diverse] == [DOCS[0], DOCS[2]]


def test_aggregator_after_reranking_uses_the_reranked_scores() -> None:
    query = Query("sourdough starter")
    reranker = ReRankingContentAggregator(FakeScoringModel())
    step = MmrContentAggregator(
        FakeEmbeddingModel(64), lambda_=1.0, aggregator=reranker, relevance="reranked"
    )
    found = step.aggregate({query: [contents(*DOCS)]})
    assert found[0].text == DOCS[2]
    assert found[0].metadata[RERANKED_SCORE] == 1.0


def test_aggregator_needs_a_selector_for_several_queries() -> None:
    step = MmrContentAggregator(FakeEmbeddingModel(16))
    both = {Query("a"): [contents("x")], Query("b"): [contents("y")]}
    with pytest.raises(RetrievalError, match="2 queries"):
        step.aggregate(both)
    chosen = MmrContentAggregator(
        FakeEmbeddingModel(16), query_selector=lambda q2c: next(iter(q2c))
    ).aggregate(both)
    assert sorted(c.text for c in chosen) == ["x", "y"]
    assert step.aggregate({}) == []
    assert step.aggregate({Query("a"): [[]]}) == []


def test_reranked_relevance_without_scores_is_an_error() -> None:
    step = MmrContentAggregator(FakeEmbeddingModel(16), relevance="reranked")
    with pytest.raises(RetrievalError, match="needs metadata\\['reranked_score'\\]"):
        step.aggregate({Query("a"): [contents("x")]})
    with pytest.raises(InvalidArgumentError, match="relevance must be"):
        MmrContentAggregator(FakeEmbeddingModel(16), relevance="bm25")  # type: ignore[arg-type]
