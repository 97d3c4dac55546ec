"""Benchmark a bulk load from S3: ragloom's parallel loader vs a sequential boto3 loop.

2,000 small text objects (``--objects``, ``--size`` bytes each) in a fresh bucket of the
S3 server of scripts/services/amazon-s3.sh (moto_server; ``--endpoint`` for another),
loaded into documents by, interleaved round by round (order rotated), median of
``--rounds``:

- ``boto3 sequential``: list (paginator) then ``get_object`` + read + the same text
  parser, one object after the other: what a hand-written loop does;
- ``ragloom c=N``: ``AmazonS3DocumentLoader(concurrency=N).load_documents(bucket)`` for
  each N of ``--concurrency`` (the default, 8, included; goal: >= 3x the loop);
- ``langchain``: LangChain's ``S3DirectoryLoader`` (sequential; downloads each object to
  a temporary file and partitions it with ``unstructured``), run in its own virtualenv
  (``--langchain-venv``, created with pip on first use, never the shared one), timed
  inside that process around ``load()``; skipped with a note when it cannot install.

The S3 server's and this process's CPU times during each run are reported as shares of
the wall time: moto is one Python process, so a server share near 100% (one core) means
the server is the bottleneck, and a client share near 100% means the GIL is; on
localhost a request costs CPU only, so parallel fetching can at best overlap the
client's and the server's work. ``--rtt-ms`` puts a delaying TCP proxy (a subprocess)
between the clients and the server, adding that round-trip time to every request, as a
remote store's network and first-byte latency do.

    .venv/bin/python scripts/bench/bench_object_store_loaders.py [--rounds 5] [--rtt-ms 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import boto3
import psutil

from ragloom.core.parsers.text import TextDocumentParser
from ragloom.loaders.amazon_s3 import AmazonS3DocumentLoader

KEYS = {
    "aws_access_key_id": "testing",
    "aws_secret_access_key": "testing",
    "region_name": "us-east-1",
}
ROOT = Path(__file__).resolve().parents[2]
LANGCHAIN_PACKAGES = ["langchain-community", "boto3", "unstructured"]
LANGCHAIN_RUN = """
import json, sys, time
from langchain_community.document_loaders import S3DirectoryLoader
bucket, endpoint, key, secret, region = sys.argv[1:6]
loader = S3DirectoryLoader(bucket, endpoint_url=endpoint, aws_access_key_id=key,
                           aws_secret_access_key=secret, region_name=region)
start = time.perf_counter()
documents = loader.load()
print(json.dumps({"seconds": time.perf_counter() - start, "documents": len(documents)}))
"""


def serve_delay_proxy(port: int, upstream: str, rtt_ms: float) -> None:
    """Forward 127.0.0.1:port to ``upstream``, each request's bytes held ``rtt_ms``."""
    address = urlsplit(upstream)
    delay = rtt_ms / 1000

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, hold: float) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue()

        async def send() -> None:
            while (item := await queue.get()) is not None:
                await asyncio.sleep(max(0.0, item[0] - loop.time()))
                writer.write(item[1])
                await writer.drain()
            writer.close()

        sender = asyncio.create_task(send())
        try:
            while data := await reader.read(65536):
                queue.put_nowait((loop.time() + hold, data))
        except ConnectionError:
            pass
        queue.put_nowait(None)
        await sender

    async def connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(address.hostname, address.port)
        await asyncio.gather(pipe(reader, up_writer, delay), pipe(up_reader, writer, 0.0))

    async def serve() -> None:
        server = await asyncio.start_server(connect, "127.0.0.1", port)
        print("ready", flush=True)
        await server.serve_forever()

    asyncio.run(serve())


def start_delay_proxy(upstream: str, rtt_ms: float) -> tuple[subprocess.Popen[str], str]:
    """The proxy subprocess and its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, __file__, "--serve-delay-proxy", str(port), upstream, str(rtt_ms)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    return process, f"http://127.0.0.1:{port}"


def server_process(endpoint: str) -> psutil.Process | None:
    """The process listening on the endpoint's port (to read its CPU time), if visible."""
    port = urlsplit(endpoint).port
    for connection in psutil.net_connections(kind="tcp"):
        address = connection.laddr  # () when the socket has none
        if connection.status == psutil.CONN_LISTEN and address and address.port == port:
            return psutil.Process(connection.pid) if connection.pid else None
    return None


def server_cpu(process: psutil.Process | None) -> float:
    if process is None:
        return float("nan")
    times = process.cpu_times()
    return float(times.user + times.system)


