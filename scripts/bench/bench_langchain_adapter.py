"""LangChain's InMemoryVectorStore vs ragloom's in-memory store behind RagloomVectorStore.

The same 10k documents (random unit vectors, precomputed: both stores get them from one
lookup ``Embeddings``, so embedding costs nothing and is equal), the same queries through
``similarity_search_with_score``; the top-k ids are checked equal. Rounds are interleaved
(the starting contender rotating), and wall and CPU time are both reported with the load
average, since the machine is shared. Needs ragloom-langchain (langchain-core).

Usage: python scripts/bench/bench_langchain_adapter.py [--docs 10000] [--dims 384]
       [--queries 50] [--k 4] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from ragloom.core.stores.in_memory import InMemoryEmbeddingStore
from ragloom.langchain import RagloomVectorStore


class LookupEmbeddings(Embeddings):
    """Hands out vectors computed beforehand, by text: no model in the measurement."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[text] for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vectors[text]


def searches(store: VectorStore, queries: list[str], k: int) -> Callable[[], list[list[str]]]:
    def run() -> list[list[str]]:
        return [
            [doc.id or "" for doc, _ in store.similarity_search_with_score(query, k=k)]
            for query in queries
        ]

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(args.docs + args.queries, args.dims)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    texts = [f"document {i}" for i in range(args.docs)]
    queries = [f"query {i}" for i in range(args.queries)]
    embeddings = LookupEmbeddings(dict(zip(texts + queries, matrix.tolist(), strict=True)))
    metadatas = [{"n": i} for i in range(args.docs)]
    ids = [str(i) for i in range(args.docs)]

    langchain = InMemoryVectorStore(embeddings)
    langchain.add_texts(texts, metadatas, ids=ids)
    ragloom = RagloomVectorStore(InMemoryEmbeddingStore(), embeddings)
    ragloom.add_texts(texts, metadatas, ids=ids)
    runs = {
        "langchain InMemoryVectorStore": searches(langchain, queries, args.k),
        "ragloom in-memory via adapter": searches(ragloom, queries, args.k),
    }
    first = [run() for run in runs.values()]
    assert first[0] == first[1], "the two stores disagree on the top-k"

    names = list(runs)
    wall: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    load_before = os.getloadavg()
    for round_ in range(args.rounds):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            start_wall, start_cpu = time.perf_counter(), time.process_time()
            runs[name]()
            wall[name].append(time.perf_counter() - start_wall)
            cpu[name].append(time.process_time() - start_cpu)
    load_after = os.getloadavg()

    print(
        f"{args.docs} docs x {args.dims} dims, {args.queries} queries of k={args.k} per "
        f"round, {args.rounds} interleaved rounds; load average (1, 5, 15 min) "
        f"before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
        f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}, "
        f"{os.cpu_count()} cores"
    )
    print(f"{'store':<32} {'wall ms/query':>14} {'cpu ms/query':>13}")
    for name in names:
        per_query_wall = statistics.median(wall[name]) / args.queries * 1000
        per_query_cpu = statistics.median(cpu[name]) / args.queries * 1000
        print(f"{name:<32} {per_query_wall:>14.3f} {per_query_cpu:>13.3f}")
    baseline, contender = names
    for label, times in (("wall", wall), ("cpu", cpu)):
        ratios = [b / c for b, c in zip(times[baseline], times[contender], strict=True)]
        print(
            f"ragloom speed-up ({label}): {statistics.median(ratios):.1f}x "
            f"(rounds {min(ratios):.1f}-{max(ratios):.1f})"
        )


if __name__ == "__main__":
    main()
