"""Benchmark RayIngestor against core's single-process EmbeddingStoreIngestor, in one run.

5,000 small documents (one segment each, ~25 words), embedded with the default ONNX model
(all-MiniLM-L6-v2 quantized, ONE onnxruntime thread per model, so a worker is a core) and
written into the real pgvector server (``scripts/services/pgvector.sh``, or ``--dsn``):

- ``single``: core's ``EmbeddingStoreIngestor`` in this process (the baseline);
- ``ray-1``, ``ray-2``: ``RayIngestor`` with 1 and 2 embedding actors on a local Ray
  cluster (``ray.init`` on 127.0.0.1; split tasks use the spare logical CPUs).

Configurations are interleaved round by round (``--rounds``); each writes into a fresh
table. Reported: docs/s per configuration (median over rounds), the speed-up of ray-2 over
ray-1, and the serial fraction ``s`` that Amdahl's law ``T(n) = T(1) * (s + (1 - s) / n)``
gives from them. ``--plot PNG`` draws docs/s against workers, measured and projected to N
machines with that ``s``. The machine's cores may be shared: numbers are noisy.

    .venv/bin/python scripts/bench/bench_ray_ingest.py [--documents 5000] [--rounds 1]
        [--json out.json] [--plot docs/img/ray-ingest-scaling.png]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
import ray
from psycopg import sql

from ragloom.core import Document, EmbeddingStoreIngestor, IngestionResult, document_splitters
from ragloom.embeddings.onnx import AllMiniLmL6V2QuantizedEmbeddingModel
from ragloom.ingestors.ray import RayIngestor
from ragloom.stores.pgvector import PgVectorEmbeddingStore

DEFAULT_DSN = "postgresql://postgres@127.0.0.1:55433/postgres"
SENTENCE = (
    "ray data splits documents into blocks and actors embed them while the store keeps "
    "every vector with its segment metadata so retrieval finds the passage again later"
)
WORDS = SENTENCE.split()


def corpus(count: int) -> list[Document]:
    """``count`` distinct small documents of about 25 words (one segment each)."""
    return [
        Document(
            " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(24)) + f" item {i}.",
            {"document_id": f"doc-{i}"},
        )
        for i in range(count)
    ]


def model() -> AllMiniLmL6V2QuantizedEmbeddingModel:
    """The default ONNX model on one thread: one worker = one core."""
    return AllMiniLmL6V2QuantizedEmbeddingModel(intra_op_threads=1, inter_op_threads=1)


def store(dsn: str, table: str) -> PgVectorEmbeddingStore:
    return PgVectorEmbeddingStore(dsn, table, dimension=384, pool_size=2)


def check(result: IngestionResult, documents: list[Document]) -> None:
    """Every document ingested, one segment each."""
    if result.failures or len(result.ids) != len(documents):
        raise RuntimeError(f"ingestion incomplete: {result.failures[:3]}")


def run_single(dsn: str, table: str, documents: list[Document]) -> float:
    with store(dsn, table) as target:
        ingestor = EmbeddingStoreIngestor(
            target, model(), document_splitter=document_splitters.recursive(500, 0)
        )
        start = time.perf_counter()
        result = ingestor.ingest(documents)
        elapsed = time.perf_counter() - start
    check(result, documents)
    return elapsed


def run_ray(workers: int, dsn: str, table: str, documents: list[Document]) -> float:
    ingestor = RayIngestor(
        functools.partial(store, dsn, table),
        model,
        document_splitter=document_splitters.recursive(500, 0),
        concurrency=workers,
        num_cpus=1.0,
        split_num_cpus=0.5,
        documents_per_batch=250,
    )
    start = time.perf_counter()
    result = ingestor.ingest(documents)
    elapsed = time.perf_counter() - start
    check(result, documents)
    return elapsed


def drop(dsn: str, table: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))


def amdahl_serial_fraction(t1: float, t2: float) -> float:
    """``s`` from T(2) = T(1) * (s + (1 - s) / 2), clamped to [0, 1]."""
    return min(1.0, max(0.0, 2.0 * t2 / t1 - 1.0))


def plot(path: str, report: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    single = report["docs_per_s"]["single"]
    measured = [report["docs_per_s"]["ray-1"], report["docs_per_s"]["ray-2"]]
    s = report["serial_fraction"]
    base = measured[0]
    workers = [1, 2, 4, 8, 16, 32, 64]
    projected = [base / (s + (1 - s) / n) for n in workers]
    figure, axis = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    axis.plot(workers, [base * n for n in workers], ":", color="grey", label="linear")
    axis.plot(workers, projected, "--", label=f"Amdahl, serial fraction s = {s:.2f}")
    axis.plot([1, 2], measured, "o-", label="RayIngestor, measured")
    axis.axhline(single, color="black", linewidth=0.8, label="single process, measured")
    axis.set_xscale("log", base=2)
    axis.set_yscale("log")
    axis.set_xticks(workers, [str(n) for n in workers])
    axis.set_xlabel("embedding workers (1 core each)")
    axis.set_ylabel("documents / s")
    axis.set_title(f"{report['documents']} small documents, MiniLM ONNX, pgvector")
    axis.legend(fontsize=8)
    axis.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--dsn", default=os.environ.get("RAGLOOM_PG_DSN", DEFAULT_DSN))
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--plot", help="draw the scaling plot into this PNG/SVG file")
    args = parser.parse_args()

    documents = corpus(args.documents)
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    model().embed_all(["warm up the model files"])  # downloads/caches outside the timings
    runs: dict[str, Callable[[str], float]] = {
        "single": lambda table: run_single(args.dsn, table, documents),
        "ray-1": lambda table: run_ray(1, args.dsn, table, documents),
        "ray-2": lambda table: run_ray(2, args.dsn, table, documents),
    }
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    try:
        for round_ in range(args.rounds):
            for name, run in runs.items():
                table = f"bench_ray_{uuid.uuid4().hex[:8]}"
                try:
                    seconds[name].append(run(table))
                finally:
                    drop(args.dsn, table)
                rate = args.documents / seconds[name][-1]
                print(f"round {round_ + 1} {name:6s} {seconds[name][-1]:7.1f} s {rate:7.1f} docs/s")
    finally:
        ray.shutdown()
    median = {name: statistics.median(values) for name, values in seconds.items()}
    report = {
        "documents": args.documents,
        "rounds": args.rounds,
        "cpu_count": os.cpu_count(),
        "load_average": os.getloadavg(),
        "seconds": seconds,
        "docs_per_s": {name: args.documents / value for name, value in median.items()},
        "speedup_ray2_over_ray1": median["ray-1"] / median["ray-2"],
        "ray1_over_single": median["single"] / median["ray-1"],
        "serial_fraction": amdahl_serial_fraction(median["ray-1"], median["ray-2"]),
    }
    print(json.dumps(report, indent=2))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(report, out, indent=2)
    if args.plot:
        plot(args.plot, report)


if __name__ == "__main__":
    main()