def langchain_python(venv: Path) -> Path | None:
    """The isolated venv's python with LangChain installed, or None (a note printed)."""
    python = venv / "bin" / "python"
    check = [str(python), "-c", "import langchain_community.document_loaders, unstructured"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    print(f"langchain: installing {', '.join(LANGCHAIN_PACKAGES)} into {venv} ...", flush=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", *LANGCHAIN_PACKAGES],
            check=True,
            timeout=900,
        )
        subprocess.run(check, check=True, capture_output=True)
    except (subprocess.SubprocessError, OSError) as exc:
        print(f"langchain: skipped, it could not be installed ({exc})")
        return None
    return python


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--size", type=int, default=1024, help="bytes per object")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", default="8,16,32", help="ragloom pool sizes")
    parser.add_argument(
        "--endpoint", default=os.environ.get("RAGLOOM_AMAZON_S3_URL", "http://127.0.0.1:20233")
    )
    parser.add_argument(
        "--langchain-venv", type=Path, default=ROOT / ".services" / "bench-langchain-venv"
    )
    parser.add_argument("--no-langchain", action="store_true")
    parser.add_argument("--rtt-ms", type=float, default=0.0, help="added per-request latency")
    args = parser.parse_args()
    server = server_process(args.endpoint)
    proxy = None
    if args.rtt_ms > 0:
        proxy, args.endpoint = start_delay_proxy(args.endpoint, args.rtt_ms)
    try:
        run(args, server)
    finally:
        if proxy is not None:
            proxy.terminate()
            proxy.wait(timeout=10)


def run(args: argparse.Namespace, server: psutil.Process | None) -> None:
    """Upload the objects, time the contenders round by round, print, clean up."""

    s3 = boto3.client("s3", endpoint_url=args.endpoint, **KEYS)
    bucket = f"ragloom-bench-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    line = b"Object storage benchmark text, one small document per key. "
    body = (line * (args.size // len(line) + 1))[: args.size]
    keys = [f"docs/{i:05d}.txt" for i in range(args.objects)]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda key: s3.put_object(Bucket=bucket, Key=key, Body=body), keys))
    print(f"data: {args.objects} objects of {args.size} bytes in s3://{bucket} at {args.endpoint}")
    print(
        f"added round-trip time {args.rtt_ms:g} ms; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (other work on the machine)"
    )

    text = TextDocumentParser()

    def sequential() -> int:
        count = 0
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for item in page.get("Contents", []):
                data = s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
                text.parse(data, source=f"s3://{bucket}/{item['Key']}")
                count += 1
        return count

    def ragloom(concurrency: int) -> Callable[[], int]:
        loader = AmazonS3DocumentLoader(
            endpoint_url=args.endpoint,
            region_name=KEYS["region_name"],
            aws_access_key_id=KEYS["aws_access_key_id"],
            aws_secret_access_key=KEYS["aws_secret_access_key"],
            concurrency=concurrency,
        )

        def run() -> int:
            documents = loader.load_documents(bucket, parser=text)
            assert not documents.failures, documents.failures[:3]
            return len(documents)

        return run

    contenders: dict[str, Callable[[], Any]] = {"boto3 sequential": sequential}
    for concurrency in sorted({8, *map(int, args.concurrency.split(","))}):
        contenders[f"ragloom c={concurrency}"] = ragloom(concurrency)
    python = None if args.no_langchain else langchain_python(args.langchain_venv)
    if args.no_langchain:
        print("langchain: skipped (--no-langchain)")
    if python is not None:
        lc_args = [bucket, args.endpoint, KEYS["aws_access_key_id"]]
        lc_args += [KEYS["aws_secret_access_key"], KEYS["region_name"]]

        def langchain() -> tuple[int, float]:
            done = subprocess.run(
                [str(python), "-c", LANGCHAIN_RUN, *lc_args], capture_output=True, text=True
            )
            if done.returncode != 0:
                raise RuntimeError(done.stderr.strip().splitlines()[-1])
            result = json.loads(done.stdout.strip().splitlines()[-1])
            return int(result["documents"]), float(result["seconds"])

        contenders["langchain S3DirectoryLoader"] = langchain

    me = psutil.Process()
    times: dict[str, list[float]] = {name: [] for name in contenders}
    server_share: dict[str, list[float]] = {name: [] for name in contenders}
    client_share: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    try:
        for round_ in range(args.rounds):
            for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
                before, mine = server_cpu(server), server_cpu(me)
                start = time.perf_counter()
                try:
                    outcome = contenders[name]()
                except RuntimeError as exc:
                    print(f"{name}: failed ({exc}); dropped")
                    names.remove(name)
                    times.pop(name)
                    continue
                elapsed = time.perf_counter() - start
                server_share[name].append((server_cpu(server) - before) / elapsed)
                client_share[name].append((server_cpu(me) - mine) / elapsed)
                if isinstance(outcome, tuple):  # timed inside its own process
                    outcome, elapsed = outcome
                assert outcome == args.objects, (name, outcome)
                times[name].append(elapsed)
    finally:
        for start in range(0, len(keys), 1000):
            batch = [{"Key": key} for key in keys[start : start + 1000]]
            s3.delete_objects(Bucket=bucket, Delete={"Objects": batch})
        s3.delete_bucket(Bucket=bucket)

    base = statistics.median(times["boto3 sequential"])
    print(f"median of {args.rounds} rounds (interleaved); CPU = CPU time / wall time")
    for name, values in times.items():
        median = statistics.median(values)
        share = statistics.median(server_share[name])
        print(
            f"{name:<28} {median:7.2f} s  {args.objects / median:6.0f} objects/s  "
            f"{base / median:5.2f}x the loop  server CPU {share:4.0%}  "
            f"client CPU {statistics.median(client_share[name]):4.0%}"
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve-delay-proxy"]:
        serve_delay_proxy(int(sys.argv[2]), sys.argv[3], float(sys.argv[4]))
    else:
        main()
