"""Weighted BM25 queries and RM3 pseudo-relevance feedback."""

from __future__ import annotations

import pytest

from ragloom.core import Query
from ragloom.core.bm25 import RM3, BM25Index, StandardAnalyzer
from ragloom.core.errors import BM25IndexError
from ragloom.core.retrievers.bm25 import BM25ContentRetriever

TEXTS = {
    "a": "cats purr and cats nap",
    "b": "cats chase mice",
    "c": "kittens purr softly",
    "d": "stock markets fell",
}


def index() -> BM25Index:
    built = BM25Index(StandardAnalyzer(stemmer=None))
    built.add_all(list(TEXTS.values()), ids=list(TEXTS))
    return built


def scores(matches: list) -> dict[str, float]:  # type: ignore[type-arg]
    return {m.id: m.score for m in matches}


def test_weighted_query_scales_each_terms_contribution() -> None:
    built = index()
    cats, purr = scores(built.search("cats")), scores(built.search("purr"))
    weighted = scores(built.search({"cats": 2.0, "purr": 0.5, "unknown": 1.0}))
    for id in TEXTS:
        expected = 2.0 * cats.get(id, 0.0) + 0.5 * purr.get(id, 0.0)
        assert weighted.get(id, 0.0) == pytest.approx(expected)
    assert scores(built.search({"cats": 1.0})) == pytest.approx(cats)
    assert built.search({"unknown": 1.0}) == []
    for bad in ({"cats": 0.0}, {"cats": float("nan")}, {"cats": True}, {3: 1.0}):
        with pytest.raises(BM25IndexError):
            built.search(bad)  # type: ignore[arg-type]
    with pytest.raises(BM25IndexError, match="mapping"):
        built.search(["cats"])  # type: ignore[arg-type]


def test_rm3_weights_by_hand() -> None:
    built = index()
    first = built.search("purr")  # a and c hold "purr"
    (a, c) = sorted(first, key=lambda m: m.id)
    expanded = RM3(documents=2, terms=3, original_weight=0.5).expand(built, "purr", first)
    share_a, share_c = a.score / (a.score + c.score), c.score / (a.score + c.score)
    # term share per segment: a = cats 2/4, purr 1/4, nap 1/4; c = kittens, purr, softly 1/3
    model = {
        "cats": share_a * 2 / 4,
        "purr": share_a / 4 + share_c / 3,
        "nap": share_a / 4,
        "kittens": share_c / 3,
        "softly": share_c / 3,
    }
    top = sorted(model, key=lambda t: -model[t])[:3]
    mass = sum(model[t] for t in top)
    expected = {t: 0.5 * model[t] / mass for t in top}
    expected["purr"] = expected.get("purr", 0.0) + 0.5
    assert expanded == pytest.approx(expected)
    assert sum(expanded.values()) == pytest.approx(1.0)
    assert RM3().expand(built, "the", first) == {}  # no index term in the query


def test_retriever_with_rm3_finds_documents_through_feedback_words() -> None:
    built = index()
    plain = BM25ContentRetriever(built, max_results=4)
    expanded = BM25ContentRetriever(built, max_results=4, expansion=RM3(documents=2))
    assert [c.metadata["segment_id"] for c in plain.retrieve(Query("purr"))] == ["c", "a"]
    found = [c.metadata["segment_id"] for c in expanded.retrieve(Query("purr"))]
    assert set(found[:2]) == {"a", "c"}
    assert "b" in found  # shares "cats" with a feedback segment, not the query word
    assert "d" not in found
    assert expanded.retrieve(Query("the")) == []
    retriever = BM25ContentRetriever.from_documents([], expansion=RM3())
    assert retriever.expansion == RM3()


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"documents": 0}, "documents"),
        ({"terms": 1.5}, "terms"),
        ({"original_weight": 0}, "original_weight"),
        ({"original_weight": 2}, "original_weight"),
    ],
)
def test_rm3_settings_are_checked(kwargs: dict[str, object], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        RM3(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="RM3"):
        BM25ContentRetriever(index(), expansion="rm3")  # type: ignore[arg-type]
