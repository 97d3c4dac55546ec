"""Benchmark InMemoryEmbeddingStore against plain numpy on the same data, in one run.

Seeded unit vectors (100k x 384 float32 by default), 100 queries, top-10:

- add:      ``store.add_all(matrix)`` vs ``matrix.copy()`` (goal <= 2x); with ids and
            segments, segments built in the run, and ``add_columns`` (texts and a metadata
            column, goal <= 1.5x)
- memory:   resident-set growth of the filled store vs the raw float32 matrix (goal <= 1.3x)
- search:   ``store.search`` vs ``M @ q`` + ``argpartition`` + sort of the top k (goal <= 1.3x)
- filtered: ``tenant == t`` (10 tenants) vs a numpy mask + ``M[idx] @ q`` (goal <= 1.5x)

LangChain's ``InMemoryVectorStore`` is timed too when ``langchain_core`` is importable.

    .venv/bin/python scripts/bench/bench_in_memory_store.py [--rows 100000] [--dim 384]
        [--only memory,add,search] [--repeat 5]
"""

# ruff: noqa: E402  (BLAS reads its thread count when numpy loads: set it first)
from __future__ import annotations

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # one BLAS thread: no thread noise in ratios

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from ragloom.core import (
    Embedding,
    EmbeddingSearchRequest,
    InMemoryEmbeddingStore,
    TextSegment,
    metadata_key,
)

Matrix = npt.NDArray[np.float32]


