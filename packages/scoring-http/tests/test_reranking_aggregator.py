"""ReRankingContentAggregator end to end: retrieved contents re-ranked by HttpScoringModel
on the local TEI and vLLM-style servers, with min_score, max_results, a query selector for
several queries, RERANKED_SCORE in the metadata, and MMR as a further step."""

from __future__ import annotations

import math

import pytest

from ragloom.core import (
    RERANKED_SCORE,
    EmbeddingStoreContentRetriever,
    InMemoryEmbeddingStore,
    Query,
    ReRankingContentAggregator,
    RetrievalError,
    TextSegment,
)
from ragloom.core.content import SCORE
from ragloom.core.mmr import MmrContentAggregator
from ragloom.scoring_models.http import HttpScoringModel
from ragloom.scoring_models.http.testing import logit
from ragloom.testkit import FakeEmbeddingModel
from ragloom.testkit.wire import WireServer

DOCS = [
    "The oven must be preheated to 220 degrees for bread.",
    "Bread dough rises best in a warm kitchen.",
    "Chess engines evaluate millions of positions.",
    "A pizza oven reaches 450 degrees.",
    "Sourdough bread needs a starter.",
]


@pytest.fixture
def retriever() -> EmbeddingStoreContentRetriever:
    model = FakeEmbeddingModel(64)
    store = InMemoryEmbeddingStore()
    segments = [TextSegment(text) for text in DOCS]
    store.add_all(model.embed_all(segments).embeddings, segments)
    return EmbeddingStoreContentRetriever(store, model, max_results=5, min_score=0.0)


def test_single_query_reranked_with_scores_in_metadata(
    tei: WireServer, retriever: EmbeddingStoreContentRetriever
) -> None:
    query = Query("oven degrees bread")
    retrieved = retriever.retrieve(query)
    with HttpScoringModel(tei.url, raw_scores=True) as model:
        found = ReRankingContentAggregator(model).aggregate({query: [retrieved]})
    # the fake cross-encoder scores the share of query words: 1, 2/3, 1/3, 1/3, 0
    assert [c.text for c in found][:2] == [DOCS[0], DOCS[3]]
    scores = [c.metadata[RERANKED_SCORE] for c in found]
    assert scores == sorted(scores, reverse=True)
    assert all(math.isfinite(s) for s in scores)
    assert scores == pytest.approx([logit(s) for s in (1, 2 / 3, 1 / 3, 1 / 3, 0)])
    assert all(SCORE in c.metadata for c in found)  # the retriever's score is kept
    assert len(found) == len(retrieved) == 5
    (body,) = tei.bodies()
    assert body["query"] == "oven degrees bread"


def test_min_score_and_max_results(
    tei: WireServer, retriever: EmbeddingStoreContentRetriever
) -> None:
    query = Query("oven degrees bread")
    with HttpScoringModel(tei.url, raw_scores=True) as model:
        kept = ReRankingContentAggregator(model, min_score=logit(1 / 3)).aggregate(
            {query: [retriever.retrieve(query)]}
        )
        assert kept
        assert all(c.metadata[RERANKED_SCORE] >= logit(1 / 3) for c in kept)
        assert DOCS[2] not in [c.text for c in kept]  # chess scores logit(0)
        top = ReRankingContentAggregator(model, max_results=2).aggregate(
            {query: [retriever.retrieve(query)]}
        )
        assert len(top) == 2


def test_several_queries_need_and_use_the_selector(
    jina: WireServer, retriever: EmbeddingStoreContentRetriever
) -> None:
    original, expanded = Query("sourdough starter"), Query("pizza oven heat")
    q2c = {original: [retriever.retrieve(original)], expanded: [retriever.retrieve(expanded)]}
    with HttpScoringModel(jina.url + "/v1", api="jina") as model:
        with pytest.raises(RetrievalError, match="2 queries"):
            ReRankingContentAggregator(model).aggregate(q2c)
        found = ReRankingContentAggregator(
            model, query_selector=lambda contents: next(iter(contents))
        ).aggregate(q2c)
    assert found[0].text == DOCS[4]
    assert found[0].metadata[RERANKED_SCORE] == pytest.approx(1.0)
    assert {b["query"] for b in jina.bodies()} == {"sourdough starter"}
    assert len({c.text for c in found}) == len(found)  # fused once, no duplicates


def test_reranking_then_mmr(jina: WireServer, retriever: EmbeddingStoreContentRetriever) -> None:
    query = Query("oven degrees")
    with HttpScoringModel(jina.url + "/v1", api="jina") as model:
        step = MmrContentAggregator(
            FakeEmbeddingModel(64),
            lambda_=1.0,
            aggregator=ReRankingContentAggregator(model),
            relevance="reranked",
            max_results=3,
        )
        found = step.aggregate({query: [retriever.retrieve(query)]})
    scores = [c.metadata[RERANKED_SCORE] for c in found]
    assert scores == sorted(scores, reverse=True)  # lambda 1: the re-ranked order
    assert len(found) == 3
