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
        [--engines ragloom,ragloom-faiss,usearch,hnswlib,faiss,faiss-sqfp16]
        [--overhead BEAM [--overhead-engine ragloom-faiss|ragloom]]

``--engines`` names: ``ragloom[-DTYPE]`` (the store, usearch engine), ``ragloom-faiss[-DTYPE]``
(the store, ``hnsw_engine="faiss"``), ``usearch`` (ragloom's graph, raw), ``usearch-DTYPE``,
``hnswlib``, ``faiss`` (IndexHNSWFlat), ``faiss-sqfp16`` / ``faiss-sqbf16`` (IndexHNSWSQ) and
``faiss[-KIND]-sel`` (walked with an IDSelectorBitmap of every row, to time the selector).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import itertools
import json
import math
import os
import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragloom.core import EmbeddingSearchRequest, InMemoryEmbeddingStore
from ragloom.core.stores._usearch import native_dtype
from ragloom.core.stores.hnsw import HnswIndex
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


def kmeans(
    points: npt.NDArray[np.float64], k: int, rng: np.random.Generator
) -> npt.NDArray[np.intp]:
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


# --- engines: ragloom's HNSW index against the raw engines at matched recall -----------

# ragloom's index on its two engines, then the raw engines: usearch (ragloom's own graph),
# hnswlib, faiss IndexHNSWFlat and faiss-sqfp16 (the graph kind ragloom-faiss walks).
ENGINES = ("ragloom", "ragloom-faiss", "usearch", "hnswlib", "faiss", "faiss-sqfp16")
BEAMS = (10, 12, 16, 20, 24, 32, 40, 48, 64, 96, 128, 192)
RECALLS = (0.95, 0.99)


def cached_text(rows: int, queries: int) -> tuple[Matrix, Matrix, npt.NDArray[np.intp]]:
    """Text-like rows, fresh queries and their exact top 10, cached in ``.bench-cache/``."""
    path = CACHE.parent / f"ann-text-{rows}-{queries}.npz"
    if not path.exists():
        data = text_like(rows + queries, 384, 0)
        truth = np.argsort(-(data[rows:] @ data[:rows].T), axis=1)[:, :10]
        np.savez(path, vectors=data[:rows], probes=data[rows:], truth=truth)
    saved = np.load(path)
    return saved["vectors"], saved["probes"], saved["truth"]


def store_kind(name: str) -> tuple[str, str, str]:
    """The engine, graph dtype and cache folder of a ``ragloom[-faiss][-DTYPE]`` store."""
    engine = "faiss" if name.startswith("ragloom-faiss") else "usearch"
    dtype = name.removeprefix("ragloom").removeprefix("-faiss").lstrip("-") or "auto"
    if engine == "faiss":
        return engine, dtype, f"ragloom-faiss-{'f16' if dtype == 'auto' else dtype}"
    return engine, dtype, f"ragloom-{native_dtype() if dtype == 'auto' else dtype}"


def build_engines(vectors: Matrix, names: list[str]) -> tuple[dict[str, Any], dict[str, float]]:
    """Each engine's graph (M 16, efConstruction 128), built once and kept in
    ``.bench-cache/`` with its build CPU seconds; ``usearch`` is a copy of ragloom's."""
    rows, dimension = vectors.shape
    folder = CACHE.parent / f"ann-graphs-{rows}"
    folder.mkdir(parents=True, exist_ok=True)
    built_file = folder / "build-cpu.json"
    built: dict[str, float] = json.loads(built_file.read_text()) if built_file.exists() else {}
    graphs: dict[str, Any] = {}
    for name in names:
        start = time.process_time()
        if name.startswith("faiss-"):  # raw faiss HNSW: SQfp16, SQbf16, with a selector
            graphs[name] = faiss_engine(name, vectors, folder, built)
        elif name.startswith("ragloom"):  # "ragloom[-DTYPE]", "ragloom-faiss[-DTYPE]"
            engine, dtype, key = store_kind(name)
            saved = folder / key
            if saved.exists():
                store = InMemoryEmbeddingStore.load(saved)
            else:
                options = IndexOptions(
                    "hnsw",
                    connectivity=16,
                    expansion_add=128,
                    hnsw_dtype=dtype,  # type: ignore[arg-type]
                    hnsw_engine=engine,  # type: ignore[arg-type]
                )
                store = InMemoryEmbeddingStore(index=options)
                store.add_all(vectors, ids=[str(i) for i in range(rows)])
                store.search(EmbeddingSearchRequest(vectors[0], 10))  # builds the graph
                built[key] = time.process_time() - start
                store.save(saved)
            store.search(EmbeddingSearchRequest(vectors[0], 10))  # opens a saved graph
            graphs[name] = store
            if key in built:
                built[name] = built[key]
        elif name == "hnswlib":
            import hnswlib

            saved = folder / "hnswlib.bin"
            index = hnswlib.Index(space="ip", dim=dimension)
            if saved.exists():
                index.load_index(str(saved), max_elements=rows)
            else:
                index.init_index(max_elements=rows, ef_construction=128, M=16)
                index.add_items(vectors, np.arange(rows))
                built[name] = time.process_time() - start
                index.save_index(str(saved))
            index.set_num_threads(1)
            graphs[name] = index
        elif name == "faiss":
            import faiss

            faiss.omp_set_num_threads(1)
            saved = folder / "faiss.index"
            if saved.exists():
                index = faiss.read_index(str(saved))
            else:
                faiss.omp_set_num_threads(os.cpu_count() or 1)
                index = faiss.IndexHNSWFlat(dimension, 16, faiss.METRIC_INNER_PRODUCT)
                index.hnsw.efConstruction = 128
                index.add(vectors)
                built[name] = time.process_time() - start
                faiss.write_index(index, str(saved))
                faiss.omp_set_num_threads(1)
            graphs[name] = index
        elif name.startswith("usearch-"):  # a raw usearch graph of another dtype
            from usearch.index import Index  # type: ignore[import-untyped,unused-ignore]

            saved = folder / f"{name}.usearch"
            if saved.exists():
                index = Index.restore(str(saved))
            else:
                dtype = name.split("-")[1]
                index = Index(
                    ndim=dimension, metric="ip", dtype=dtype, connectivity=16, expansion_add=128
                )
                index.add(np.arange(rows, dtype=np.uint64), vectors)
                built[name] = time.process_time() - start
                index.save(str(saved))
            graphs[name] = index
    if "usearch" in names:  # a copy: ragloom sets the beam of its own before each walk
        graphs["usearch"] = graphs["ragloom"]._quantized._graph._index.copy()
    built_file.write_text(json.dumps(built))
    return graphs, built


FAISS_KINDS = {"": "flat", "sqfp16": "QT_fp16", "sqbf16": "QT_bf16"}


def faiss_graph(kind: str, vectors: Matrix, folder: Path, built: dict[str, float]) -> Any:
    """A faiss HNSW graph (M 16, efConstruction 128) of the unit ``vectors``: ``""``
    Flat (float32), ``"sqfp16"`` / ``"sqbf16"`` scalar-quantized codes; cached."""
    faiss: Any = importlib.import_module("faiss")  # untyped use: its stubs lack some names

    key = "faiss" if not kind else f"faiss-{kind}"
    saved = folder / f"{key}.index"
    if saved.exists():
        faiss.omp_set_num_threads(1)
        return faiss.read_index(str(saved))
    start = time.process_time()
    faiss.omp_set_num_threads(os.cpu_count() or 1)
    dimension = vectors.shape[1]
    if not kind:
        index = faiss.IndexHNSWFlat(dimension, 16, faiss.METRIC_INNER_PRODUCT)
    else:
        qtype = getattr(faiss.ScalarQuantizer, FAISS_KINDS[kind])
        index = faiss.IndexHNSWSQ(dimension, qtype, 16, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = 128
    index.add(vectors)
    built[key] = time.process_time() - start
    faiss.write_index(index, str(saved))
    faiss.omp_set_num_threads(1)
    return index


def faiss_engine(name: str, vectors: Matrix, folder: Path, built: dict[str, float]) -> Any:
    """``faiss[-KIND][-sel]``: a raw faiss graph (``-sel``: walked with an
    IDSelectorBitmap of live rows, all set, to time the selector)."""
    parts = name.split("-")
    selector = parts[-1] == "sel"
    kinds = [p for p in parts[1:] if p != "sel"]
    kind = kinds[0] if kinds else ""
    index = faiss_graph(kind, vectors, folder, built)
    key = "faiss" if not kind else f"faiss-{kind}"
    if key in built:
        built[name] = built[key]
    return (index, selector)


def searcher(name: str, graph: Any, beam: int) -> Callable[[Matrix], list[int]]:
    """One top-10 query of ``name`` at search beam ``beam`` (ids as ints)."""
    if name.startswith("faiss-"):
        faiss: Any = importlib.import_module("faiss")
        index, selector = graph
        params = faiss.SearchParametersHNSW(efSearch=beam)
        if selector:
            bitmap = np.full(-(-index.ntotal // 8), 0xFF, dtype=np.uint8)
            params.sel = faiss.IDSelectorBitmap(index.ntotal, faiss.swig_ptr(bitmap))
            params._keep = bitmap  # alive as long as params
        return lambda probe: index.search(probe[None], 10, params=params)[1][0].tolist()
    if name.startswith("ragloom"):
        graph._quantized.options = dataclasses.replace(graph._quantized.options, expansion=beam)
        return lambda probe: [
            int(m.embedding_id) for m in graph.search(EmbeddingSearchRequest(probe, 10)).matches
        ]
    if name.startswith("usearch"):
        graph.expansion_search = beam
        return lambda probe: graph.search(probe, 10).keys.tolist()
    if name == "hnswlib":
        graph.set_ef(beam)
        return lambda probe: graph.knn_query(probe, k=10)[0][0].tolist()
    graph.hnsw.efSearch = beam
    return lambda probe: graph.search(probe[None], 10)[1][0].tolist()


def engines(rows: int, queries: int, repeat: int, names: list[str]) -> dict[str, Any]:
    """ragloom's HNSW search against usearch (its own graph), hnswlib and faiss: CPU and
    wall ms a query and recall@10 at each beam, queries interleaved engine by engine
    (each round starting with the next engine), then the CPU ratios at matched recall."""
    vectors, probes, truth = cached_text(rows, queries)
    graphs, built = build_engines(vectors, names)
    load = os.getloadavg()[0]
    points: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    for beam in BEAMS:
        runs = {name: searcher(name, graphs[name], beam) for name in names}
        cpu = {name: 0.0 for name in names}
        wall = {name: 0.0 for name in names}
        hits = {name: 0 for name in names}
        for round_ in range(repeat):
            for q, probe in enumerate(probes):
                shift = (q + round_) % len(names)
                for name in names[shift:] + names[:shift]:
                    start_cpu, start = time.thread_time(), time.perf_counter()
                    found = runs[name](probe)
                    cpu[name] += time.thread_time() - start_cpu
                    wall[name] += time.perf_counter() - start
                    if round_ == 0:
                        hits[name] += len(set(found) & set(truth[q].tolist()))
        count = repeat * len(probes)
        for name in names:
            points[name].append(
                {
                    "beam": beam,
                    "recall": hits[name] / (10 * len(probes)),
                    "cpu_ms": 1e3 * cpu[name] / count,
                    "wall_ms": 1e3 * wall[name] / count,
                }
            )
    load = (load + os.getloadavg()[0]) / 2
    print(f"\ntext: {rows:,} x 384, {queries} queries x {repeat}, top 10, load {load:.1f}")
    print("{:8} {:>5} {:>7} {:>7} {:>8}".format("engine", "beam", "recall", "CPU ms", "wall ms"))
    for name in names:
        for point in points[name]:
            print(
                f"{name:8} {point['beam']:5} {point['recall']:7.3f} "
                f"{point['cpu_ms']:7.3f} {point['wall_ms']:8.3f}"
            )
    matched = {str(r): {n: cheapest(points[n], r) for n in names} for r in RECALLS}
    for recall, best in matched.items():
        shown = "  ".join(
            f"{n} {p['cpu_ms']:.3f} (beam {p['beam']})" if p else f"{n} -" for n, p in best.items()
        )
        ratios = "  ".join(
            f"{n} {raw_ratio(best, n):.2f}x" for n in names if n.startswith("ragloom")
        )
        print(f"recall >= {recall}: CPU ms {shown}; / best raw: {ratios}")
    built = {name: built[name] for name in names if name in built}
    print("build CPU s: " + "  ".join(f"{n} {s:.1f}" for n, s in built.items()))
    return {"load": load, "points": points, "matched": matched, "build_cpu_s": built}


def overhead(
    rows: int, queries: int, repeat: int, beam: int, engine: str = "ragloom-faiss"
) -> dict[str, float]:
    """What the HNSW store adds to its own graph walk, a query (thread CPU us, top 10, beam
    ``beam``, text rows, ``engine`` ragloom or ragloom-faiss), with caches as cold as in
    ``--engines``: five nested calls, each on its own copy of the saved store (its own
    matrix, graph and ids, so that no stage warms another's data), run in a random order
    a query interleaved with raw faiss walks (Flat and SQfp16): the store's graph walk, the
    index's ``candidates`` (plus the key-to-row map), the store's ``_top_k`` (plus the
    query's norm and unit vector, the exact rescoring and the ranking), ``search`` with a
    ready request (plus lock, checks, ids and result objects) and ``search`` of a request
    made from the array (plus the request and its query's validation). The differences of
    the means are the stages' costs; the spread of a difference is given as its standard
    error (paired by query)."""
    vectors, probes, _ = cached_text(rows, queries)
    graphs, _ = build_engines(vectors, [engine, "faiss", "faiss-sqfp16"])
    saved = CACHE.parent / f"ann-graphs-{rows}" / store_kind(engine)[2]
    units = probes / np.linalg.norm(probes, axis=1, keepdims=True)
    requests = [EmbeddingSearchRequest(probe, 10) for probe in probes]

    def copy() -> InMemoryEmbeddingStore:
        store = InMemoryEmbeddingStore.load(saved)
        searcher(engine, store, beam)  # sets the beam
        store.search(requests[0])  # opens the graph
        return store

    walk, cand, top_k, search, request = (copy() for _ in range(5))
    index, walked = cand._quantized, walk._quantized
    assert isinstance(index, HnswIndex)
    assert isinstance(walked, HnswIndex)
    graph = walked._graph
    assert graph is not None
    matrix, inv_norms, size = cand._matrix, cand._inv_norms, cand._size
    stages: dict[str, Callable[[int], object]] = {
        "walk": lambda q: graph.search(units[q], 10, beam),
        "candidates": lambda q: index.candidates(matrix, inv_norms, size, units[q], None, 10),
        "top_k": lambda q: top_k._top_k(probes[q], None, requests[q]),
        "search": lambda q: search.search(requests[q]),
        "request": lambda q: request.search(EmbeddingSearchRequest(probes[q], 10)),
    }
    raw = [searcher(name, graphs[name], beam) for name in ("faiss", "faiss-sqfp16")]
    runs: dict[str, Callable[[int], object]] = {
        **stages,
        "faiss": lambda q: raw[0](probes[q]),
        "sqfp16": lambda q: raw[1](probes[q]),
    }
    names = list(runs)
    cpu = {name: np.zeros((repeat, len(probes))) for name in names}
    rng = np.random.default_rng(0)
    load = os.getloadavg()[0]
    for round_ in range(repeat):
        for q in range(len(probes)):
            for name in rng.permutation(names).tolist():
                start = time.thread_time_ns()
                runs[name](q)
                cpu[name][round_, q] = (time.thread_time_ns() - start) / 1e3
    us = {name: float(cpu[name].mean()) for name in names}
    load = (load + os.getloadavg()[0]) / 2
    print(
        f"\nstore overhead ({engine}): {rows:,} text rows, {queries} queries x {repeat}, "
        f"beam {beam}, load {load:.1f}; thread CPU us a query, caches cold"
    )
    print(
        f"walk {us['walk']:.1f} (raw faiss SQfp16 {us['sqfp16']:.1f}, Flat {us['faiss']:.1f}), "
        f"store adds {us['request'] - us['walk']:.1f}: "
        + ", ".join(
            f"{name} {us[name] - us[before]:+.1f} (se "
            f"{float((cpu[name] - cpu[before]).std()) / math.sqrt(cpu[name].size):.1f})"
            for before, name in itertools.pairwise(list(stages))
        )
    )
    return {"load": load, **us}


def cheapest(points: list[dict[str, float]], recall: float) -> dict[str, float] | None:
    """CPU time a query at ``recall`` (None: no beam reaches it), interpolated linearly
    in recall between the last beam below it and the first reaching it (``beam``: that
    one); CPU times measured at larger beams that reach it cheaper (noise) win."""
    ordered = sorted(points, key=lambda p: p["beam"])
    reached = [i for i, p in enumerate(ordered) if p["recall"] >= recall]
    if not reached:
        return None
    first = ordered[reached[0]]
    cpu = first["cpu_ms"]
    if reached[0] > 0:
        below = ordered[reached[0] - 1]
        share = (recall - below["recall"]) / (first["recall"] - below["recall"])
        cpu = below["cpu_ms"] + share * (first["cpu_ms"] - below["cpu_ms"])
    best = min((ordered[i] for i in reached), key=lambda p: p["cpu_ms"])
    if best["cpu_ms"] < cpu:
        return best
    return {**first, "cpu_ms": cpu}


RAW = ("usearch", "hnswlib", "faiss")  # the goal's baselines: the best of these


def raw_ratio(found: dict[str, dict[str, float] | None], ours: str = "ragloom") -> float:
    """``ours``'s CPU time a query over the best raw engine's, at one matched recall."""
    raw = [p["cpu_ms"] for n, p in found.items() if n in RAW and p]
    mine = found.get(ours)
    return mine["cpu_ms"] / min(raw) if mine and raw else math.nan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--shapes", default="text,clustered,gaussian")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument(
        "--engines",
        nargs="?",
        const=",".join(ENGINES),
        help="instead: ragloom's hnsw against raw engines on text (in .bench-venv/)",
    )
    parser.add_argument(
        "--overhead",
        type=int,
        metavar="BEAM",
        help="instead: what the HNSW store adds to its graph walk at this beam (text rows)",
    )
    parser.add_argument(
        "--overhead-engine",
        default="ragloom-faiss",
        help="the store --overhead times: ragloom-faiss (default) or ragloom (usearch)",
    )
    args = parser.parse_args()
    if args.overhead:
        overhead(args.rows, args.queries, args.repeat, args.overhead, args.overhead_engine)
        return
    if args.engines:
        engines(args.rows, args.queries, args.repeat, args.engines.split(","))
        return
    for shape in args.shapes.split(","):
        run(shape, args.rows, args.dim, args.queries, args.repeat, args.kinds.split(","))


if __name__ == "__main__":
    main()
