"""Benchmark InMemoryEmbeddingStore ingestion and persistence against numpy + pickle.

Seeded unit vectors (100k x 384 float32 by default) with a short text and two metadata
keys (``tenant``: 10 distinct strings, ``index``: an int) a row. Each measure runs ours
and the baseline alternately ``--repeat`` times (BLAS pinned to one thread) and prints the
median ratio with its min-max spread:

- ingest:  build the TextSegments and ``store.add_all(matrix, segments)`` vs building the
           float32 matrix (a copy) and the lists of texts and metadata dicts (goal <= 1.5x)
- save:    ``store.save(dir)`` vs ``np.save`` + ``pickle.dump`` of ids, texts and metadata,
           both fsynced (goal <= 1.3x)
- load:    ``InMemoryEmbeddingStore.load(dir)`` vs ``np.load`` + ``pickle.load`` (goal <= 1.3x)
- mmap:    ``load(dir, mmap=True)`` open time (goal < 50 ms at 1M x 384) and open + first
           search vs numpy on ``np.load(mmap_mode="r")``

Search at N = 10k against numpy is in ``bench_in_memory_store.py --rows 10000``.

    .venv/bin/python scripts/bench/bench_store_persistence.py [--rows 100000] [--dim 384]
        [--only ingest,save,load,mmap] [--repeat 5]
"""

# ruff: noqa: E402  (BLAS reads its thread count when numpy loads: set it first)
from __future__ import annotations

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # before numpy loads BLAS: no thread noise

import argparse
import gc
import pickle
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragloom.core import Embedding, EmbeddingSearchRequest, InMemoryEmbeddingStore, TextSegment

Matrix = npt.NDArray[np.float32]
Row = tuple[str, float, float, float, float, float]  # measure, ours, theirs, lo, hi, goal


def paired(
    ours: Callable[[], Any],
    theirs: Callable[[], Any],
    repeat: int,
    setup: Callable[[], Any] | None = None,
) -> tuple[float, float, float, float]:
    """Median times of ``ours`` and ``theirs`` run alternately (sharing the noise), and the
    min and max of the per-round ratios. ``setup`` runs untimed before every run; what a
    run returns is freed untimed."""
    our_times: list[float] = []
    their_times: list[float] = []
    for _ in range(repeat):
        for run, times in ((theirs, their_times), (ours, our_times)):
            if setup is not None:
                setup()
            gc.collect()
            start = time.perf_counter()
            kept = run()
            times.append(time.perf_counter() - start)
            del kept
    ratios = [o / t for o, t in zip(our_times, their_times, strict=True)]
    return statistics.median(our_times), statistics.median(their_times), min(ratios), max(ratios)


