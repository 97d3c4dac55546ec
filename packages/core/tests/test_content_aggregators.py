"""Reciprocal rank fusion, DefaultContentAggregator and ReRankingContentAggregator."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from ragloom.core import (
    RERANKED_SCORE,
    Content,
    ContentAggregator,
    DefaultContentAggregator,
    PluginError,
    Query,
    ReRankingContentAggregator,
    RetrievalError,
    ScoringModel,
    ScoringResult,
    TextSegment,
    reciprocal_rank_fusion,
)
from ragloom.core.content import SCORE
from ragloom.testkit import FakeScoringModel


def contents(*texts: str) -> list[Content]:
    return [Content.from_text(text) for text in texts]


def texts(found: Sequence[Content]) -> list[str]:
    return [content.text for content in found]


# --- reciprocal rank fusion -------------------------------------------------------------


def test_rrf_orders_by_the_sum_of_reciprocal_ranks() -> None:
    # A: 1/61; B: 1/62 + 1/61; C: 1/63; D: 1/62.
    fused = reciprocal_rank_fusion([contents("A", "B", "C"), contents("B", "D")])
    assert texts(fused) == ["B", "A", "D", "C"]


def test_rrf_k_changes_the_balance_between_ranks() -> None:
    lists = [contents("A", "B", "C", "D"), contents("D", "C")]
    # k=60: D 1/64+1/61 > C 1/63+1/62 > A 1/61 > B 1/62.  k=0: D 5/4 > A 1 > C 5/6 > B 1/2.
    assert texts(reciprocal_rank_fusion(lists)) == ["D", "C", "A", "B"]
    assert texts(reciprocal_rank_fusion(lists, k=0)) == ["D", "A", "C", "B"]


def test_rrf_ties_keep_first_appearance_order() -> None:
    assert texts(reciprocal_rank_fusion([contents("A", "B"), contents("C", "D")])) == [
        "A",
        "C",
        "B",
        "D",
    ]


def test_rrf_merges_one_segment_keeping_the_first_content() -> None:
    first = Content(TextSegment("same", {"source": "a.txt"}), {SCORE: 0.9})
    again = Content(TextSegment("same", {"source": "a.txt"}), {SCORE: 0.4})
    fused = reciprocal_rank_fusion([[first], [Content.from_text("other"), again]])
    assert texts(fused) == ["same", "other"]
    assert fused[0] is first


def test_rrf_keeps_equal_texts_of_different_sources_apart() -> None:
    first = Content(TextSegment("same", {"source": "a.txt"}), {SCORE: 0.9})
    second = Content(TextSegment("same", {"source": "b.txt"}), {SCORE: 0.4})
    fused = reciprocal_rank_fusion([[first], [Content.from_text("other"), second]])
    assert [c.text_segment.metadata.get("source") for c in fused] == ["a.txt", None, "b.txt"]


def test_rrf_counts_a_text_repeated_in_one_list_once() -> None:
    fused = reciprocal_rank_fusion([contents("A", "A", "A"), contents("B")])
    assert texts(fused) == ["A", "B"]  # tie at 1/61, not 3 contributions for A


def test_rrf_of_nothing_and_bad_k() -> None:
    assert reciprocal_rank_fusion([]) == []
    assert reciprocal_rank_fusion([[], []]) == []
    with pytest.raises(ValueError, match="k must be a non-negative int"):
        reciprocal_rank_fusion([], k=-1)


# --- default aggregator -----------------------------------------------------------------


def test_default_aggregator_fuses_per_query_first() -> None:
    q1, q2, q3 = Query("one"), Query("two"), Query("three")
    query_to_contents = {
        q1: [contents("X"), contents("X"), contents("X")],  # routed to three retrievers
        q2: [contents("Y")],
        q3: [contents("Y")],
    }
    aggregator = DefaultContentAggregator()
    assert isinstance(aggregator, ContentAggregator)
    # One-stage fusion would rank X (3/61) above Y (2/61); per query, X counts once.
    assert texts(
        reciprocal_rank_fusion([c for lists in query_to_contents.values() for c in lists])
    ) == [
        "X",
        "Y",
    ]
    assert texts(aggregator.aggregate(query_to_contents)) == ["Y", "X"]


def test_default_aggregator_single_list_is_unchanged_and_empty_is_empty() -> None:
    found = contents("c1", "c2", "c3")
    assert DefaultContentAggregator().aggregate({Query("q"): [found]}) == found
    assert DefaultContentAggregator().aggregate({}) == []
    assert DefaultContentAggregator().aggregate({Query("q"): []}) == []


# --- re-ranking -------------------------------------------------------------------------

BREAD = "Knead the bread dough and let the yeast rise."
SAIL = "The sailboat tacked upwind."
OVEN = "Bake the bread in a hot oven."


def test_reranking_scores_against_the_query_and_records_the_score() -> None:
    scorer = FakeScoringModel()
    first = Content(TextSegment(SAIL), {SCORE: 0.95})
    found = {Query("how does yeast make bread rise"): [[first, *contents(OVEN, BREAD)]]}
    reranked = ReRankingContentAggregator(scorer).aggregate(found)
    # Query words: how, does, yeast, make, bread, rise -> BREAD 3/6, OVEN 1/6, SAIL 0.
    assert texts(reranked) == [BREAD, OVEN, SAIL]
    assert [c.metadata[RERANKED_SCORE] for c in reranked] == [0.5, 1 / 6, 0.0]
    assert reranked[2].metadata[SCORE] == 0.95  # the retriever's own score is kept
    assert scorer.calls == [("how does yeast make bread rise", [SAIL, OVEN, BREAD])]


def test_reranking_min_score_and_max_results() -> None:
    found = {Query("yeast bread rise"): [contents(SAIL, OVEN, BREAD)]}
    kept = ReRankingContentAggregator(FakeScoringModel(), min_score=0.3).aggregate(found)
    assert texts(kept) == [BREAD, OVEN]  # 1.0 and 1/3; the sailboat scores 0
    top = ReRankingContentAggregator(FakeScoringModel(), max_results=1).aggregate(found)
    assert texts(top) == [BREAD]


def test_reranking_several_queries_needs_a_query_selector() -> None:
    found = {Query("bread"): [contents(BREAD)], Query("sailboat"): [contents(SAIL)]}
    with pytest.raises(RetrievalError, match="got 2 queries.*query_selector"):
        ReRankingContentAggregator(FakeScoringModel()).aggregate(found)
    scorer = FakeScoringModel()
    aggregator = ReRankingContentAggregator(
        scorer, query_selector=lambda query_to_contents: list(query_to_contents)[1]
    )
    assert texts(aggregator.aggregate(found)) == [SAIL, BREAD]
    assert scorer.calls[0][0] == "sailboat"


def test_reranking_nothing_does_not_call_the_model() -> None:
    scorer = FakeScoringModel()
    assert ReRankingContentAggregator(scorer).aggregate({}) == []
    assert ReRankingContentAggregator(scorer).aggregate({Query("q"): [[], []]}) == []
    assert scorer.calls == []


class BrokenScorer(ScoringModel):
    def __init__(self, scores: list[float]) -> None:
        self.scores = scores

    def score_all(self, segments: Sequence[str | TextSegment], query: str) -> ScoringResult:
        return ScoringResult(self.scores)


@pytest.mark.parametrize(
    ("scores", "message"),
    [([0.5], "returned 1 scores for 2 contents"), ([0.5, math.nan], "non-finite")],
)
def test_reranking_rejects_a_broken_scoring_model(scores: list[float], message: str) -> None:
    with pytest.raises(RetrievalError, match=message):
        ReRankingContentAggregator(BrokenScorer(scores)).aggregate(
            {Query("q"): [contents("a", "b")]}
        )


def test_reranking_settings_are_validated_and_the_model_defaults_to_the_plugin() -> None:
    with pytest.raises(ValueError, match="max_results must be a positive int"):
        ReRankingContentAggregator(FakeScoringModel(), max_results=0)
    with pytest.raises(TypeError, match="min_score must be a number"):
        ReRankingContentAggregator(FakeScoringModel(), min_score="0.5")  # type: ignore[arg-type]
    with pytest.raises(PluginError, match="ragloom.scoring_models"):
        ReRankingContentAggregator()


def test_scoring_model_score_uses_score_all() -> None:
    assert FakeScoringModel().score("yeast bread", "bread") == 1.0
    with pytest.raises(RetrievalError, match="returned 2 scores for 1 segment"):
        BrokenScorer([1.0, 2.0]).score("x", "q")
