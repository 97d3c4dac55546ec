"""Benchmark the in-memory store's quantized indexes against its exact search, in one run.

Data: 100k x 384 float32 (``--rows``) in two shapes, both seeded:

- ``clustered``: a mixture of 300 clusters with a power-law spectrum and a shared offset,
  tuned to the statistics of MiniLM sentence embeddings (mean pairwise cosine about 0.24,
  10th neighbour at about 0.67); queries are fresh draws from the same mixture;
- ``gaussian``: i.i.d. normal vectors, the worst case for quantization and ANN.

For each shape: exact vs int8 vs binary, top-10. Reported: median query time and its ratio
to exact (runs interleaved query by query, so load on the shared machine hits all alike),
recall@10 against the exact results, and the bytes of the searchable index (the codes)
against the float32 matrix. Numbers on the shared 2-core machine are indicative.

    .venv/bin/python scripts/bench/bench_ann.py [--rows 100000] [--queries 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import numpy.typing as npt

from ragloom.core import EmbeddingSearchRequest, InMemoryEmbeddingStore
from ragloom.core.stores.quantized import IndexOptions

KINDS = ("exact", "int8", "binary")
Matrix = npt.NDArray[np.float32]


def clustered(count: int, dimension: int, seed: int) -> Matrix:
    """The mixture described in the module docstring (same recipe as the tests)."""
    rng = np.random.default_rng(seed)
    spectrum = np.sqrt((1.0 + np.arange(dimension)) ** -0.5)
    basis, _ = np.linalg.qr(rng.standard_normal((dimension, dimension)))
    centers = (rng.standard_normal((300, dimension)) * spectrum) @ basis.T
    offset = rng.standard_normal(dimension)
    offset *= 0.8 * np.linalg.norm(centers, axis=1).mean() / np.linalg.norm(offset)
    out = np.empty((count, dimension), dtype=np.float32)
    for start in range(0, count, 50_000):  # bounded float64 temporaries
        size = min(50_000, count - start)
        labels = rng.integers(0, 300, size)
        noise = (rng.standard_normal((size, dimension)) * spectrum) @ basis.T
        out[start : start + size] = centers[labels] + noise + offset
    return out


def gaussian(count: int, dimension: int, seed: int) -> Matrix:
    return np.random.default_rng(seed).standard_normal((count, dimension), dtype=np.float32)


def run(shape: str, rows: int, dimension: int, queries: int, repeat: int) -> None:
    make = clustered if shape == "clustered" else gaussian
    data = make(rows + queries, dimension, 0)
    vectors, probes = data[:rows], data[rows:]
    del data
    ids = [str(i) for i in range(rows)]
    stores = {}
    for kind in KINDS:
        store = InMemoryEmbeddingStore(index=IndexOptions(kind))  # type: ignore[arg-type]
        store.add_all(vectors, ids=ids)
        store.search(EmbeddingSearchRequest(probes[0], 10))  # encodes the codes
        stores[kind] = store
    times: dict[str, list[float]] = {kind: [] for kind in KINDS}
    found: dict[str, list[set[str]]] = {kind: [] for kind in KINDS}
    for round_ in range(repeat):
        for probe in probes:
            request = EmbeddingSearchRequest(probe, 10)
            for kind in KINDS:  # interleaved
                start = time.perf_counter()
                matches = stores[kind].search(request).matches
                times[kind].append(time.perf_counter() - start)
                if round_ == 0:
                    found[kind].append({m.embedding_id for m in matches})
    exact_time = statistics.median(times["exact"])
    print(f"\n{shape}: {rows:,} x {dimension}, {queries} queries x {repeat}, top 10")
    header = ("index", "ms/query", "speed-up", "recall@10", "index MB", "/ f32")
    print("{:8} {:>9} {:>9} {:>10} {:>9} {:>6}".format(*header))
    for kind in KINDS:
        median = statistics.median(times[kind])
        recall = statistics.mean(
            len(a & b) / 10 for a, b in zip(found["exact"], found[kind], strict=True)
        )
        quantized = stores[kind]._quantized
        size = vectors.nbytes if quantized is None else quantized.nbytes
        print(
            f"{kind:8} {median * 1e3:9.2f} {exact_time / median:8.1f}x {recall:10.3f} "
            f"{size / 1e6:9.1f} {size / vectors.nbytes:6.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--shapes", default="clustered,gaussian")
    args = parser.parse_args()
    for shape in args.shapes.split(","):
        run(shape, args.rows, args.dim, args.queries, args.repeat)


if __name__ == "__main__":
    main()
