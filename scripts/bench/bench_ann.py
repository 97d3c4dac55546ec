"""Benchmark the in-memory store's indexes against its exact search, in one run.

Data: ``--rows`` x 384 float32 (100k by default; ``--rows 1000000`` for the 1M case) in
three shapes, all seeded:

- ``text``: vectors with the structure of real text embeddings. The sentences (and
  titles) of the shipped CISI corpus (/work/shared/eval-data/cisi, about 8,500) are
  embedded with the default model (all-MiniLM-L6-v2 int8, ragloom-embedding-onnx) and
  cached in ``.bench-cache/`` (git-ignored); a mixture model fitted to them with numpy
  generates the rest: k-means (64 centres, Lloyd, k-means++ seeding) on the unit vectors,
  then per cluster its mean, its 32 leading principal directions with their standard
  deviations (low-rank covariance) and the remaining variance spread evenly over the other
  directions (diagonal part). A draw picks a cluster by its share of the sentences, adds
  Gaussian coordinates along the principal directions and isotropic noise, and is
  normalized like a model's output. Queries are fresh draws;
- ``clustered``: a synthetic mixture of 300 clusters with a power-law spectrum and a
  shared offset (the recipe of the tests);
- ``gaussian``: i.i.d. normal vectors, the worst case for quantization and graphs.

For each shape: exact vs int8 vs binary vs hnsw, top-10. Reported: median query time and
its ratio to exact (runs interleaved query by query, so load on the shared machine hits
all alike), recall@10 against the exact results, the bytes of the searchable index (the
codes, or the HNSW graph with its float16 vectors) against the float32 matrix, and the
time to build the index (taken at the first search). Numbers on the shared, loaded
2-core machine are indicative.

    .venv/bin/python scripts/bench/bench_ann.py [--rows 100000] [--queries 50] [--repeat 3]
        [--shapes text,clustered,gaussian] [--kinds exact,int8,binary,hnsw]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ragloom.core import EmbeddingSearchRequest, InMemoryEmbeddingStore
from ragloom.core.stores.quantized import IndexOptions

KINDS = ("exact", "int8", "binary", "hnsw")
ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path("/work/shared/eval-data/cisi/corpus.jsonl")
CACHE = ROOT / ".bench-cache" / "cisi-sentences-minilm.npy"
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


def embedded_sentences() -> Matrix:
    """The CISI titles and sentences (4 words or more) embedded with the default model,
    cached as a .npy (the embedding takes minutes on 2 cores)."""
    if CACHE.exists():
        cached: Matrix = np.load(CACHE)
        return cached
    from ragloom.embeddings.onnx import AllMiniLmL6V2QuantizedEmbeddingModel

    texts = []
    with CORPUS.open(encoding="utf-8") as lines:
        for line in lines:
            document = json.loads(line)
            texts.append(document["title"])
            sentences = re.split(r"(?<=[.!?])\s+", document["text"])
            texts.extend(s for s in sentences if len(s.split()) >= 4)
    model = AllMiniLmL6V2QuantizedEmbeddingModel(spinning=False)
    result = model.embed_all(texts)
    vectors = np.stack([e.vector for e in result.embeddings]).astype(np.float32)
    CACHE.parent.mkdir(exist_ok=True)
    np.save(CACHE, vectors)
    return vectors


def kmeans(points: npt.NDArray[np.float64], k: int, rng: np.random.Generator) -> Matrix:
    """Cluster labels of ``points`` after Lloyd iterations from a k-means++ seeding."""
    centres = [points[rng.integers(len(points))]]
    closest = ((points - centres[0]) ** 2).sum(axis=1)
    for _ in range(k - 1):
        centres.append(points[rng.choice(len(points), p=closest / closest.sum())])
        closest = np.minimum(closest, ((points - centres[-1]) ** 2).sum(axis=1))
    centre = np.array(centres)
    labels = np.zeros(len(points), dtype=np.intp)
    for _ in range(25):
        distances = (centre**2).sum(axis=1) - 2 * points @ centre.T
        labels = distances.argmin(axis=1)
        for c in range(k):
            members = points[labels == c]
            if len(members):
                centre[c] = members.mean(axis=0)
    return labels


def text_like(count: int, dimension: int, seed: int, clusters: int = 64, rank: int = 32) -> Matrix:
    """Draws from the mixture fitted to the embedded sentences (module docstring)."""
    base = embedded_sentences().astype(np.float64)
    if base.shape[1] != dimension:
        raise SystemExit(f"the embeddings have {base.shape[1]} dimensions, not {dimension}")
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    labels = kmeans(base, clusters, np.random.default_rng(0))
    rng = np.random.default_rng(seed)
    models = []
    for c in range(clusters):
        members = base[labels == c]
        mean = members.mean(axis=0)
        _, singular, directions = np.linalg.svd(members - mean, full_matrices=False)
        spread = singular / np.sqrt(max(len(members) - 1, 1))
        top = min(rank, len(spread))
        rest = float((spread[top:] ** 2).sum()) / max(dimension - top, 1)
        models.append((mean, spread[:top], directions[:top], np.sqrt(rest)))
    weights = np.bincount(labels, minlength=clusters) / len(labels)
    out = np.empty((count, dimension), dtype=np.float32)
    for start in range(0, count, 50_000):  # bounded float64 temporaries
        size = min(50_000, count - start)
        picks = rng.choice(clusters, size, p=weights)
        block = np.empty((size, dimension))
        for c in np.unique(picks):
            rows = np.flatnonzero(picks == c)
            mean, spread, directions, rest = models[c]
            coordinates = rng.standard_normal((rows.size, spread.size)) * spread
            noise = rng.standard_normal((rows.size, dimension)) * rest
            block[rows] = mean + coordinates @ directions + noise
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start : start + size] = block
    return out


def gaussian(count: int, dimension: int, seed: int) -> Matrix:
    return np.random.default_rng(seed).standard_normal((count, dimension), dtype=np.float32)


SHAPES = {"text": text_like, "clustered": clustered, "gaussian": gaussian}


def run(shape: str, rows: int, dimension: int, queries: int, repeat: int, kinds: list[str]) -> None:
    data = SHAPES[shape](rows + queries, dimension, 0)
    vectors, probes = data[:rows], data[rows:]
    del data
    ids = [str(i) for i in range(rows)]
    stores = {}
    built = {}
    for kind in kinds:
        store = InMemoryEmbeddingStore(index=IndexOptions(kind))  # type: ignore[arg-type]
        store.add_all(vectors, ids=ids)
        start = time.perf_counter()
        store.search(EmbeddingSearchRequest(probes[0], 10))  # encodes the codes
        built[kind] = time.perf_counter() - start
        stores[kind] = store
    times: dict[str, list[float]] = {kind: [] for kind in kinds}
    found: dict[str, list[set[str]]] = {kind: [] for kind in kinds}
    for round_ in range(repeat):
        for probe in probes:
            request = EmbeddingSearchRequest(probe, 10)
            for kind in kinds:  # interleaved
                start = time.perf_counter()
                matches = stores[kind].search(request).matches
                times[kind].append(time.perf_counter() - start)
                if round_ == 0:
                    found[kind].append({m.embedding_id for m in matches})
    exact_time = statistics.median(times["exact"])
    print(f"\n{shape}: {rows:,} x {dimension}, {queries} queries x {repeat}, top 10")
    header = ("index", "ms/query", "speed-up", "recall@10", "index MB", "/ f32", "build s")
    print("{:8} {:>9} {:>9} {:>10} {:>9} {:>6} {:>8}".format(*header))
    for kind in kinds:
        median = statistics.median(times[kind])
        recall = statistics.mean(
            len(a & b) / 10 for a, b in zip(found["exact"], found[kind], strict=True)
        )
        quantized = stores[kind]._quantized
        size = vectors.nbytes if quantized is None else quantized.nbytes
        print(
            f"{kind:8} {median * 1e3:9.2f} {exact_time / median:8.1f}x {recall:10.3f} "
            f"{size / 1e6:9.1f} {size / vectors.nbytes:6.3f} {built[kind]:8.1f}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--shapes", default="text,clustered,gaussian")
    parser.add_argument("--kinds", default=",".join(KINDS))
    args = parser.parse_args()
    for shape in args.shapes.split(","):
        run(shape, args.rows, args.dim, args.queries, args.repeat, args.kinds.split(","))


if __name__ == "__main__":
    main()
