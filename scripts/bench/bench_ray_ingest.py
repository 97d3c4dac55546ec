"""Benchmark RayIngestor against core's single-process EmbeddingStoreIngestor, in one run.

Small documents (one segment each, ~25 words), embedded with the default ONNX model
(all-MiniLM-L6-v2 quantized, ONE onnxruntime thread per model, so a worker is a core) and
written into the real pgvector server (``scripts/services/pgvector.sh``, or ``--dsn``):

- ``single``: core's ``EmbeddingStoreIngestor`` in this process (the baseline; its model
  is built inside the timed run, as each Ray actor builds its own);
- ``ray-1``, ``ray-2``: ``RayIngestor`` with 1 and 2 embedding actors (1 CPU each; they
  load and split too); ``ray-1t``: 1 actor with loading and splitting in Ray tasks of
  their own (``split_num_cpus=0.5``, the layout before splitting moved into the actors).
  By default on a cluster started in this process (``ray.init`` on 127.0.0.1, 4 logical
  CPUs); with ``--address`` (or ``RAY_ADDRESS``) a running one, e.g. the head and worker
  node of ``scripts/services/ray.sh`` (see docs/distributed-ingestion.md).

Configurations are interleaved round by round, the first one rotating (``--rounds``);
each run writes into a fresh table. Measured per run: wall-clock docs/s, the 1-minute
load average, and CPU seconds by where they were spent (they stay meaningful when other
programs share the cores; wall-clock does not):

- ``driver``: this process (for ``single``: everything);
- ``actors``: the embedding actors' processes, sampled every 0.2 s; ``other``: the rest
  of the cluster's worker processes (split tasks, idle workers); ``control``: the
  raylets and GCS server. The CPU ratio is single's CPU seconds over the sum of all four
  parts of the Ray run (every process of the cluster, not only the driver's);
- per document, in the process that embeds (the actor, or this process for ``single``):
  CPU and wall milliseconds of splitting, embedding and writing (the instrumented
  splitter, model and store record each call), and the start-up (process start to model
  loaded: imports and the model).

The model (docs/distributed-ingestion.md) predicts a run of ``D`` documents on ``N``
workers as ``start + D * max(t_doc / N, driver)``: ``t_doc`` the per-document time of
split + embed + write in one worker, ``start`` an actor's start-up, ``driver`` the
driver's per-document CPU. ``model_check`` compares it, round by round, with the
measured Ray runs, taking ``t_doc`` and the share of a core a process got (its CPU / wall) from
the same round's single-process run: on shared cores that is what one core is worth.

    .venv/bin/python scripts/bench/bench_ray_ingest.py [--documents 5000] [--rounds 1]
        [--configs single,ray-1,ray-2] [--address 127.0.0.1:46379] [--json out.json]
        [--plot docs/img/ray-ingest-scaling.png]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

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
STEPS = ("split", "embed", "write")
T = TypeVar("T")
WARMUP = 100  # documents of the two runs before the rounds (Ray's cold start, fixed costs)


def corpus(count: int) -> list[Document]:
    """``count`` distinct small documents of about 25 words (one segment each)."""
    return [
        Document(
            " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(24)) + f" item {i}.",
            {"document_id": f"doc-{i}"},
        )
        for i in range(count)
    ]


def record(directory: str, step: str, wall: float, cpu: float) -> None:
    """Append one call's wall and CPU seconds to ``<directory>/<step>-<pid>``."""
    with Path(directory, f"{step}-{os.getpid()}").open("a", encoding="utf-8") as file:
        file.write(f"{wall} {cpu}\n")


def timed(directory: str, step: str, call: Callable[[], T]) -> T:
    """``call()``, its wall and CPU seconds recorded as one ``step`` call."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = call()
    record(directory, step, time.perf_counter() - wall, time.process_time() - cpu)
    return result


class RecordingModel(AllMiniLmL6V2QuantizedEmbeddingModel):
    """The default model on one thread (one worker = one core), loaded at construction;
    records the process's start-up (process start to model loaded) and every call."""

    def __init__(self, directory: str) -> None:
        super().__init__(intra_op_threads=1, inter_op_threads=1)
        self.load()
        self.directory = directory
        process = psutil.Process()
        cpu = process.cpu_times()
        record(directory, "start", time.time() - process.create_time(), cpu.user + cpu.system)

    def embed_all(self, texts: Sequence[str | TextSegment]) -> EmbeddingResult:
        return timed(self.directory, "embed", lambda: super(RecordingModel, self).embed_all(texts))


