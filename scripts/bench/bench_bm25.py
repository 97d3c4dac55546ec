"""BM25 benchmark: ragloom's BM25Index vs bm25s and rank-bm25, same run, same tokens.

    .venv/bin/python scripts/bench/bench_bm25.py [--docs 50000] [--queries 100] [--repeat 5]

A synthetic corpus: ``--docs`` documents of 80-120 words drawn from a Zipf(1) distribution
over 30,000 made-up words, so a few words are in most documents and most are rare. Two
query sets of four words each: "zipf" draws words like the corpus does (long postings),
"uniform" draws them uniformly from the vocabulary (mostly rare words).

Every library gets the token lists of ragloom's StandardAnalyzer (lowercase, Unicode words,
33 English stopwords), so the tokenization is identical; bm25s and rank-bm25 receive them
pre-tokenized, and that shared tokenization time is added to their build time. Query
latency is one query at a time, top 10 (ragloom: lucene variant vs bm25s "lucene", and the
okapi variant vs rank-bm25's BM25Okapi, whose scores it equals). Times are the minimum and
median of ``--repeat`` runs; the machine is shared, so look at the ratios more than at the
absolute numbers. Memory: traced allocations retained by the built index (tracemalloc;
numpy arrays included), measured in a separate pass.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from typing import Any

import bm25s
import numpy as np
from rank_bm25 import BM25Okapi

from ragloom.core.bm25 import BM25Index, BM25Match, StandardAnalyzer, analyze

SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "po", "si", "ve", "do", "gra", "tri", "ul", "en"]


def make_corpus(docs: int, vocabulary: int, seed: int = 0) -> tuple[list[str], list[str], Any]:
    rng = np.random.default_rng(seed)
    words: set[str] = set()
    while len(words) < vocabulary:
        words.add("".join(rng.choice(SYLLABLES, rng.integers(2, 6))))
    lexicon = np.array(sorted(words))
    rng.shuffle(lexicon)
    probabilities = 1 / np.arange(1, vocabulary + 1)
    probabilities /= probabilities.sum()
    lengths = rng.integers(80, 121, docs)
    drawn = lexicon[rng.choice(vocabulary, lengths.sum(), p=probabilities)].tolist()
    texts, start = [], 0
    for length in lengths.tolist():
        texts.append(" ".join(drawn[start : start + length]))
        start += length
    return texts, lexicon.tolist(), probabilities


def make_queries(lexicon: list[str], p: Any, count: int, zipf: bool, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(lexicon), (count, 4), p=p if zipf else None)
    return [" ".join(lexicon[i] for i in row) for row in picks.tolist()]


def shared_tokens(analyzer: StandardAnalyzer, texts: list[str]) -> list[list[str]]:
    """The analyzer's terms of every text, normalizing each distinct token once (as the
    index does), so the references get the same terms at the lowest cost."""
    memo: dict[str, str | None] = {}

    def term(token: str) -> str | None:
        if token not in memo:
            memo[token] = analyzer.normalize(token)
        return memo[token]

    result = []
    for text in texts:
        terms = list(map(term, analyzer.tokenize(text)))
        result.append([t for t in terms if t is not None])
    return result


def timed(function: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """(min, median) seconds over ``repeat`` runs, and the last result."""
    times, result = [], None
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times), result


def retained(function: Callable[[], Any]) -> float:
    """MB of traced allocations still held by what ``function`` returns."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = function()
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del kept
    return (after - before) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rank-bm25-queries", type=int, default=10)
    args = parser.parse_args()

    texts, lexicon, p = make_corpus(args.docs, 30_000)
    analyzer = StandardAnalyzer()
    query_sets = {
        "zipf": make_queries(lexicon, p, args.queries, True, 1),
        "uniform": make_queries(lexicon, p, args.queries, False, 2),
    }
    print(
        f"{args.docs} documents, {sum(len(t.split()) for t in texts) / len(texts):.0f} words "
        f"on average; {args.queries} four-word queries per set; top 10"
    )
    build_repeat = max(1, args.repeat // 2)

    tokenize_min, tokenize_median, tokens = timed(lambda: shared_tokens(analyzer, texts), 1)

    def build_ours(variant: str = "lucene") -> BM25Index:
        index = BM25Index(analyzer, variant=variant)  # type: ignore[arg-type]
        index.add_all(texts)
        return index

    def build_bm25s() -> Any:
        model = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
        model.index(tokens, show_progress=False)
        return model

    ours_min, ours_median, ours = timed(build_ours, build_repeat)
    bm25s_min, bm25s_median, reference = timed(build_bm25s, build_repeat)
    rank_min, rank_median, okapi_reference = timed(lambda: BM25Okapi(tokens), 1)
    okapi = build_ours("okapi")

    # The timed query loops: functions of their inputs (bound with partial), so that each
    # loop's set is the one timed, not the loop variable's last value.
    def search_each(index: BM25Index, queries: list[str]) -> list[list[BM25Match]]:
        return [index.search(x) for x in queries]

    def bm25s_each(query_tokens: list[list[str]]) -> list[Any]:
        return [
            reference.retrieve([x], k=10, show_progress=False, n_threads=1) for x in query_tokens
        ]

    def okapi_top10(query_tokens: list[list[str]]) -> list[Any]:
        return [np.argpartition(-okapi_reference.get_scores(x), 10)[:10] for x in query_tokens]

    print("\nindex build (s)                       min   median   ratio to ragloom (min)")
    print(f"  ragloom, from text                {ours_min:7.2f}  {ours_median:7.2f}")
    print(f"  shared tokenization (references)  {tokenize_min:7.2f}  {tokenize_median:7.2f}")
    for name, low, middle in [
        ("bm25s, from tokens", bm25s_min, bm25s_median),
        ("bm25s, tokens + index", bm25s_min + tokenize_min, bm25s_median + tokenize_median),
        ("rank-bm25, from tokens", rank_min, rank_median),
        ("rank-bm25, tokens + index", rank_min + tokenize_min, rank_median + tokenize_median),
    ]:
        print(f"  {name:<32}{low:7.2f}  {middle:7.2f}   {low / ours_min:5.2f}x")

    print("\nquery latency (ms per query)  first pass   min   median   ratio to ragloom (min)")
    for name, queries in query_sets.items():
        query_tokens = [analyze(analyzer, q) for q in queries]
        fresh = build_ours()  # first pass: computes the per-term impacts it needs
        first = timed(partial(search_each, fresh, queries), 1)[0]
        ours_q = timed(partial(search_each, ours, queries), args.repeat)
        theirs_q = timed(partial(bm25s_each, query_tokens), args.repeat)
        scale = 1000 / len(queries)
        print(
            f"  {name}: ragloom           {first * scale:8.3f}  {ours_q[0] * scale:7.3f}  "
            f"{ours_q[1] * scale:7.3f}"
        )
        print(
            f"  {name}: bm25s                       {theirs_q[0] * scale:7.3f}  "
            f"{theirs_q[1] * scale:7.3f}   {theirs_q[0] / ours_q[0]:5.2f}x"
        )
        few = queries[: args.rank_bm25_queries]
        few_tokens = query_tokens[: args.rank_bm25_queries]
        okapi_q = timed(partial(search_each, okapi, few), args.repeat)
        rank_q = timed(partial(okapi_top10, few_tokens), 1)
        few_scale = 1000 / len(few)
        print(
            f"  {name}: ragloom okapi               {okapi_q[0] * few_scale:7.3f}  "
            f"{okapi_q[1] * few_scale:7.3f}"
        )
        print(
            f"  {name}: rank-bm25 okapi             {rank_q[0] * few_scale:7.3f}  "
            f"{rank_q[1] * few_scale:7.3f}   {rank_q[0] / okapi_q[0]:5.0f}x"
        )
        # same results: top-10 scores equal bm25s's (float32) within its precision
        worst = 0.0
        for query, tokens_q in zip(queries, query_tokens, strict=True):
            ours_scores = [m.score for m in ours.search(query)]
            _, their_scores = reference.retrieve([tokens_q], k=10, show_progress=False)
            their = sorted(their_scores[0].tolist(), reverse=True)[: len(ours_scores)]
            worst = max(
                worst, max((abs(a - b) for a, b in zip(ours_scores, their, strict=True)), default=0)
            )
        print(f"  {name}: largest top-10 score difference vs bm25s (float32): {worst:.2e}")

    print("\nmemory retained by the index (MB, tracemalloc)")
    print(
        f"  ragloom: {retained(build_ours):.1f} (of which numpy arrays "
        f"{ours.nbytes / 1e6:.1f}; also ids, texts, metadata, lazily cached impacts)"
    )
    print(f"  bm25s:   {retained(build_bm25s):.1f}")
    print(f"  rank-bm25: {retained(lambda: BM25Okapi(tokens)):.1f}")


if __name__ == "__main__":
    main()
