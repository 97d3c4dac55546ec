"""ragloom serve under load: the server's overhead on /v1/retrieve over the same retrieval
in-process (interleaved, wall p50 and CPU per request), a load mix of N concurrent clients
retrieving and chatting (the extractive answer: no chat model configured), and a hostile
run (oversized and malformed bodies, slow bodies, bad keys) watching RSS and descriptors.

The index: docs/ ingested with the default embedding model, then its segments copied (same
vectors, other ids and document ids) up to ``--segments``, so building it embeds docs/ once
(``--index DIR`` keeps it for the next run). ``--json FILE`` writes the results there
(``run_suite.py --only serving`` reads them into docs/benchmarks.md).

    .venv/bin/python scripts/bench/bench_server.py --clients 32 --seconds 60
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psutil

from ragloom.core import EmbeddingModel as _EmbeddingModel
from ragloom.core import (
    EmbeddingSearchRequest,
    InMemoryEmbeddingStore,
    Query,
    plugins,
)
from ragloom.easy_rag import RagIndex
from ragloom.easy_rag.defaults import MinScoreRetriever, index_hybrid_retriever
from ragloom.server.blas import limit_blas_threads

ROOT = Path(__file__).resolve().parents[2]
KEY = "bench-admin-key-0123456789"
PARTS = ("overhead", "load", "hostile")
QUERIES = [
    "metadata filters",
    "how do I ingest documents",
    "hybrid retrieval with BM25",
    "embedding model onnx",
    "persist the in-memory store",
    "split a document into segments",
    "chat memory window",
    "reranking results",
]


def saved_store(index: RagIndex) -> InMemoryEmbeddingStore:
    """The index's vectors: ``RagIndex.open`` without ``store=`` loads its saved in-memory
    store (whose size and dimension the bench reads)."""
    store = index.store
    if not isinstance(store, InMemoryEmbeddingStore):
        raise TypeError(f"{type(store).__name__}: expected the saved InMemoryEmbeddingStore")
    return store


def build_index(path: Path, segments: int) -> int:
    """docs/ ingested, then its segments copied up to ``segments``; the count written."""
    # A few docs/ files fail to parse (exit 1); the rest is the corpus.
    subprocess.run(
        [
            sys.executable,
            "-m",
            "ragloom.easy_rag.cli",
            "ingest",
            str(ROOT / "docs"),
            "--index",
            str(path),
            "--quiet",
        ],
        check=False,
    )
    index = RagIndex.open(path)
    dimension = saved_store(index).dimension or 1
    everything = index.store.search(EmbeddingSearchRequest([1.0] * dimension, max_results=100_000))
    base = [m for m in everything.matches if m.embedded is not None]
    copies = 0
    while len(base) * (copies + 1) < segments:
        copies += 1
        vectors, parts, ids = [], [], []
        for match in base:
            assert match.embedded is not None
            meta = match.embedded.metadata.to_dict()
            meta["document_id"] = f"{meta.get('document_id')}#copy{copies}"
            vectors.append(match.embedding)
            parts.append(type(match.embedded)(match.embedded.text, meta))
            ids.append(f"{match.embedding_id}-copy{copies}")
        index.mirrored.add_all(vectors, parts, ids=ids)
    index.save()
    return len(base) * (copies + 1)


def start_server(index: Path, log: Path, **env: str) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    keys = json.dumps([{"key": KEY, "name": "bench"}])
    environment = {**os.environ, "RAGLOOM_SERVER_API_KEYS": keys, **env}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ragloom.easy_rag.cli",
            "serve",
            "--index",
            str(index),
            "--port",
            str(port),
        ],
        env=environment,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return process, url
        except httpx.TransportError:
            time.sleep(0.2)
    raise SystemExit(f"server did not start: {log.read_text()}")


def in_process_retriever(index: RagIndex, model: _EmbeddingModel) -> MinScoreRetriever:
    """The retrieval IndexService builds for an admin key and mode hybrid, max_results 4."""
    return index_hybrid_retriever(index.store, index.keywords, model, 4)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def loop_thread_cpu(server: psutil.Process) -> float:
    """CPU seconds of the server's main thread, where uvicorn runs the event loop."""
    main = next(t for t in server.threads() if t.id == server.pid)
    return float(main.user_time + main.system_time)