class RecordingStore(PgVectorEmbeddingStore):
    """The pgvector store, recording each write (``add_all``, ``remove_all``)."""

    def __init__(self, directory: str, dsn: str, table: str) -> None:
        super().__init__(dsn, table, dimension=384, pool_size=2)
        self.directory = directory

    def add_all(self, *args: Any, **kwargs: Any) -> Any:
        return timed(
            self.directory, "write", lambda: super(RecordingStore, self).add_all(*args, **kwargs)
        )

    def remove_all(self, *args: Any, **kwargs: Any) -> Any:
        return timed(
            self.directory, "write", lambda: super(RecordingStore, self).remove_all(*args, **kwargs)
        )


class RecordingSplitter:
    """core's recursive splitter (500 characters, no overlap), recording each call."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.splitter = document_splitters.recursive(500, 0)

    def split(self, document: Document) -> list[TextSegment]:
        return timed(self.directory, "split", lambda: self.splitter.split(document))

    def split_all(self, documents: Iterable[Document]) -> list[TextSegment]:
        return [segment for document in documents for segment in self.split(document)]


def steps(directory: str, documents: int) -> dict[str, float]:
    """Milliseconds per document of each step (CPU and wall), and the start-up seconds."""
    out: dict[str, float] = {}
    for step in (*STEPS, "start"):
        rows = [
            [float(v) for v in line.split()]
            for path in Path(directory).glob(f"{step}-*")
            for line in path.read_text(encoding="utf-8").splitlines()
        ]
        wall, cpu = sum(r[0] for r in rows), sum(r[1] for r in rows)
        if step == "start":  # per process, in seconds
            out["start_wall_s"], out["start_cpu_s"] = (
                wall / max(1, len(rows)),
                cpu / max(1, len(rows)),
            )
        else:
            out[f"{step}_cpu_ms"], out[f"{step}_wall_ms"] = (
                1e3 * cpu / documents,
                1e3 * wall / documents,
            )
    return out


class ClusterCpu:
    """CPU seconds of the cluster's processes during a run: the raylets and GCS server
    (found by the GCS address) and their descendants, sampled every 0.2 s (an actor
    killed at the end keeps its last sample), by part: actors, other workers, control.
    The sampling thread's own CPU (``own``) is taken out of the driver's."""

    def __init__(self) -> None:
        address = ray.get_runtime_context().gcs_address
        marks = (f"--gcs-address={address}", f"--gcs_server_port={address.rsplit(':', 1)[1]}")
        self.roots = [
            process
            for process in psutil.process_iter(["name", "cmdline"])
            if process.info["name"] in CONTROL_PLANE
            and any(mark in (process.info["cmdline"] or []) for mark in marks)
        ]
        self.start: dict[int, float] = {}
        self.last: dict[int, tuple[str, float]] = {}
        self.own = 0.0
        self.sample(self.start)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.poll, daemon=True)
        self.thread.start()

    def processes(self) -> list[psutil.Process]:
        found = {p.pid: p for p in self.roots}
        for root in self.roots:
            try:
                found.update((c.pid, c) for c in root.children(recursive=True))
            except psutil.Error:
                continue
        found.pop(os.getpid(), None)
        return list(found.values())

    def sample(self, start: dict[int, float] | None = None) -> None:
        for process in self.processes():
            try:
                times, name = process.cpu_times(), process.name()
            except psutil.Error:
                continue
            if start is not None:
                start[process.pid] = times.user + times.system
            else:
                self.last[process.pid] = (name, times.user + times.system)

    def poll(self) -> None:
        while not self.done.wait(0.2):
            self.sample()
        self.own = time.thread_time()

    def stop(self, actors: set[int]) -> dict[str, float]:
        """The parts' CPU seconds; ``actors``: the embedding actors' process ids."""
        self.done.set()
        self.thread.join()
        self.sample()
        parts = {"actors": 0.0, "other": 0.0, "control": 0.0}
        for pid, (name, cpu) in self.last.items():
            part = "control" if name in CONTROL_PLANE else "actors" if pid in actors else "other"
            parts[part] += cpu - self.start.get(pid, 0.0)
        return {**parts, "sampler": self.own}


def check(result: IngestionResult, documents: list[Document]) -> None:
    """Every document ingested, one segment each."""
    if result.failures or len(result.ids) != len(documents):
        raise RuntimeError(f"ingestion incomplete: {result.failures[:3]}")


def run_single(dsn: str, table: str, documents: list[Document], directory: str) -> dict[str, float]:
    start, cpu = time.perf_counter(), time.process_time()
    with RecordingStore(directory, dsn, table) as target:
        ingestor = EmbeddingStoreIngestor(
            target, RecordingModel(directory), document_splitter=RecordingSplitter(directory)
        )
        result = ingestor.ingest(documents)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    check(result, documents)
    return {"seconds": elapsed, "driver": cpu, "actors": 0.0, "other": 0.0, "control": 0.0}


def run_ray(
    config: str, dsn: str, table: str, documents: list[Document], directory: str
) -> dict[str, float]:
    ingestor = RayIngestor(
        functools.partial(RecordingStore, directory, dsn, table),
        functools.partial(RecordingModel, directory),
        document_splitter=RecordingSplitter(directory),
        concurrency=int(config.removeprefix("ray-").removesuffix("t")),
        num_cpus=1.0,
        split_num_cpus=0.5 if config.endswith("t") else None,
        documents_per_batch=250,
    )
    cluster = ClusterCpu()
    start, cpu = time.perf_counter(), time.process_time()
    result = ingestor.ingest(documents)
    elapsed = time.perf_counter() - start
    # The actors' process ids: each recorded its start-up (RecordingModel).
    parts = cluster.stop({int(path.name.split("-")[1]) for path in Path(directory).glob("start-*")})
    cpu = time.process_time() - cpu - parts.pop("sampler")
    check(result, documents)
    return {"seconds": elapsed, "driver": cpu, **parts}


def drop(dsn: str, table: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))


def cpu_total(run: dict[str, float]) -> float:
    return run["driver"] + run["actors"] + run["other"] + run["control"]


def median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def predicted_seconds(
    documents: int, workers: int, start: float, t_doc: float, driver: float
) -> float:
    """The model: an actor's start-up, then the documents at N workers' rate, unless the
    driver's per-document work is the slower (seconds; costs in seconds per document)."""
    return start + documents * max(t_doc / workers, driver)


