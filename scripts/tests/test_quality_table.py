"""The quality table's own fusion and re-ranking (scripts/bench/quality_table.py): z-score
fusion, the bi-encoder scoring model and the re-ranking of a retriever's first results."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import numpy as np
import pytest

from ragloom.core.content import Content
from ragloom.core.document import TextSegment
from ragloom.core.query import Query
from ragloom.core.retrievers.embedding_store import EmbeddingStoreContentRetriever
from ragloom.core.stores.in_memory import InMemoryEmbeddingStore
from ragloom.embeddings.onnx import AllMiniLmL6V2QuantizedEmbeddingModel


@pytest.fixture(scope="module")
def table(bench_module: Callable[[str], ModuleType]) -> ModuleType:
    return bench_module("quality_table")


@pytest.fixture(scope="module")
def model() -> AllMiniLmL6V2QuantizedEmbeddingModel:
    return AllMiniLmL6V2QuantizedEmbeddingModel()


def _listed(*pairs: tuple[str, float]) -> list[Content]:
    return [Content(TextSegment(text), {"score": score}) for text, score in pairs]


def test_z_scores_add_up_across_lists_and_absent_counts_zero(table: ModuleType) -> None:
    dense = _listed(("a", 0.9), ("b", 0.5), ("c", 0.1))
    keyword = _listed(("c", 30.0), ("d", 20.0), ("b", 10.0))

    fused = table.fuse_z_scores([dense, keyword], (0.5, 0.5))

    # each list's z-scores shifted to end at 0: dense a, b, c = 2.45, 1.22, 0;
    # keyword c, d, b = 2.45, 1.22, 0 (both lists are evenly spaced)
    top = 0.5 * np.sqrt(6)
    expected = {"a": top, "b": top / 2, "c": top, "d": top / 2}
    assert {c.text: c.score for c in fused} == pytest.approx(expected)
    assert [c.text for c in fused] == ["a", "c", "b", "d"]  # ties keep the first seen


def test_z_scores_keep_a_list_naming_one_text_twice_once(table: ModuleType) -> None:
    twice = _listed(("a", 3.0), ("a", 2.0), ("b", 1.0))

    fused = table.fuse_z_scores([twice], (1.0,))

    assert [c.text for c in fused] == ["a", "b"]
    assert fused[1].score == 0.0


def test_weights_scale_each_list(table: ModuleType) -> None:
    dense = _listed(("a", 1.0), ("b", 0.0))
    keyword = _listed(("b", 1.0), ("a", 0.0))

    assert [c.text for c in table.fuse_z_scores([dense, keyword], (0.6, 0.4))] == ["a", "b"]
    assert [c.text for c in table.fuse_z_scores([dense, keyword], (0.4, 0.6))] == ["b", "a"]


def test_cosine_scores_are_the_embeddings_cosines(
    table: ModuleType, model: AllMiniLmL6V2QuantizedEmbeddingModel
) -> None:
    texts = ["The cat sat on the mat.", "Interest rates rose again this quarter."]

    scores = table.CosineScoringModel(model).score_all(texts, "a cat on a mat").scores

    query = np.asarray(model.embed("a cat on a mat").embedding.vector)
    for text, score in zip(texts, scores, strict=True):
        vector = np.asarray(model.embed(text).embedding.vector)
        cosine = vector @ query / (np.linalg.norm(vector) * np.linalg.norm(query))
        assert score == pytest.approx(float(cosine), abs=1e-5)
    assert scores[0] > scores[1] + 0.2


def test_re_ranked_reorders_only_the_first_results(
    table: ModuleType, model: AllMiniLmL6V2QuantizedEmbeddingModel
) -> None:
    texts = ["stock prices fell", "bond yields rose", "my cat sleeps on the mat", "dog"]
    segments = [TextSegment(t) for t in texts]
    store = InMemoryEmbeddingStore()
    store.add_all(model.embed_all(segments).embeddings, segments)
    retriever = EmbeddingStoreContentRetriever(store, model, max_results=4)
    query = Query("where does the cat sleep")
    found = [c.text for c in retriever.retrieve(query)]

    class Reversed:
        """Scores against the retriever's order: the last of the first two comes first."""

        def score_all(self, segs: list[TextSegment], q: str) -> object:
            return table.ScoringResult([float(found.index(s.text)) for s in segs])

    reranked = table.ReRanked(retriever, Reversed(), 2).retrieve(query)

    assert [c.text for c in reranked] == [found[1], found[0], found[2], found[3]]
