"""BM25Index: scores equal reference implementations, incremental updates, filters, analyzers."""

from __future__ import annotations

import random
import threading

import bm25s
import numpy as np
import pytest
from rank_bm25 import BM25Okapi, BM25Plus

from ragloom.core import Document, Query, TextSegment, metadata_key
from ragloom.core.bm25 import (
    ENGLISH_STOPWORDS,
    LUCENE_STOPWORDS,
    Analyzer,
    BM25Index,
    BM25IndexError,
    BM25Parameters,
    StandardAnalyzer,
    analyze,
    snowball_stemmer,
)
from ragloom.core.retrievers.bm25 import SEGMENT_ID, BM25ContentRetriever
from ragloom.testkit import ContentRetrieverSuite

WORDS = [f"w{i}" for i in range(40)]


def make_corpus(count: int, seed: int = 0) -> list[str]:
    """Texts over a small Zipf-like vocabulary, so that some terms occur in most texts
    (negative Robertson idf) and term frequencies above 1 are common."""
    rng = random.Random(seed)
    weights = [1 / (rank + 1) for rank in range(len(WORDS))]
    return [" ".join(rng.choices(WORDS, weights, k=rng.randint(1, 30))) for _ in range(count)]


QUERIES = ["w0", "w1 w7", "w3 w3 w12", "w39 w38 w5 w0", "w20 unknown w21", "w2 w9 w17 w33 w4"]


def all_scores(index: BM25Index, query: str) -> dict[str, float]:
    return {m.id: m.score for m in index.search(query, max_results=10**6)}


def check_against(index: BM25Index, ids: list[str], texts: list[str], reference) -> None:
    """Every returned score equals the reference's; every text holding a query term is
    returned; texts without one are not."""
    analyzer = index.analyzer
    tokens = [analyze(analyzer, text) for text in texts]
    for query in QUERIES:
        query_terms = analyze(analyzer, query)
        expected = reference(tokens, query_terms)
        got = all_scores(index, query)
        holders = {ids[i] for i, doc in enumerate(tokens) if set(doc) & set(query_terms)}
        assert set(got) == holders, query
        for i, doc_id in enumerate(ids):
            if doc_id in got:
                assert got[doc_id] == pytest.approx(expected[i], abs=1e-6, rel=0), (query, i)


def bm25s_reference(method: str, **params: float):
    def score(tokens: list[list[str]], query: list[str]) -> np.ndarray:
        model = bm25s.BM25(method=method, dtype="float64", **params)
        model.index(tokens, show_progress=False)
        return model.get_scores([t for t in query if t in model.vocab_dict] or ["w0"]) * (
            1 if any(t in model.vocab_dict for t in query) else 0
        )

    return score


def rank_bm25_reference(cls, **params: float):
    def score(tokens: list[list[str]], query: list[str]) -> np.ndarray:
        return np.asarray(cls(tokens, **params).get_scores(query))

    return score


REFERENCES = {
    "lucene": (dict(k1=1.5, b=0.75), bm25s_reference("lucene", k1=1.5, b=0.75)),
    "lucene-k1.2-b0.4": (dict(k1=1.2, b=0.4), bm25s_reference("lucene", k1=1.2, b=0.4)),
    "okapi": (dict(variant="okapi"), rank_bm25_reference(BM25Okapi, k1=1.5, b=0.75)),
    "okapi-eps": (
        dict(variant="okapi", k1=0.9, b=0.3, epsilon=0.5),
        rank_bm25_reference(BM25Okapi, k1=0.9, b=0.3, epsilon=0.5),
    ),
    "bm25+": (dict(variant="bm25+"), rank_bm25_reference(BM25Plus, k1=1.5, b=0.75, delta=1.0)),
    "bm25l": (dict(variant="bm25l"), bm25s_reference("bm25l", k1=1.5, b=0.75, delta=0.5)),
}


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_scores_match_the_reference(name: str) -> None:
    params, reference = REFERENCES[name]
    texts = make_corpus(300)
    index = BM25Index(**params)
    ids = index.add_all(texts)
    check_against(index, ids, texts, reference)