def analyse(
    documents: int, measured: dict[str, list[dict[str, float]]], warmup: list[dict[str, float]]
) -> dict[str, Any]:
    """Medians, per-round ratios against ``single``, the model's costs and its check.

    ``warmup``: the cold and the warm run of ``WARMUP`` documents on one actor before the
    rounds; the warm one's driver CPU is the driver's fixed cost per run."""
    report: dict[str, Any] = {"documents": documents, "runs": measured, "warmup": warmup}
    single = measured["single"]
    report["ratios_vs_single"] = {
        name: {
            "throughput_wall": [
                s["seconds"] / r["seconds"] for s, r in zip(single, runs, strict=True)
            ],
            "throughput_cpu": [
                cpu_total(s) / cpu_total(r) for s, r in zip(single, runs, strict=True)
            ],
        }
        for name, runs in measured.items()
        if name != "single"
    }
    report["per_document_ms"] = {
        name: {k: median(runs, k) for k in runs[0] if k.endswith("_ms")}
        for name, runs in measured.items()
    }
    ray_runs = [run for name, runs in measured.items() if name.startswith("ray") for run in runs]
    if not ray_runs:
        return report
    # Costs of one worker on one core (CPU): split + embed + write per document, start-up.
    t_doc = sum(median(single, f"{step}_cpu_ms") for step in STEPS) / 1e3
    start = median(ray_runs, "start_cpu_s")
    driver = max(0.0, median(ray_runs, "driver") - warmup[-1]["driver"]) / (documents - WARMUP)
    fixed = {
        name: median(runs, "other") + median(runs, "control")
        for name, runs in measured.items()
        if name != "single"
    }
    report["model"] = {
        "t_doc_cpu_s": t_doc,
        "start_cpu_s": start,
        "driver_cpu_s_per_doc": driver,
        "driver_fixed_cpu_s": warmup[-1]["driver"],
        "other_and_control_cpu_s": fixed,
        "dedicated_cores_docs_per_s": {
            str(n): documents / predicted_seconds(documents, n, start, t_doc, driver)
            for n in (1, 2, 4, 8, 16, 64)
        },
    }
    # The check: each round's single run gives what a core was worth then (its CPU / wall)
    # and t_doc in wall seconds on such a core; the model then predicts that round's Ray runs.
    checks: dict[str, list[dict[str, float]]] = {}
    for name, runs in measured.items():
        if not name.startswith("ray"):
            continue
        workers = int(name.removeprefix("ray-").removesuffix("t"))
        for reference, run in zip(single, runs, strict=True):
            share = cpu_total(reference) / reference["seconds"]
            t_wall = sum(reference[f"{step}_wall_ms"] for step in STEPS) / 1e3
            seconds = predicted_seconds(documents, workers, start / share, t_wall, driver / share)
            checks.setdefault(name, []).append(
                {
                    "core_share": share,
                    "predicted_docs_per_s": documents / seconds,
                    "measured_docs_per_s": documents / run["seconds"],
                }
            )
    report["model_check"] = checks
    return report


