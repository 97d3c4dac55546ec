"""HybridContentRetriever: RRF and weighted fusion, component metadata, the retriever suite."""

from __future__ import annotations

import pytest

from ragloom.core import (
    Content,
    Document,
    EmbeddingStoreContentRetriever,
    EmbeddingStoreIngestor,
    InMemoryEmbeddingStore,
    Query,
    TextSegment,
    document_splitters,
)
from ragloom.core.fusion import fuse_reciprocal_ranks, fuse_weighted_scores
from ragloom.core.retrievers.bm25 import SEGMENT_ID, BM25ContentRetriever
from ragloom.core.retrievers.hybrid import (
    DENSE_RANK,
    DENSE_SCORE,
    KEYWORD_RANK,
    KEYWORD_SCORE,
    HybridContentRetriever,
)
from ragloom.testkit import ContentRetrieverSuite, FakeEmbeddingModel


class Fixed:
    """A ContentRetriever returning a fixed list of (text, score) pairs."""

    def __init__(self, items: list[tuple[str, float | None]], key: str = "id") -> None:
        self.contents = [
            Content(TextSegment(text), {} if score is None else {"score": score, key: text})
            for text, score in items
        ]

    def retrieve(self, query: Query) -> list[Content]:
        return list(self.contents)


def texts_and_scores(contents: list[Content]) -> list[tuple[str, float]]:
    return [(c.text, round(c.score or 0.0, 12)) for c in contents]


def test_reciprocal_rank_fusion() -> None:
    dense = Fixed([("a", 0.9), ("b", 0.8), ("c", 0.7)])
    keyword = Fixed([("c", 12.0), ("d", 7.0), ("a", 1.0)])
    fused = HybridContentRetriever(dense, keyword).retrieve(Query("q"))
    expected = {
        "a": 1 / 61 + 1 / 63,
        "b": 1 / 62,
        "c": 1 / 63 + 1 / 61,
        "d": 1 / 62,
    }
    # a and c tie exactly, as do b and d: first appearance (dense list first) wins
    assert texts_and_scores(fused) == [(t, round(expected[t], 12)) for t in ["a", "c", "b", "d"]]
    a = fused[0].metadata
    assert (a[DENSE_SCORE], a[DENSE_RANK], a[KEYWORD_SCORE], a[KEYWORD_RANK]) == (0.9, 1, 1.0, 3)
    b = fused[2].metadata
    assert DENSE_RANK in b
    assert KEYWORD_SCORE not in b
    assert KEYWORD_RANK not in b
    weighted = HybridContentRetriever(dense, keyword, weights=(2.0, 1.0), k=0, max_results=2)
    assert texts_and_scores(weighted.retrieve(Query("q"))) == [
        ("a", round(2 + 1 / 3, 12)),
        ("c", round(1 + 2 / 3, 12)),
    ]


def test_unweighted_order_matches_the_aggregators_rrf() -> None:
    from ragloom.core.fusion import reciprocal_rank_fusion

    lists = [
        Fixed([("a", 1.0), ("b", 0.9), ("c", 0.8), ("a", 0.1)]).contents,
        Fixed([("c", 5.0), ("d", 4.0), ("b", 3.0), ("e", 2.0)]).contents,
    ]
    ours = [content.text for content, _ in fuse_reciprocal_ranks(lists, [1.0, 1.0])]
    assert ours == [content.text for content in reciprocal_rank_fusion(lists)]