@pytest.mark.parametrize("name", ["lucene", "okapi", "bm25l"])
def test_scores_match_after_incremental_adds_removals_and_replacements(name: str) -> None:
    params, reference = REFERENCES[name]
    texts = make_corpus(400, seed=1)
    index = BM25Index(**params)
    live: dict[str, str] = {}
    rng = random.Random(2)
    position = 0
    for batch_size in [1, 1, 5, 50, 3, 120, 7, 1, 80]:  # many blocks, several merges
        batch = texts[position : position + batch_size]
        batch_ids = [f"d{position + i}" for i in range(len(batch))]
        position += batch_size
        index.add_all(batch, ids=batch_ids)
        live.update(zip(batch_ids, batch, strict=True))
        doomed = rng.sample(sorted(live), k=len(live) // 5)
        index.remove_all(doomed)  # below the compaction threshold at first, above later
        for doc_id in doomed:
            del live[doc_id]
    replaced = sorted(live)[:10]
    for doc_id in replaced:
        live[doc_id] = texts[-1] + " " + live[doc_id]
    index.add_all([live[doc_id] for doc_id in replaced], ids=replaced)
    assert len(index) == len(live)
    ids = sorted(live)
    check_against(index, ids, [live[i] for i in ids], reference)
    index.compact()
    check_against(index, ids, [live[i] for i in ids], reference)


def test_okapi_idf_floor_and_plus_constant() -> None:
    # "w0" is in every text: Robertson idf < 0 is replaced by epsilon * mean idf.
    params = BM25Parameters(variant="okapi")
    idf = params.idf(np.array([10.0, 1.0]), 10, mean_idf=2.0)
    assert idf[0] == pytest.approx(0.25 * 2.0)
    assert idf[1] == pytest.approx(np.log(9.5 / 1.5))
    assert BM25Parameters(variant="bm25+").tfc_absent() == 1.0
    assert BM25Parameters(variant="bm25l").tfc_absent() == pytest.approx(2.5 * 0.5 / 2.0)
    assert BM25Parameters().tfc_absent() == 0.0


@pytest.mark.parametrize(
    "kwargs",
    [dict(k1=-1), dict(b=1.5), dict(variant="tf-idf"), dict(k1=float("nan")), dict(delta=-1)],
)
def test_bad_parameters_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises((ValueError, TypeError)):
        BM25Index(**kwargs)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- search behaviour


def test_ranking_ties_and_limits() -> None:
    index = BM25Index()
    ids = index.add_all(["apple pie", "apple pie", "apple", "banana split", "pie chart"])
    results = index.search("apple pie", max_results=10)
    assert [m.id for m in results[:2]] == ids[:2]  # identical texts tie: insertion order
    assert results[0].score == results[1].score
    assert {m.id for m in results} == {ids[0], ids[1], ids[2], ids[4]}
    assert ids[3] not in {m.id for m in results}  # holds no query term
    assert [m.id for m in index.search("apple pie", max_results=2)] == ids[:2]
    best = results[0].score
    assert [m.id for m in index.search("apple pie", min_score=best)] == ids[:2]
    assert index.search("the of and") == []  # stopwords only
    assert index.search("zzz") == []
    assert index.search("") == []
    assert results[0].segment == TextSegment("apple pie")


def test_dense_and_sparse_paths_agree() -> None:
    texts = make_corpus(2000, seed=5)
    index = BM25Index()
    index.add_all(texts)
    for query in ["w0 w1", "w39", "w38 w37", "w0"]:
        for k in (1, 3, 50, 5000):
            dense = index.search(query, max_results=k)
            # brute order: scores desc, rows asc
            everything = index.search(query, max_results=10**6)
            assert [m.id for m in dense] == [m.id for m in everything[:k]]
            assert [m.score for m in dense] == [m.score for m in everything[:k]]


def test_filters_use_the_store_semantics() -> None:
    index = BM25Index()
    index.add_all(
        [
            TextSegment("red apple", {"color": "red", "year": 2020}),
            TextSegment("green apple", {"color": "green", "year": 2021}),
            TextSegment("apple", {"year": 2022.0}),
        ]
    )
    texts = lambda f: [m.segment.text for m in index.search("apple", filter=f)]  # noqa: E731
    assert texts(metadata_key("color").is_equal_to("red")) == ["red apple"]
    assert sorted(texts(metadata_key("color").is_not_equal_to("red"))) == ["apple", "green apple"]
    assert sorted(texts(metadata_key("year").is_greater_than(2020.5))) == ["apple", "green apple"]
    assert texts(metadata_key("color").is_in(["blue"])) == []
    with pytest.raises(Exception, match="color"):
        index.search("apple", filter=metadata_key("color").is_greater_than(3))
    with pytest.raises(BM25IndexError):
        index.search("apple", filter="color == 'red'")  # type: ignore[arg-type]


def test_add_validates_before_changing_anything() -> None:
    index = BM25Index()
    index.add("first", id="a")
    with pytest.raises(BM25IndexError, match="more than once"):
        index.add_all(["x", "y"], ids=["b", "b"])
    with pytest.raises(BM25IndexError, match="not a TextSegment"):
        index.add_all(["x", 3])  # type: ignore[list-item]
    with pytest.raises(BM25IndexError, match="2 ids for 1"):
        index.add_all(["x"], ids=["c", "d"])
    with pytest.raises(BM25IndexError):
        index.add_all("text")  # type: ignore[arg-type]
    assert len(index) == 1
    assert [m.segment.text for m in index.search("first")] == ["first"]


def test_remove_by_id_filter_and_all() -> None:
    index = BM25Index()
    index.add_all(
        [TextSegment(f"common word{i}", {"n": i}) for i in range(20)],
        ids=[str(i) for i in range(20)],
    )
    index.remove("3")
    index.remove("unknown")
    index.remove_all(["4", "4", "5"])
    index.remove_all(filter=metadata_key("n").is_greater_than_or_equal_to(15))
    found = {m.id for m in index.search("common", max_results=100)}
    assert found == {str(i) for i in range(15)} - {"3", "4", "5"}
    assert len(index) == 12
    assert "3" not in index
    assert "6" in index
    with pytest.raises(BM25IndexError):
        index.remove_all(["1"], filter=metadata_key("n").is_equal_to(1))
    index.remove_all()
    assert len(index) == 0
    assert index.search("common") == []
    index.add("common again", id="x")
    assert [m.id for m in index.search("common")] == ["x"]


def test_replacing_an_id_replaces_the_text_and_statistics() -> None:
    index = BM25Index()
    index.add_all(["alpha beta", "gamma"], ids=["a", "b"])
    index.add("delta", id="a")
    assert len(index) == 2
    assert index.search("alpha") == []
    assert [m.id for m in index.search("delta")] == ["a"]
    index.add("gamma gamma", id="b")  # the only live text replaced twice over
    index.add("gamma", id="b")
    assert [(m.id, m.segment.text) for m in index.search("gamma")] == [("b", "gamma")]


def test_compaction_drops_vocabulary_and_keeps_results() -> None:
    index = BM25Index()
    ids = index.add_all([f"shared unique{i}" for i in range(100)])
    before = all_scores(index, "shared unique7")
    index.remove_all(ids[50:])  # > 1/4 dead: compacts
    assert index._dead == 0
    assert index._size == 50
    assert "unique70" not in index._vocabulary
    assert "unique7" in index._vocabulary
    assert index.search("unique70") == []
    assert set(all_scores(index, "shared")) == set(ids[:50])
    assert all_scores(index, "unique7").keys() == {ids[7]}
    assert before.keys() >= all_scores(index, "shared unique7").keys()


def test_concurrent_adds_and_searches() -> None:
    index = BM25Index()
    errors: list[BaseException] = []

    def writer(offset: int) -> None:
        try:
            for i in range(50):
                index.add(f"word{i % 7} text{offset}", id=f"{offset}-{i}")
                if i % 5 == 0:
                    index.remove(f"{offset}-{i - 1}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(200):
                for match in index.search("word3 text1", max_results=5):
                    assert match.segment.text.startswith("word")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(index) == 3 * (50 - 9)


# ---------------------------------------------------------------------- analyzers


def test_standard_analyzer() -> None:
    analyzer = StandardAnalyzer()  # English stemming, 179 stopwords, terms of 2+ characters
    assert isinstance(analyzer, Analyzer)
    assert analyzer.analyze("The King's rooks, and THE knight's file!") == [
        "king",
        "rook",
        "knight",
        "file",
    ]
    assert analyzer.analyze("Don't parse v1.2.3 or example.com; error E-4012.") == [
        "pars",
        "v1.2.3",
        "example.com",
        "error",
        "4012",
    ]
    assert analyzer.analyze("Über straße café naïve") == ["über", "straße", "café", "naïv"]
    assert {"the", "about", "don't", "yourselves"} <= ENGLISH_STOPWORDS
    assert len(ENGLISH_STOPWORDS) == 179


def test_earlier_default_analyzer() -> None:
    analyzer = StandardAnalyzer(stopwords=LUCENE_STOPWORDS, stemmer=None, min_length=1)
    assert analyzer.analyze("The King's rooks, and THE knight's file!") == [
        "king",
        "rooks",
        "knight",
        "file",
    ]
    assert analyzer.analyze("Don't parse v1.2.3 or example.com; error E-4012.") == [
        "don't",
        "parse",
        "v1.2.3",
        "example.com",
        "error",
        "e",
        "4012",
    ]
    assert analyzer.analyze("Über straße café naïve") == ["über", "straße", "café", "naïve"]
    assert "the" in LUCENE_STOPWORDS
    assert len(LUCENE_STOPWORDS) == 33


def test_stemming_and_custom_stopwords() -> None:
    english = StandardAnalyzer(stemmer="english")
    assert english.analyze("running runners ran quickly") == ["run", "runner", "ran", "quick"]
    german = StandardAnalyzer(stopwords={"der", "die", "das"}, stemmer="german")
    assert german.analyze("Die Häuser der Stadt") == ["haus", "stadt"]
    upper = StandardAnalyzer(stopwords=(), stemmer=str.upper, min_length=2)
    assert upper.analyze("a bb ccc") == ["BB", "CCC"]
    assert upper.config() is None
    with pytest.raises(ValueError, match="no stemmer"):
        snowball_stemmer("klingon")
    with pytest.raises(TypeError):
        StandardAnalyzer(stopwords="the")


def test_stemmed_index_matches_word_forms() -> None:
    index = BM25Index(StandardAnalyzer(stemmer="english"))
    index.add_all(["The runner was running", "A quick walk"], ids=["run", "walk"])
    assert [m.id for m in index.search("runs")] == ["run"]
    assert [m.id for m in index.search("walking")] == ["walk"]


class CharacterBigrams:
    """A custom analyzer (e.g. for text without spaces): overlapping character pairs."""

    def tokenize(self, text: str) -> list[str]:
        text = "".join(text.split())
        return [text[i : i + 2] for i in range(len(text) - 1)]

    def normalize(self, token: str) -> str | None:
        return token.lower()


def test_custom_analyzer() -> None:
    index = BM25Index(CharacterBigrams())
    index.add_all(["東京都庁", "京都大学"], ids=["tokyo", "kyoto"])
    assert [m.id for m in index.search("京都の大学")] == ["kyoto", "tokyo"]
    with pytest.raises(TypeError, match="tokenize"):
        BM25Index(object())  # type: ignore[arg-type]


# ---------------------------------------------------------------------- retriever


def test_retriever_settings_and_metadata() -> None:
    index = BM25Index()
    index.add_all(
        [TextSegment("apple pie", {"user": "ann"}), TextSegment("apple tart", {"user": "bob"})],
        ids=["p", "t"],
    )
    retriever = BM25ContentRetriever(
        index,
        max_results=lambda q: 5,
        filter=lambda q: metadata_key("user").is_equal_to(q.metadata.chat_memory_id),
    )
    from ragloom.core import QueryMetadata

    contents = retriever.retrieve(Query("apple", QueryMetadata(chat_memory_id="bob")))
    assert [c.text for c in contents] == ["apple tart"]
    assert contents[0].metadata[SEGMENT_ID] == "t"
    assert contents[0].score > 0
    with pytest.raises(ValueError, match="max_results"):
        BM25ContentRetriever(index, max_results=0)


class TestBM25ContentRetriever(ContentRetrieverSuite):
    @pytest.fixture
    def retriever(self, corpus: list[Document]) -> BM25ContentRetriever:
        return BM25ContentRetriever.from_documents(corpus, max_results=5)


class TestStemmedBM25ContentRetriever(ContentRetrieverSuite):
    @pytest.fixture
    def retriever(self, corpus: list[Document]) -> BM25ContentRetriever:
        return BM25ContentRetriever.from_documents(
            corpus, analyzer=StandardAnalyzer(stemmer="english"), variant="okapi"
        )


def test_removed_segments_take_no_part_in_type_checks() -> None:
    from ragloom.core import BM25Index, TextSegment, metadata_key

    index = BM25Index()
    ids = index.add_all(
        [TextSegment("word", {"k": "x"})] + [TextSegment("word", {"k": i}) for i in range(9)]
    )
    index.remove(ids[0])
    found = index.search("word", max_results=20, filter=metadata_key("k").is_greater_than(0))
    assert {match.id for match in found} == set(ids[2:])