def rss_bytes() -> int:
    """Resident set size of this process (Linux /proc, no dependency)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def median_time(
    run: Callable[[], Any], repeat: int = 3, setup: Callable[[], Any] | None = None
) -> float:
    """Median wall time of ``run`` over ``repeat`` runs (``setup`` untimed before each)."""
    times = []
    for _ in range(repeat):
        if setup is not None:
            setup()
        gc.collect()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def numpy_top_k(matrix: Matrix, query: Matrix, k: int) -> npt.NDArray[np.intp]:
    """The brute-force baseline: scores, partial sort, sort of the k best."""
    scores = matrix @ query
    best = np.argpartition(-scores, k)[:k]
    return best[np.argsort(-scores[best])]


def numpy_filtered_top_k(
    matrix: Matrix, query: Matrix, codes: npt.NDArray[np.int64], code: int, k: int
) -> npt.NDArray[np.intp]:
    """The filtered baseline: a mask of the rows of ``code``, a gather, their top k."""
    selected = np.flatnonzero(codes == code)
    return selected[numpy_top_k(matrix[selected], query, k)]


Result = tuple[str, float, float, float]  # measure, ragloom, numpy, goal ratio (0: none)


def bench_memory(matrix: Matrix) -> Result:
    """RSS growth while one store takes the matrix (run first, on a quiet heap)."""
    gc.collect()
    before = rss_bytes()
    store = InMemoryEmbeddingStore()
    store.add_all(matrix)
    gc.collect()
    grown = (rss_bytes() - before) / 1e6
    del store
    return ("memory (MB, RSS growth)", grown, matrix.nbytes / 1e6, 1.3)


def paired(
    ours: Callable[[], Any], theirs: Callable[[], Any], repeat: int = 5
) -> tuple[float, float]:
    """Median times of ``ours`` and ``theirs``, run alternately so that they share the noise.

    What a run returns is kept alive until its time is taken, so freeing it is not timed.
    """
    our_times: list[float] = []
    their_times: list[float] = []
    for _ in range(repeat):
        for run, times in ((theirs, their_times), (ours, our_times)):
            gc.collect()
            start = time.perf_counter()
            kept = run()
            times.append(time.perf_counter() - start)
            del kept
    return statistics.median(our_times), statistics.median(their_times)


def filled(embeddings: Any, *args: Any, **kwargs: Any) -> InMemoryEmbeddingStore:
    """A new store after one ``add_all``."""
    store = InMemoryEmbeddingStore()
    store.add_all(embeddings, *args, **kwargs)
    return store


def bench_add(
    matrix: Matrix, segments: list[TextSegment], ids: list[str], repeat: int = 5
) -> list[Result]:
    """add_all in its shapes against the numpy copy (or stack) of the same data."""
    embeddings = [Embedding(v) for v in matrix]
    vectors = [e.vector for e in embeddings]
    texts = [segment.text for segment in segments]
    metadata = {"tenant": [segment.metadata["tenant"] for segment in segments]}
    rows = [segment.metadata.to_dict() for segment in segments]

    def built_and_added() -> InMemoryEmbeddingStore:
        built = [TextSegment(t, m) for t, m in zip(texts, rows, strict=True)]
        return filled(matrix, built, ids=ids)

    def columns_added() -> InMemoryEmbeddingStore:
        store = InMemoryEmbeddingStore()
        store.add_columns(matrix, texts, metadata, ids=ids)
        return store

    cases: list[tuple[str, Callable[[], Any], Callable[[], Any], float]] = [
        ("add_all(matrix) (ms)", lambda: filled(matrix), matrix.copy, 2.0),
        ("add_all(matrix, ids=...) (ms)", lambda: filled(matrix, ids=ids), matrix.copy, 0.0),
        (
            "add_all(matrix, segments, ids) (ms)",
            lambda: filled(matrix, segments, ids=ids),
            matrix.copy,
            0.0,
        ),
        ("TextSegments built + add_all (ms)", built_and_added, matrix.copy, 0.0),
        ("add_columns(matrix, texts, metadata, ids) (ms)", columns_added, matrix.copy, 1.5),
        (
            "add_all(list[Embedding]) vs np.stack (ms)",
            lambda: filled(embeddings),
            lambda: np.stack(vectors),
            0.0,
        ),
    ]
    results = []
    for name, ours, theirs, goal in cases:
        our_time, their_time = paired(ours, theirs, repeat)
        results.append((name, our_time * 1e3, their_time * 1e3, goal))
    return results


def bench_search(
    matrix: Matrix,
    queries: Matrix,
    tenant_codes: npt.NDArray[np.int64],
    segments: list[TextSegment],
    ids: list[str],
    k: int,
    repeat: int = 5,
) -> list[Result]:
    """Plain and tenant-filtered search, interleaved with their numpy baselines."""
    store = InMemoryEmbeddingStore()
    store.add_all(matrix, segments, ids=ids)
    query_embeddings = [Embedding(q) for q in queries]
    filters = [metadata_key("tenant").is_equal_to(f"tenant-{t}") for t in range(10)]

    def numpy_search() -> None:
        for q in queries:
            numpy_top_k(matrix, q, k)

    def store_search() -> None:
        for q in query_embeddings:
            store.search(EmbeddingSearchRequest(q, k))

    def numpy_filtered() -> None:
        for i, q in enumerate(queries):
            numpy_filtered_top_k(matrix, q, tenant_codes, i % 10, k)

    def store_filtered() -> None:
        for i, q in enumerate(query_embeddings):
            store.search(EmbeddingSearchRequest(q, k, filter=filters[i % 10]))

    # The answers must agree before their speed is compared.
    for i, (q, qe) in enumerate(zip(queries, query_embeddings, strict=True)):
        got = [m.embedding_id for m in store.search(EmbeddingSearchRequest(qe, k)).matches]
        assert got == [ids[j] for j in numpy_top_k(matrix, q, k)], "search disagrees with numpy"
        want = [ids[j] for j in numpy_filtered_top_k(matrix, q, tenant_codes, i % 10, k)]
        request = EmbeddingSearchRequest(qe, k, filter=filters[i % 10])
        assert [m.embedding_id for m in store.search(request).matches] == want

    results = []
    per_query = 1e3 / len(queries)
    cases: list[tuple[str, Callable[[], None], Callable[[], None], float]] = [
        ("search (ms/query)", store_search, numpy_search, 1.3),
        ("filtered search (ms/query)", store_filtered, numpy_filtered, 1.5),
    ]
    for name, ours, theirs, goal in cases:
        our_time, their_time = paired(ours, theirs, repeat)
        results.append((name, our_time * per_query, their_time * per_query, goal))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument(
        "--only",
        default="memory,add,search",
        help="comma-separated parts to run (memory, add, search), for quicker iteration",
    )
    parser.add_argument("--repeat", type=int, default=5, help="paired runs per measure")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    if not parts <= {"memory", "add", "search"}:
        parser.error(f"--only takes memory, add and search, got {args.only!r}")

    rng = np.random.default_rng(args.seed)
    matrix = rng.standard_normal((args.rows, args.dim), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    queries = rng.standard_normal((args.queries, args.dim), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    tenant_codes = rng.integers(0, 10, args.rows)
    print(
        f"{args.rows} rows x {args.dim} dims float32 = {matrix.nbytes / 1e6:.1f} MB raw; "
        f"{args.queries} queries, top-{args.k}"
    )

    results = [bench_memory(matrix)] if "memory" in parts else []
    tenants = [{"tenant": f"tenant-{t}"} for t in range(10)]
    segments = [TextSegment("", tenants[t]) for t in tenant_codes.tolist()]
    ids = [f"doc-{i}" for i in range(args.rows)]
    if "add" in parts:
        results += bench_add(matrix, segments, ids, args.repeat)
    if "search" in parts:
        results += bench_search(matrix, queries, tenant_codes, segments, ids, args.k, args.repeat)

    print(f"\n{'measure':48} {'ragloom':>9} {'numpy':>9} {'ratio':>7} {'goal':>6}")
    for name, ours, theirs, goal in results:
        ratio = ours / theirs
        verdict = "" if not goal else ("ok" if ratio <= goal else "MISSED")
        goal_text = f"<={goal}" if goal else "-"
        print(f"{name:48} {ours:9.2f} {theirs:9.2f} {ratio:6.2f}x {goal_text:>6} {verdict}")

    if "search" in parts:
        compare_langchain(matrix, queries, tenant_codes, args.k)


def compare_langchain(
    matrix: Matrix, queries: Matrix, tenant_codes: npt.NDArray[np.int64], k: int
) -> None:
    """Time LangChain's InMemoryVectorStore on the same data, if it is installed."""
    try:
        from langchain_core.embeddings import FakeEmbeddings
        from langchain_core.vectorstores import InMemoryVectorStore
    except ImportError:
        print("\nlangchain_core not importable: LangChain comparison skipped")
        return
    lc = InMemoryVectorStore(FakeEmbeddings(size=matrix.shape[1]))
    start = time.perf_counter()
    for i, (vector, tenant) in enumerate(zip(matrix.tolist(), tenant_codes.tolist(), strict=True)):
        lc.store[str(i)] = {
            "id": str(i),
            "vector": vector,
            "text": "",
            "metadata": {"tenant": f"tenant-{tenant}"},
        }
    fill = time.perf_counter() - start
    sample = queries[:5].tolist()
    start = time.perf_counter()
    for q in sample:
        lc.similarity_search_by_vector(q, k=k)
    search = (time.perf_counter() - start) / len(sample)
    start = time.perf_counter()
    for i, q in enumerate(sample):
        name = f"tenant-{i % 10}"

        def same_tenant(document: Any, name: str = name) -> bool:
            return bool(document.metadata["tenant"] == name)

        lc.similarity_search_by_vector(q, k=k, filter=same_tenant)
    filtered = (time.perf_counter() - start) / len(sample)
    numpy_ms = median_time(lambda: [numpy_top_k(matrix, q, k) for q in queries[:5]]) / 5
    print(
        f"\nLangChain InMemoryVectorStore (5 queries): fill {fill * 1e3:.0f} ms (its dict, "
        f"no embedding), search {search * 1e3:.1f} ms/query ({search / numpy_ms:.0f}x numpy), "
        f"filtered {filtered * 1e3:.1f} ms/query"
    )


if __name__ == "__main__":
    main()