def fsynced(path: Path, write: Callable[[Any], Any]) -> None:
    with open(path, "wb") as file:
        write(file)
        file.flush()
        os.fsync(file.fileno())


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--repeat", type=int, default=5, help="paired runs per measure")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--only", default="ingest,save,load,mmap")
    parser.add_argument("--dir", default=None, help="where to save (default: a temp dir)")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    if not parts <= {"ingest", "save", "load", "mmap"}:
        parser.error(f"--only takes ingest, save, load and mmap, got {args.only!r}")

    rng = np.random.default_rng(args.seed)
    matrix = rng.standard_normal((args.rows, args.dim), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    tenants = [f"tenant-{t}" for t in rng.integers(0, 10, args.rows).tolist()]
    texts = [f"segment {i} of a document about topic {i % 97}" for i in range(args.rows)]
    ids = [f"doc-{i}" for i in range(args.rows)]
    print(f"{args.rows} rows x {args.dim} dims = {matrix.nbytes / 1e6:.0f} MB of vectors")
    results: list[Row] = []

    def ingest_ours() -> InMemoryEmbeddingStore:
        segments = [
            TextSegment(text, {"tenant": tenant, "index": i})
            for i, (text, tenant) in enumerate(zip(texts, tenants, strict=True))
        ]
        store = InMemoryEmbeddingStore()
        store.add_all(matrix, segments, ids=ids)
        return store

    def ingest_numpy() -> tuple[Matrix, list[str], list[dict[str, Any]]]:
        metadata = [{"tenant": tenant, "index": i} for i, tenant in enumerate(tenants)]
        return matrix.copy(), list(texts), metadata

    if "ingest" in parts:
        results.append(("ingest (ms)", *paired(ingest_ours, ingest_numpy, args.repeat), 1.5))

    root = Path(args.dir or tempfile.mkdtemp(prefix="ragloom-bench-"))
    ours_dir, theirs_dir = root / "store", root / "baseline"
    store = ingest_ours() if parts & {"save", "load", "mmap"} else None
    metadata = [{"tenant": tenant, "index": i} for i, tenant in enumerate(tenants)]

    def clean() -> None:
        shutil.rmtree(ours_dir, ignore_errors=True)
        shutil.rmtree(theirs_dir, ignore_errors=True)
        theirs_dir.mkdir(parents=True)

    def save_numpy() -> None:
        fsynced(theirs_dir / "vectors.npy", lambda f: np.save(f, matrix))
        fsynced(theirs_dir / "records.pkl", lambda f: pickle.dump((ids, texts, metadata), f))

    try:
        if store is not None and "save" in parts:
            timing = paired(lambda: store.save(ours_dir), save_numpy, args.repeat, setup=clean)
            results.append(("save (ms)", *timing, 1.3))
        if store is not None and parts & {"load", "mmap"}:
            clean()
            store.save(ours_dir)
            save_numpy()

        def load_numpy() -> tuple[Matrix, Any]:
            vectors = np.load(theirs_dir / "vectors.npy")
            with open(theirs_dir / "records.pkl", "rb") as file:
                return vectors, pickle.load(file)

        if "load" in parts:
            timing = paired(lambda: InMemoryEmbeddingStore.load(ours_dir), load_numpy, args.repeat)
            results.append(("load (ms)", *timing, 1.3))
        if "mmap" in parts:
            results += bench_mmap(ours_dir, theirs_dir, args.dim, args.repeat)
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)

    print(f"\n{'measure':34} {'ragloom':>9} {'numpy':>9} {'ratio':>7} {'spread':>13} {'goal':>8}")
    for name, ours, theirs, lo, hi, goal in results:
        if theirs:  # a ratio to the baseline, and its goal
            ratio, spread, goal_text = f"{ours / theirs:6.2f}x", f"{lo:.2f}-{hi:.2f}", f"<={goal}"
            met = ours / theirs <= goal
        else:  # an absolute time; its goal in ms
            ratio, spread, goal_text = "-", "-", f"<{goal:g}ms"
            met = ours * 1e3 < goal
        verdict = "" if not goal else ("ok" if met else "MISSED")
        baseline = f"{theirs * 1e3:9.1f}" if theirs else f"{'-':>9}"
        print(
            f"{name:34} {ours * 1e3:9.1f} {baseline} {ratio:>7} {spread:>13} "
            f"{goal_text:>8} {verdict}"
        )


def bench_mmap(ours_dir: Path, theirs_dir: Path, dim: int, repeat: int) -> list[Row]:
    """Open time of a memory-mapped load, and its first search vs numpy on a memmap."""
    opens = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        store = InMemoryEmbeddingStore.load(ours_dir, mmap=True)
        opens.append(time.perf_counter() - start)
        del store
    query = np.random.default_rng(7).standard_normal(dim, dtype=np.float32)

    def first_search_ours() -> object:
        store = InMemoryEmbeddingStore.load(ours_dir, mmap=True)
        return store.search(EmbeddingSearchRequest(Embedding(query), 10))

    def first_search_numpy() -> object:
        vectors = np.load(theirs_dir / "vectors.npy", mmap_mode="r")
        scores = vectors @ query
        best = np.argpartition(-scores, 10)[:10]
        return best[np.argsort(-scores[best])]

    timing = paired(first_search_ours, first_search_numpy, repeat)
    return [
        ("mmap open (ms)", statistics.median(opens), 0.0, 0.0, 0.0, 50.0),
        ("mmap open + first search (ms)", *timing, 0.0),
    ]


if __name__ == "__main__":
    main()