def test_weighted_fusion_normalizes_each_list() -> None:
    dense = Fixed([("a", 1.0), ("b", 0.75), ("c", 0.5)])
    keyword = Fixed([("c", 20.0), ("d", 10.0), ("a", 0.0)])
    fused = HybridContentRetriever(dense, keyword, fusion="weighted").retrieve(Query("q"))
    expected = {"a": 0.5 * 1 + 0.5 * 0, "b": 0.5 * 0.5, "c": 0.5 * 0 + 0.5 * 1, "d": 0.5 * 0.5}
    assert texts_and_scores(fused) == [(t, round(expected[t], 12)) for t in ["a", "c", "b", "d"]]
    # a single result, equal scores and missing scores
    assert fuse_weighted_scores([Fixed([("x", 3.0)]).contents], [1.0])[0][1] == 1.0
    equal = fuse_weighted_scores([Fixed([("x", 2.0), ("y", 2.0)]).contents], [1.0])
    assert [score for _, score in equal] == [1.0, 1.0]
    unscored = fuse_weighted_scores([Fixed([("x", None), ("y", None)]).contents], [1.0])
    assert [score for _, score in unscored] == [1.0, 0.5]


def test_one_segment_is_one_content_across_legs() -> None:
    # the dense leg's segment carries the ingestor's bookkeeping, the keyword leg's not
    one = Content(
        TextSegment("same", {"k": 1, "document_id": "d", "document_version": "v"}),
        {"score": 0.5, "embedding_id": "e1"},
    )
    also_one = Content(TextSegment("same", {"k": 1}), {"score": 2.0, SEGMENT_ID: "s1"})
    other = Content(TextSegment("other"), {"score": 3.0, SEGMENT_ID: "s2"})
    fused = fuse_reciprocal_ranks([[one], [other, also_one, also_one]], [1.0, 1.0])
    assert [(c.text, round(s, 12)) for c, s in fused] == [
        ("same", round(1 / 61 + 1 / 62, 12)),  # a repeated content counts once, best rank
        ("other", round(1 / 61, 12)),
    ]
    hybrid = HybridContentRetriever(Fixed([]), Fixed([]))
    hybrid.dense.contents = [one]  # type: ignore[attr-defined]
    hybrid.keyword.contents = [also_one, also_one]  # type: ignore[attr-defined]
    [content] = hybrid.retrieve(Query("q"))
    assert content.text_segment.metadata["document_id"] == "d"  # the dense side's segment
    assert content.metadata["embedding_id"] == "e1"
    assert content.metadata[SEGMENT_ID] == "s1"
    assert content.metadata[KEYWORD_RANK] == 1


def test_distinct_sources_with_equal_texts_stay_distinct() -> None:
    first = Content(TextSegment("boilerplate", {"doc": "a"}), {"embedding_id": "e1"})
    second = Content(TextSegment("boilerplate", {"doc": "b"}), {"embedding_id": "e2"})
    typed = Content(TextSegment("boilerplate", {"doc": 1}))
    also_typed = Content(TextSegment("boilerplate", {"doc": True}))  # 1 == True, not the same
    fused = fuse_reciprocal_ranks([[first, second, typed, also_typed], [second]], [1.0, 1.0])
    assert [(c.text_segment.metadata["doc"], round(s, 12)) for c, s in fused] == [
        ("b", round(1 / 62 + 1 / 61, 12)),
        ("a", round(1 / 61, 12)),
        (1, round(1 / 63, 12)),
        (True, round(1 / 64, 12)),
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fusion": "max"}, "fusion"),
        ({"k": -1}, "k must"),
        ({"weights": (1.0,)}, "weights"),
        ({"weights": (1.0, -2.0)}, "weights"),
        ({"max_results": 0}, "max_results"),
    ],
)
def test_bad_settings(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        HybridContentRetriever(Fixed([]), Fixed([]), **kwargs)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="keyword"):
        HybridContentRetriever(Fixed([]), object())  # type: ignore[arg-type]


def test_finds_what_only_one_side_finds() -> None:
    documents = [
        Document("Error E4012 means the fuser overheated.", {"doc": "code"}),
        Document("The printer stops when its heating unit gets too hot.", {"doc": "prose"}),
        Document("Replace the toner cartridge every 5000 pages.", {"doc": "toner"}),
    ]
    store = InMemoryEmbeddingStore()
    model = FakeEmbeddingModel(256)
    EmbeddingStoreIngestor(
        store, model, document_splitter=document_splitters.recursive(500)
    ).ingest(documents)
    dense = EmbeddingStoreContentRetriever(store, model, max_results=3)
    keyword = BM25ContentRetriever.from_documents(documents, max_results=3)
    hybrid = HybridContentRetriever(dense, keyword)
    contents = hybrid.retrieve(Query("what is E4012"))
    assert contents[0].text_segment.metadata["doc"] == "code"
    assert contents[0].metadata[KEYWORD_RANK] == 1
    assert "embedding_id" in contents[0].metadata