def plot(path: str, report: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    documents = report["documents"]
    model = report["model"]
    workers = [1, 2, 4, 8, 16, 32, 64]
    figure, (rate, cost) = plt.subplots(1, 2, figsize=(10, 4.0), dpi=110)
    predicted = [
        documents
        / predicted_seconds(
            documents, n, model["start_cpu_s"], model["t_doc_cpu_s"], model["driver_cpu_s_per_doc"]
        )
        for n in workers
    ]
    rate.plot(workers, predicted, "--", label="model, dedicated cores")
    for name, checks in report["model_check"].items():
        n = int(name.removeprefix("ray-").removesuffix("t"))
        rate.plot([n] * len(checks), [c["measured_docs_per_s"] for c in checks], "o", color="C1")
        rate.plot([n] * len(checks), [c["predicted_docs_per_s"] for c in checks], "x", color="C2")
    rate.plot([], [], "o", color="C1", label="measured (shared cores)")
    rate.plot([], [], "x", color="C2", label="model, with each round's core share")
    rate.set_xscale("log", base=2)
    rate.set_yscale("log")
    rate.set_xticks(workers, [str(n) for n in workers])
    rate.set_xlabel("embedding workers (1 core each)")
    rate.set_ylabel("documents / s")
    rate.legend(fontsize=7)
    rate.grid(True, which="both", alpha=0.3)
    names = list(report["runs"])
    bottom = [0.0] * len(names)
    for part in ("driver", "actors", "other", "control"):
        values = [1000 * median(report["runs"][name], part) / documents for name in names]
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
    parser.add_argument("--configs", default="single,ray-1,ray-2", help="of single, ray-N, ray-Nt")
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
        report = analyse(previous["documents"], previous["runs"], previous["warmup"])
        print(json.dumps({k: v for k, v in report.items() if k != "runs"}, indent=2))
        if args.plot:
            plot(args.plot, report)
        return

    documents = corpus(args.documents)
    if args.address:
        ray.init(address=args.address, log_to_driver=False)
    else:
        ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    names = args.configs.split(",")
    measured: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    warmup: list[dict[str, float]] = []
    try:
        for label in ("cold", "warm"):
            table = f"bench_ray_{uuid.uuid4().hex[:8]}"
            try:
                with tempfile.TemporaryDirectory() as directory:
                    warmup.append(run_ray("ray-1", args.dsn, table, documents[:WARMUP], directory))
                    warmup[-1].update(steps(directory, WARMUP))
            finally:
                drop(args.dsn, table)
            print(f"warm-up ({label}, {WARMUP} documents): {warmup[-1]}", flush=True)
        for round_ in range(args.rounds):
            for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
                table = f"bench_ray_{uuid.uuid4().hex[:8]}"
                load = os.getloadavg()[0]
                try:
                    with tempfile.TemporaryDirectory() as directory:
                        if name == "single":
                            run = run_single(args.dsn, table, documents, directory)
                        else:
                            run = run_ray(name, args.dsn, table, documents, directory)
                        run.update(steps(directory, args.documents))
                        if name == "single":  # its "start" would be this whole process's
                            del run["start_wall_s"], run["start_cpu_s"]
                finally:
                    drop(args.dsn, table)
                run["load_average"] = (load + os.getloadavg()[0]) / 2
                measured[name].append(run)
                print(
                    f"round {round_ + 1} {name:6s} {run['seconds']:7.1f} s "
                    f"{args.documents / run['seconds']:6.1f} docs/s  CPU s {cpu_total(run):.1f}: "
                    + ", ".join(
                        f"{k} {run[k]:.1f}" for k in ("driver", "actors", "other", "control")
                    )
                    + f"  load {run['load_average']:.1f}",
                    flush=True,
                )
    finally:
        ray.shutdown()
    report = analyse(args.documents, measured, warmup)
    print(json.dumps({k: v for k, v in report.items() if k != "runs"}, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2), encoding="utf-8")
    if args.plot:
        plot(args.plot, report)


if __name__ == "__main__":
    main()