def overhead(url: str, server: psutil.Process, index: Path, rounds: int) -> dict[str, float]:
    """Interleaved: one in-process retrieval, then the same over HTTP, then ``/healthz``
    (the HTTP stack's floor: client, uvicorn, middleware, no work), ``rounds`` times.
    Wall times are medians; CPU times are means over the summed calls (the server's is read
    from /proc in clock ticks, so one call's figure is too coarse to take a median of). The
    event loop's share is its thread's CPU alone: HTTP parsing, middleware, routing and
    JSON, without the retrieval in the worker threads; the client's is this process's CPU
    in httpx (building the request, parsing the response), part of the wall overhead but
    not the server's."""
    model: _EmbeddingModel = plugins.load_default(plugins.EMBEDDING_MODELS)
    retriever = in_process_retriever(RagIndex.open(index), model)
    headers = {"Authorization": f"Bearer {KEY}"}
    local_wall, http_wall, floor_wall = [], [], []
    local_cpu = server_cpu = loop_cpu = client_cpu = 0.0
    with httpx.Client(headers=headers, timeout=30) as client:
        for n in range(rounds):
            query = QUERIES[n % len(QUERIES)]
            wall, cpu = time.perf_counter(), time.process_time()
            retriever.retrieve(Query(query))
            local_wall.append(time.perf_counter() - wall)
            local_cpu += time.process_time() - cpu
            before, loop_before = sum(server.cpu_times()[:2]), loop_thread_cpu(server)
            wall, cpu = time.perf_counter(), time.process_time()
            response = client.post(f"{url}/v1/retrieve", json={"query": query, "max_results": 4})
            http_wall.append(time.perf_counter() - wall)
            client_cpu += time.process_time() - cpu
            server_cpu += sum(server.cpu_times()[:2]) - before
            loop_cpu += loop_thread_cpu(server) - loop_before
            response.raise_for_status()
            wall = time.perf_counter()
            client.get(f"{url}/healthz").raise_for_status()
            floor_wall.append(time.perf_counter() - wall)
    ms = 1000.0
    return {
        "rounds": rounds,
        "in_process_wall_p50_ms": statistics.median(local_wall) * ms,
        "in_process_cpu_mean_ms": local_cpu / rounds * ms,
        "http_wall_p50_ms": statistics.median(http_wall) * ms,
        "healthz_wall_p50_ms": statistics.median(floor_wall) * ms,
        "server_cpu_mean_ms": server_cpu / rounds * ms,
        "server_loop_cpu_mean_ms": loop_cpu / rounds * ms,
        "client_cpu_mean_ms": client_cpu / rounds * ms,
        "overhead_wall_p50_ms": (statistics.median(http_wall) - statistics.median(local_wall)) * ms,
        "overhead_cpu_mean_ms": (server_cpu - local_cpu) / rounds * ms,
    }


def load(url: str, clients: int, seconds: float) -> dict[str, object]:
    """``clients`` threads, each with its own connection, for ``seconds``: by turns a
    retrieval, a chat completion and a streamed chat completion (read to ``[DONE]``)."""
    ends = time.monotonic() + seconds
    latencies: dict[str, list[float]] = {"retrieve": [], "chat": [], "chat_stream": []}
    errors: dict[str, int] = {}
    lock = threading.Lock()

    def one(http: httpx.Client, kind: str, query: str) -> bool:
        if kind == "retrieve":
            response = http.post(f"{url}/v1/retrieve", json={"query": query, "max_results": 4})
            return response.status_code == 200 and bool(response.json()["data"])
        body = {"model": "ragloom", "messages": [{"role": "user", "content": query}]}
        if kind == "chat":
            response = http.post(f"{url}/v1/chat/completions", json=body)
            return response.status_code == 200 and bool(response.json()["choices"])
        with http.stream("POST", f"{url}/v1/chat/completions", json={**body, "stream": True}) as r:
            text = "".join(r.iter_text())
        return r.status_code == 200 and text.rstrip().endswith("data: [DONE]")

    def client(number: int) -> None:
        kinds = ("retrieve", "chat", "retrieve", "chat_stream")
        with httpx.Client(headers={"Authorization": f"Bearer {KEY}"}, timeout=120) as http:
            n = number
            while time.monotonic() < ends:
                kind = kinds[n % len(kinds)]
                started = time.perf_counter()
                try:
                    good = one(http, kind, QUERIES[n % len(QUERIES)])
                except httpx.HTTPError as exc:
                    good, kind = False, f"{kind}:{type(exc).__name__}"
                elapsed = time.perf_counter() - started
                with lock:
                    if good:
                        latencies[kind].append(elapsed)
                    else:
                        errors[kind] = errors.get(kind, 0) + 1
                n += 1

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, range(clients)))
    took = time.perf_counter() - started
    every = [x for values in latencies.values() for x in values]
    result: dict[str, object] = {
        "clients": clients,
        "seconds": round(took, 1),
        "requests": len(every),
        "errors": sum(errors.values()),
        "errors_by_kind": errors,
        "throughput_rps": len(every) / took,
        "p50_ms": pct(every, 0.5) * 1000,
        "p99_ms": pct(every, 0.99) * 1000,
    }
    for kind, values in latencies.items():
        if values:
            result[kind] = {
                "requests": len(values),
                "p50_ms": pct(values, 0.5) * 1000,
                "p99_ms": pct(values, 0.99) * 1000,
            }
    return result


