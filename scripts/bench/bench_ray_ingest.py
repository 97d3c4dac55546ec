"""Benchmark RayIngestor against core's single-process EmbeddingStoreIngestor, in one run.

5,000 small documents (one segment each, ~25 words), embedded with the default ONNX model
(all-MiniLM-L6-v2 quantized, ONE onnxruntime thread per model, so a worker is a core) and
written into the real pgvector server (``scripts/services/pgvector.sh``, or ``--dsn``):

- ``single``: core's ``EmbeddingStoreIngestor`` in this process (the baseline);
- ``ray-1``, ``ray-2``: ``RayIngestor`` with 1 and 2 embedding actors (1 CPU each) on a
  local Ray cluster: by default one started in this process (``ray.init`` on 127.0.0.1,
  4 logical CPUs; split tasks use the spare ones); with ``--address`` (or ``RAY_ADDRESS``)
  a running one, e.g. the head and worker node of ``scripts/services/ray.sh``, started
  with 2 logical CPUs per node (``RAGLOOM_RAY_HEAD_CPUS=2 RAGLOOM_RAY_WORKER_CPUS=2``)
  and its ``driver.env`` sourced (see docs/distributed-ingestion.md).

Configurations are interleaved round by round (``--rounds``); each writes into a fresh
table. Measured per run: wall-clock docs/s, and CPU seconds by where they were spent,
which stay meaningful when other programs share the cores (wall-clock does not):

- ``workers``: the embedding actors' processes (each actor's model records its process
  CPU time after every batch into ``--cpu-dir``): the part that scales with workers;
- ``driver``: this process (dataset planning, pickling, collecting the outcomes);
- ``control``: the cluster's raylet and GCS server processes.

The driver's and control plane's CPU is part per document (serial work) and part per
second of run time (Ray's scheduling loop and heartbeats poll): fitting
``driver + control = a * documents + b * seconds`` over the Ray runs (of different lengths)
separates them. Amdahl's serial fraction is then ``s = a * documents / (a * documents +
workers)``; ``s_upper`` counts all of the fastest Ray run's driver and control CPU as
serial (a bound that holds without the fit). ``--plot`` draws docs/s against workers:
measured, and projected for N single-core workers (or machines) as ``documents /
(serial + workers / N)`` with each ``s``: what an uncontended cluster would give.
``--from-json`` redraws the plot of an earlier run.

    .venv/bin/python scripts/bench/bench_ray_ingest.py [--documents 5000] [--rounds 1]
        [--address 127.0.0.1:46379] [--json out.json] [--plot docs/img/ray-ingest-scaling.png]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import psycopg
import ray
from psycopg import sql

from ragloom.core import (
    Document,
    EmbeddingStoreIngestor,
    IngestionResult,
    TextSegment,
    document_splitters,
)
from ragloom.core.embedding import EmbeddingResult
from ragloom.embeddings.onnx import AllMiniLmL6V2QuantizedEmbeddingModel
from ragloom.ingestors.ray import RayIngestor
from ragloom.stores.pgvector import PgVectorEmbeddingStore

DEFAULT_DSN = "postgresql://postgres@127.0.0.1:55433/postgres"
SENTENCE = (
    "ray data splits documents into blocks and actors embed them while the store keeps "
    "every vector with its segment metadata so retrieval finds the passage again later"
)
WORDS = SENTENCE.split()
CONTROL_PLANE = ("raylet", "gcs_server")


def corpus(count: int) -> list[Document]:
    """``count`` distinct small documents of about 25 words (one segment each)."""
    return [
        Document(
            " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(24)) + f" item {i}.",
            {"document_id": f"doc-{i}"},
        )
        for i in range(count)
    ]


class CpuRecordingModel(AllMiniLmL6V2QuantizedEmbeddingModel):
    """The default model on one thread (one worker = one core) that writes its process's
    CPU seconds to ``<directory>/<pid>`` after every call (read by the driver)."""

    def __init__(self, directory: str) -> None:
        super().__init__(intra_op_threads=1, inter_op_threads=1)
        self.record = Path(directory, str(os.getpid()))
        self.start = time.process_time()  # the actor's start-up is not embedding work

    def embed_all(self, texts: Sequence[str | TextSegment]) -> EmbeddingResult:
        result = super().embed_all(texts)
        self.record.write_text(str(time.process_time() - self.start))
        return result


def store(dsn: str, table: str) -> PgVectorEmbeddingStore:
    return PgVectorEmbeddingStore(dsn, table, dimension=384, pool_size=2)


def check(result: IngestionResult, documents: list[Document]) -> None:
    """Every document ingested, one segment each."""
    if result.failures or len(result.ids) != len(documents):
        raise RuntimeError(f"ingestion incomplete: {result.failures[:3]}")


def control_plane_cpu() -> float:
    """CPU seconds so far of the connected cluster's raylets and GCS server (children of
    this driver, or the processes of scripts/services/ray.sh: found by the GCS address)."""
    address = ray.get_runtime_context().gcs_address
    marks = (f"--gcs-address={address}", f"--gcs_server_port={address.rsplit(':', 1)[1]}")
    total = 0.0
    for process in psutil.process_iter(["name", "cmdline"]):
        try:
            if process.info["name"] in CONTROL_PLANE and any(
                mark in (process.info["cmdline"] or []) for mark in marks
            ):
                times = process.cpu_times()
                total += times.user + times.system
        except psutil.Error:
            continue
    return total


def run_single(dsn: str, table: str, documents: list[Document], cpu_dir: str) -> dict[str, float]:
    with store(dsn, table) as target:
        ingestor = EmbeddingStoreIngestor(
            target,
            CpuRecordingModel(cpu_dir),
            document_splitter=document_splitters.recursive(500, 0),
        )
        start, cpu = time.perf_counter(), time.process_time()
        result = ingestor.ingest(documents)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    check(result, documents)
    return {"seconds": elapsed, "workers": 0.0, "driver": cpu, "control": 0.0}


def run_ray(
    workers: int, dsn: str, table: str, documents: list[Document], cpu_dir: str
) -> dict[str, float]:
    ingestor = RayIngestor(
        functools.partial(store, dsn, table),
        functools.partial(CpuRecordingModel, cpu_dir),
        document_splitter=document_splitters.recursive(500, 0),
        concurrency=workers,
        num_cpus=1.0,
        split_num_cpus=0.5,
        documents_per_batch=250,
    )
    control = control_plane_cpu()
    start, cpu = time.perf_counter(), time.process_time()
    result = ingestor.ingest(documents)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    check(result, documents)
    actors = sum(float(path.read_text()) for path in Path(cpu_dir).iterdir())
    return {
        "seconds": elapsed,
        "workers": actors,
        "driver": cpu,
        "control": control_plane_cpu() - control,
    }


def drop(dsn: str, table: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))


def projected_docs_per_s(documents: int, serial: float, parallel: float, n: int) -> float:
    """Amdahl: the rate with ``n`` uncontended single-core workers."""
    return documents / (serial + parallel / n)


def serial_fit(runs: list[dict[str, float]], documents: int) -> tuple[float, float]:
    """``(a * documents, b)`` of ``driver + control = a * documents + b * seconds`` fitted
    by least squares to the Ray runs (each term kept >= 0)."""
    seconds = np.array([run["seconds"] for run in runs])
    overhead = np.array([run["driver"] + run["control"] for run in runs])
    system = np.column_stack([np.full(len(runs), float(documents)), seconds])
    (a, b), *_ = np.linalg.lstsq(system, overhead, rcond=None)
    if a < 0:  # all per second
        return 0.0, float(overhead @ seconds / (seconds @ seconds))
    if b < 0:  # all per document
        return float(overhead.mean()), 0.0
    return float(a) * documents, float(b)


def analyse(documents: int, measured: dict[str, list[dict[str, float]]]) -> dict[str, Any]:
    """The report: medians, rates, the serial CPU split and the projections."""
    cpu = {
        name: {part: statistics.median(run[part] for run in runs) for part in runs[0]}
        for name, runs in measured.items()
    }
    ray_runs = measured["ray-1"] + measured["ray-2"]
    serial, per_second = serial_fit(ray_runs, documents)
    parallel = statistics.median(run["workers"] for run in ray_runs)
    fastest = min(ray_runs, key=lambda run: run["seconds"])
    overhead = fastest["driver"] + fastest["control"]
    upper = overhead / (overhead + fastest["workers"])
    return {
        "documents": documents,
        "rounds": len(measured["single"]),
        "cpu_count": os.cpu_count(),
        "runs": measured,
        "cpu_s": cpu,
        "docs_per_s": {name: documents / parts["seconds"] for name, parts in cpu.items()},
        "serial_cpu_s": serial,
        "overhead_cores": per_second,
        "parallel_cpu_s": parallel,
        "serial_fraction": serial / (serial + parallel),
        "serial_fraction_upper": upper,
        "projected_docs_per_s": {
            str(n): projected_docs_per_s(documents, serial, parallel, n) for n in (1, 2, 8, 64)
        },
        "projected_docs_per_s_upper": {
            str(n): projected_docs_per_s(documents, overhead, parallel, n) for n in (1, 2, 8, 64)
        },
    }


def plot(path: str, report: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    documents = report["documents"]
    serial, parallel = report["serial_cpu_s"], report["parallel_cpu_s"]
    upper = report["serial_fraction_upper"]
    workers = [1, 2, 4, 8, 16, 32, 64, 128]
    projected = [projected_docs_per_s(documents, serial, parallel, n) for n in workers]
    bound = upper * parallel / (1 - upper)
    pessimistic = [projected_docs_per_s(documents, bound, parallel, n) for n in workers]
    figure, (rate, cost) = plt.subplots(1, 2, figsize=(10, 4.0), dpi=110)
    rate.plot(workers, [projected[0] * n for n in workers], ":", color="grey", label="linear")
    fitted = f"Amdahl, fitted serial CPU, s = {report['serial_fraction']:.4f}"
    rate.plot(workers, projected, "--", label=fitted)
    rate.plot(workers, pessimistic, "-.", label=f"Amdahl, upper bound s = {upper:.3f}")
    measured = [report["docs_per_s"]["ray-1"], report["docs_per_s"]["ray-2"]]
    rate.plot([1, 2], measured, "o-", label="RayIngestor, measured (shared cores)")
    rate.axhline(
        report["docs_per_s"]["single"], color="black", lw=0.8, label="single process, measured"
    )
    rate.set_xscale("log", base=2)
    rate.set_yscale("log")
    rate.set_xticks(workers, [str(n) for n in workers])
    rate.set_xlabel("embedding workers (1 core each)")
    rate.set_ylabel("documents / s")
    rate.legend(fontsize=7)
    rate.grid(True, which="both", alpha=0.3)
    names = ["single", "ray-1", "ray-2"]
    bottom = [0.0] * len(names)
    for part in ("workers", "driver", "control"):
        values = [1000 * report["cpu_s"][name][part] / documents for name in names]
        cost.bar(names, values, bottom=bottom, label=part)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    cost.set_ylabel("CPU seconds per 1,000 documents")
    cost.legend(fontsize=7)
    figure.suptitle(f"{documents} small documents, MiniLM ONNX (1 thread/worker) into pgvector")
    figure.tight_layout()
    figure.savefig(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--dsn", default=os.environ.get("RAGLOOM_PG_DSN", DEFAULT_DSN))
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--plot", help="draw the scaling plot into this PNG/SVG file")
    parser.add_argument("--from-json", help="no run: analyse and plot the runs of this JSON")
    parser.add_argument(
        "--address",
        default=os.environ.get("RAY_ADDRESS"),
        help="a running cluster (e.g. scripts/services/ray.sh's, 127.0.0.1:46379); "
        "default: one started in this process, on 4 logical CPUs",
    )
    args = parser.parse_args()
    if args.from_json:
        previous = json.loads(Path(args.from_json).read_text(encoding="utf-8"))
        report = analyse(previous["documents"], previous["runs"])
        print(json.dumps({k: v for k, v in report.items() if k != "runs"}, indent=2))
        if args.plot:
            plot(args.plot, report)
        return

    documents = corpus(args.documents)
    if args.address:
        ray.init(address=args.address, log_to_driver=False)
    else:
        ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    runs: dict[str, Callable[[str, str], dict[str, float]]] = {
        "single": lambda table, cpu_dir: run_single(args.dsn, table, documents, cpu_dir),
        "ray-1": lambda table, cpu_dir: run_ray(1, args.dsn, table, documents, cpu_dir),
        "ray-2": lambda table, cpu_dir: run_ray(2, args.dsn, table, documents, cpu_dir),
    }
    measured: dict[str, list[dict[str, float]]] = {name: [] for name in runs}
    try:
        for round_ in range(args.rounds):
            for name, run in runs.items():
                table = f"bench_ray_{uuid.uuid4().hex[:8]}"
                try:
                    with tempfile.TemporaryDirectory() as cpu_dir:
                        measured[name].append(run(table, cpu_dir))
                finally:
                    drop(args.dsn, table)
                last = measured[name][-1]
                print(
                    f"round {round_ + 1} {name:6s} {last['seconds']:7.1f} s "
                    f"{args.documents / last['seconds']:6.1f} docs/s  CPU s: "
                    + ", ".join(f"{k} {last[k]:.1f}" for k in ("workers", "driver", "control")),
                    flush=True,
                )
    finally:
        ray.shutdown()
    report = analyse(args.documents, measured)
    report["load_average_after"] = os.getloadavg()
    print(json.dumps(report, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2), encoding="utf-8")
    if args.plot:
        plot(args.plot, report)


if __name__ == "__main__":
    main()
