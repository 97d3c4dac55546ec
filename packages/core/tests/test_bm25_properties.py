"""Property test: BM25Index search, with or without a filter, equals a brute-force ranking."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.core import Filter, TextSegment, metadata_key
from ragloom.core.bm25 import BM25Index, BM25Parameters

VOCABULARY = ["ant", "bee", "cat", "dog", "eel", "fox"]
FILTERS: list[Filter | None] = [
    None,
    metadata_key("n").is_greater_than(2),
    metadata_key("n").is_less_than_or_equal_to(1) | metadata_key("tag").is_equal_to("x"),
    ~metadata_key("tag").is_in(["x", "y"]),
    metadata_key("tag").is_not_equal_to("y") & metadata_key("n").is_not_in([0, 3]),
]

documents = st.lists(
    st.tuples(
        st.lists(st.sampled_from(VOCABULARY), max_size=8),
        st.integers(0, 4),
        st.one_of(st.none(), st.sampled_from(["x", "y", "z"])),
    ),
    min_size=1,
    max_size=25,
)


def brute_force(
    texts: list[list[str]], live: list[bool], query: list[str], params: BM25Parameters
) -> list[float | None]:
    """The BM25 score of every live text holding a query term, from the formulas alone."""
    alive = [text for text, is_live in zip(texts, live, strict=True) if is_live]
    n = len(alive)
    average = sum(map(len, alive)) / n
    df = {term: sum(term in text for text in alive) for term in VOCABULARY}
    robertson = {t: math.log(n - d + 0.5) - math.log(d + 0.5) for t, d in df.items() if d}
    mean = sum(robertson.values()) / len(robertson) if robertson else 0.0

    def idf(d: int) -> float:
        if params.variant == "lucene":
            return math.log(1 + (n - d + 0.5) / (d + 0.5))
        value = math.log(n - d + 0.5) - math.log(d + 0.5)
        return params.epsilon * mean if value < 0 else value

    scores: list[float | None] = []
    for text, is_live in zip(texts, live, strict=True):
        if not is_live or not set(query) & set(text):
            scores.append(None)
            continue
        norm = 1 - params.b + params.b * len(text) / average
        score = 0.0
        for term in query:
            tf = text.count(term)
            if tf and df[term]:
                scale = 1 if params.variant == "lucene" else params.k1 + 1
                score += idf(df[term]) * tf * scale / (tf + params.k1 * norm)
        scores.append(score)
    return scores


@settings(max_examples=150, deadline=None)
@given(
    docs=documents,
    removed=st.sets(st.integers(0, 24), max_size=10),
    query=st.lists(st.sampled_from([*VOCABULARY, "gnu"]), min_size=1, max_size=4),
    filter_index=st.integers(0, len(FILTERS) - 1),
    k=st.integers(1, 30),
    variant=st.sampled_from(["lucene", "okapi"]),
    batches=st.integers(1, 4),
)
def test_search_equals_filtered_brute_force_ranking(
    docs: list[tuple[list[str], int, str | None]],
    removed: set[int],
    query: list[str],
    filter_index: int,
    k: int,
    variant: str,
    batches: int,
) -> None:
    index = BM25Index(variant=variant)  # type: ignore[arg-type]
    segments = [
        TextSegment(" ".join(words), {"n": n} if tag is None else {"n": n, "tag": tag})
        for words, n, tag in docs
    ]
    ids = [str(i) for i in range(len(docs))]
    step = math.ceil(len(docs) / batches)
    for start in range(0, len(docs), step):  # several blocks
        index.add_all(segments[start : start + step], ids=ids[start : start + step])
    index.remove_all([str(i) for i in removed])
    live = [i not in removed for i in range(len(docs))]
    if not any(live):
        assert index.search(" ".join(query)) == []
        return
    filter = FILTERS[filter_index]
    expected = brute_force([words for words, _, _ in docs], live, query, index.parameters)
    eligible = [
        (score, i)
        for i, score in enumerate(expected)
        if score is not None and (filter is None or filter.test(segments[i].metadata))
    ]
    got = index.search(" ".join(query), max_results=k, filter=filter)
    assert len(got) == min(k, len(eligible))
    for match in got:  # each score is right
        assert match.score == pytest.approx(expected[int(match.id)], abs=1e-9)
    scores = [match.score for match in got]
    assert scores == sorted(scores, reverse=True)
    # the k best (up to rounding): nothing left out scores higher than what was returned
    returned = {int(match.id) for match in got}
    left_out = [score for score, i in eligible if i not in returned]
    if got and left_out:
        assert max(left_out) <= got[-1].score + 1e-9
    # exact ties keep insertion order
    for a, b in itertools.pairwise(got):
        if a.score == b.score:
            assert int(a.id) < int(b.id)