def slow_body(url: str) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(
            b"POST /v1/retrieve HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + KEY.encode()
            + b"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
        )
        answer = b""
        for _ in range(100):
            try:
                sock.sendall(b" ")
                sock.settimeout(0.2)
                answer = sock.recv(65536)
                break
            except TimeoutError:
                continue
            except OSError:
                break
        return answer[:12]


def hostile(url: str, server: psutil.Process, count: int) -> dict[str, object]:
    """``count`` requests of each hostile kind; statuses seen, RSS and descriptors."""
    before = (server.memory_info().rss, server.num_fds())
    seen: dict[str, dict[int | str, int]] = {}

    def note(kind: str, status: int | str) -> None:
        seen.setdefault(kind, {})
        seen[kind][status] = seen[kind].get(status, 0) + 1

    good = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    with httpx.Client(timeout=30) as http:
        for _ in range(count):
            note(
                "oversized",
                http.post(f"{url}/v1/retrieve", content=b"x" * (2 << 20), headers=good).status_code,
            )
            note(
                "bad_json",
                http.post(f"{url}/v1/retrieve", content=b'{"query": ', headers=good).status_code,
            )
            note(
                "bad_key",
                http.post(
                    f"{url}/v1/retrieve",
                    json={"query": "x"},
                    headers={"Authorization": "Bearer nope"},
                ).status_code,
            )
            note(
                "long_filter",
                http.post(
                    f"{url}/v1/retrieve",
                    json={"query": "x", "filter": "a == 'b' " * 1200},
                    headers=good,
                ).status_code,
            )
    with ThreadPoolExecutor(50) as pool:
        for answer in pool.map(lambda _: slow_body(url), range(count)):
            note("slow_body", answer.decode("latin-1") or "closed")
    healthy = httpx.get(f"{url}/healthz").status_code
    after = (server.memory_info().rss, server.num_fds())
    return {
        "statuses": seen,
        "rss_mib_before_after": [round(before[0] / 2**20, 1), round(after[0] / 2**20, 1)],
        "fds_before_after": [before[1], after[1]],
        "healthz_after": healthy,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--segments", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rounds", type=int, default=200, help="interleaved overhead pairs")
    parser.add_argument("--hostile", type=int, default=200, help="requests of each kind")
    parser.add_argument("--index", type=Path, help="keep the built index here (reused if there)")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    parser.add_argument(
        "--blas-threads",
        type=int,
        default=1,
        help="numpy's BLAS threads, in the server (its blas_threads) and in-process alike",
    )
    parser.add_argument(
        "--parts",
        default=",".join(PARTS),
        help=f"comma-separated, of {', '.join(PARTS)} (the page needs all three)",
    )
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    if not parts <= set(PARTS):
        parser.error(f"--parts: {', '.join(sorted(parts - set(PARTS)))} unknown; use {PARTS}")
    with tempfile.TemporaryDirectory(prefix="bench-server-") as folder:
        index = args.index or Path(folder) / "index"
        if (index / "files.json").exists():
            written = len(saved_store(RagIndex.open(index)))
        else:
            written = build_index(index, args.segments)
        process, url = start_server(
            index,
            Path(folder) / "server.log",
            RAGLOOM_SERVER_RATE_LIMIT="0",
            RAGLOOM_SERVER_BODY_TIMEOUT="1",
            RAGLOOM_SERVER_MAX_CONCURRENCY=str(max(64, 2 * args.clients)),
            RAGLOOM_SERVER_BLAS_THREADS=str(args.blas_threads),
        )
        limit_blas_threads(args.blas_threads)  # the in-process side as the server's
        server = psutil.Process(process.pid)
        try:
            results: dict[str, object] = {
                "segments": written,
                "blas_threads": args.blas_threads,
                "loadavg_start": os.getloadavg(),
            }
            httpx.post(
                f"{url}/v1/retrieve",
                json={"query": "warm up"},
                headers={"Authorization": f"Bearer {KEY}"},
                timeout=60,
            )
            if "overhead" in parts:
                results["overhead"] = overhead(url, server, index, args.rounds)
            if "load" in parts:
                rss_before = server.memory_info().rss
                results["load"] = load(url, args.clients, args.seconds)
                results["rss_mib_before_after_load"] = [
                    round(rss_before / 2**20, 1),
                    round(server.memory_info().rss / 2**20, 1),
                ]
            if "hostile" in parts:
                results["hostile"] = hostile(url, server, args.hostile)
            results["loadavg_end"] = os.getloadavg()
            print(json.dumps(results, indent=2))
            if args.json:
                args.json.write_text(json.dumps(results, indent=1) + "\n")
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)


if __name__ == "__main__":
    main()