class TestHybridContentRetriever(ContentRetrieverSuite):
    @pytest.fixture
    def retriever(self, corpus: list[Document]) -> HybridContentRetriever:
        store = InMemoryEmbeddingStore()
        model = FakeEmbeddingModel(256)
        EmbeddingStoreIngestor(
            store, model, document_splitter=document_splitters.recursive(500)
        ).ingest(corpus)
        dense = EmbeddingStoreContentRetriever(store, model, max_results=5)
        keyword = BM25ContentRetriever.from_documents(
            corpus, document_splitter=document_splitters.recursive(500), max_results=5
        )
        return HybridContentRetriever(dense, keyword)


class TestWeightedHybridContentRetriever(ContentRetrieverSuite):
    @pytest.fixture
    def retriever(self, corpus: list[Document]) -> HybridContentRetriever:
        store = InMemoryEmbeddingStore()
        model = FakeEmbeddingModel(256)
        EmbeddingStoreIngestor(
            store, model, document_splitter=document_splitters.recursive(500)
        ).ingest(corpus)
        dense = EmbeddingStoreContentRetriever(store, model, max_results=5)
        keyword = BM25ContentRetriever.from_documents(
            corpus, document_splitter=document_splitters.recursive(500), max_results=5
        )
        return HybridContentRetriever(dense, keyword, fusion="weighted", max_results=3)


class Segments:
    """A ContentRetriever returning fixed segments of named documents, with scores."""

    def __init__(self, items: list[tuple[str, str | None, float]]) -> None:
        self.contents = [
            Content(TextSegment(text, {} if doc is None else {"doc": doc}), {"score": score})
            for text, doc, score in items
        ]

    def retrieve(self, query: Query) -> list[Content]:
        return list(self.contents)


@pytest.mark.parametrize("fusion", ["rrf", "weighted"])
def test_group_by_fuses_documents_by_their_best_segment(fusion: str) -> None:
    # Document X is found through its first segment by dense and its second by keyword.
    dense = Segments([("x1", "X", 0.9), ("y1", "Y", 0.8), ("x2", "X", 0.7), ("z", None, 0.1)])
    keyword = Segments([("x2", "X", 9.0), ("y2", "Y", 3.0), ("w", "W", 1.0)])
    apart = HybridContentRetriever(dense, keyword, fusion=fusion).retrieve(Query("q"))  # type: ignore[arg-type]
    assert [c.text for c in apart][:2] == ["x2", "x1"]  # segment x2 is in both lists
    grouped = HybridContentRetriever(dense, keyword, fusion=fusion, group_by="doc")  # type: ignore[arg-type]
    fused = grouped.retrieve(Query("q"))
    # one content per document (its best segment, dense list first); "z" has no document
    assert [c.text for c in fused] == ["x1", "y1", "z", "w"]  # z, w tie: dense first
    x = fused[0].metadata
    assert (x[DENSE_RANK], x[KEYWORD_RANK]) == (1, 1)  # ranks among documents
    assert (x[DENSE_SCORE], x[KEYWORD_SCORE]) == (0.9, 9.0)  # each leg's best segment
    if fusion == "weighted":
        assert fused[0].score == pytest.approx(1.0)  # first in both lists
        assert fused[1].score == pytest.approx(0.5 * 0.875 + 0.5 * 0.25)
    else:
        assert fused[0].score == pytest.approx(2 / 61)
    with pytest.raises(ValueError, match="group_by"):
        HybridContentRetriever(dense, keyword, group_by="")
