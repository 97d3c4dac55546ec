"""Benchmark MilvusEmbeddingStore against pymilvus called directly, in one run.

Seeded clustered unit vectors (20k x 384 float32 by default; ``--rows 100000`` for the
issue's size), each with a segment (text and two metadata keys), in Milvus Lite 2.5 (a
temporary ``.db`` file; ``--uri`` for a server):

- insert:   ``store.add_all`` vs ``client.insert`` of the same rows (same batch size) into
            a collection of what a pymilvus user writes (id, vector, text, metadata JSON),
            interleaved batch by batch (who goes first alternates); per-batch medians
            (goal: <= 1.1x)
- search:   top-10, ``store.search`` vs ``client.search(limit=10)`` on the *same*
            collection (the store's), returning the id, distance, text and metadata (read
            from the hits, as a caller would), interleaved query by query (who goes first
            alternates); median and p95 latency (goal: <= 1.2x), and recall@10 against
            exact numpy search
- filtered: the same with ``tenant == "t3"`` (10% of the rows), with the default
            ``type_checks=True`` and again with ``type_checks=False`` ("filt,tc=0")
- CPU:      besides wall-clock medians, the ratio of CPU seconds spent by this process
            plus the Milvus Lite engine process over all calls of each side

The store does more per call than the bare client, by design: a search asks for a few
more candidates with their vectors and rescores them exactly (scores equal the in-memory
store's); a filtered search first asks the kinds registry whether a type mismatch is
possible; a write first reads the batch's existing ids (replace keeps insertion order),
inserts the new ones (columnar) and upserts the others, counts the ids after (concurrent
writers), and stores typed metadata (two more JSON fields).

    .venv/bin/python scripts/bench/bench_milvus.py [--rows 20000] [--dim 384]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import psutil
from pymilvus import DataType, MilvusClient  # type: ignore[import-untyped]

from ragloom.core import Embedding, EmbeddingSearchRequest, TextSegment, metadata_key
from ragloom.stores.milvus import MilvusEmbeddingStore
from ragloom.stores.milvus._registry import registry_name

Matrix = npt.NDArray[np.float32]
STORE, RAW = "bench_ragloom", "bench_raw"


def clustered_unit_vectors(count: int, dim: int, seed: int) -> Matrix:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(1000, dim))
    vectors = centres[rng.integers(0, 1000, size=count)] + 0.35 * rng.normal(size=(count, dim))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.astype(np.float32)


def create_raw(client: MilvusClient, dim: int) -> None:
    """What a pymilvus user writes: id, vector, text and a JSON metadata field."""
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
    schema.add_field("text", DataType.VARCHAR, max_length=65535)
    schema.add_field("metadata", DataType.JSON)
    index = client.prepare_index_params()
    index.add_index("vector", index_type="FLAT", metric_type="COSINE")
    client.create_collection(RAW, schema=schema, index_params=index, consistency_level="Strong")


def _engine() -> psutil.Process | None:
    """The Milvus Lite process pymilvus started for the ``.db`` file (None for a server)."""
    children = psutil.Process().children(recursive=True)
    return next((p for p in children if "milvus" in " ".join(p.cmdline()).lower()), None)


ENGINE: psutil.Process | None = None


def _cpu() -> float:
    """CPU seconds used so far by this process and the Milvus Lite engine process."""
    engine = ENGINE.cpu_times() if ENGINE is not None else None
    return time.process_time() + (engine.user + engine.system if engine else 0.0)


def timed(call: Callable[[], Any]) -> tuple[tuple[float, float], Any]:
    """((wall seconds, CPU seconds of client + engine), result) of ``call()``."""
    start, cpu = time.perf_counter(), _cpu()
    result = call()
    return (time.perf_counter() - start, _cpu() - cpu), result


def interleaved(
    turn: int, ours: Callable[[], Any], raw: Callable[[], Any]
) -> tuple[tuple[tuple[float, float], Any], tuple[tuple[float, float], Any]]:
    """Both timed, the one going first alternating with ``turn`` (no order bias)."""
    if turn % 2:
        theirs = timed(raw)
        return timed(ours), theirs
    mine = timed(ours)
    return mine, timed(raw)


def summary(name: str, ours: list[tuple[float, float]], raw: list[tuple[float, float]]) -> None:
    """Wall-clock medians and p95, and the ratio of total CPU time (client + engine): on
    a loaded shared machine the CPU ratio is the steadier measure of the work added."""

    def pct(values: list[tuple[float, float]], q: float) -> float:
        return float(np.percentile([wall for wall, _ in values], q)) * 1000

    med_o = statistics.median(wall for wall, _ in ours) * 1000
    med_r = statistics.median(wall for wall, _ in raw) * 1000
    cpu_o, cpu_r = sum(cpu for _, cpu in ours), sum(cpu for _, cpu in raw)
    print(
        f"{name:<9} ragloom median {med_o:7.2f} ms p95 {pct(ours, 95):7.2f} | "
        f"pymilvus median {med_r:7.2f} ms p95 {pct(raw, 95):7.2f} | ratio {med_o / med_r:.2f}x"
        f" | cpu ratio {cpu_o / cpu_r:.2f}x"
    )


def recall(found: list[list[str]], exact: list[list[str]]) -> float:
    hits = sum(len(set(f) & set(e)) for f, e in zip(found, exact, strict=True))
    return hits / sum(len(e) for e in exact)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--batch", type=int, default=1000, help="rows per write request")
    parser.add_argument("--uri", default=None, help="a Milvus server; default: Milvus Lite")
    args = parser.parse_args()
    n, dim, k = args.rows, args.dim, args.k

    print(f"data: {n} x {dim} clustered unit vectors, {args.queries} queries, top-{k}")
    print(f"load average: {' '.join(f'{x:.1f}' for x in psutil.getloadavg())}")
    matrix = clustered_unit_vectors(n + args.queries, dim, seed=42)
    matrix, queries = matrix[:n], matrix[n:]
    ids = [f"doc-{i}" for i in range(n)]
    texts = [f"segment {i} of the benchmark corpus" for i in range(n)]
    metadata: list[dict[str, Any]] = [{"tenant": f"t{i % 10}", "n": i} for i in range(n)]
    segments = [TextSegment(t, m) for t, m in zip(texts, metadata, strict=True)]

    with tempfile.TemporaryDirectory() as directory:
        uri = args.uri or str(Path(directory) / "bench.db")
        client = MilvusClient(uri)
        global ENGINE
        ENGINE = _engine()
        for name in (STORE, registry_name(STORE), RAW):
            if client.has_collection(name):
                client.drop_collection(name)
        store = MilvusEmbeddingStore(
            client=client,
            collection_name=STORE,
            dimension=dim,
            batch_size=args.batch,
            expression_templates=args.uri is not None,
        )
        create_raw(client, dim)

        # -- insert, interleaved batch by batch ----------------------------------------
        ours_insert: list[tuple[float, float]] = []
        raw_insert: list[tuple[float, float]] = []
        for start in range(0, n, args.batch):
            stop = min(n, start + args.batch)

            def ours_batch(start: int = start, stop: int = stop) -> None:
                store.add_all(matrix[start:stop], segments[start:stop], ids=ids[start:stop])

            def raw_batch(start: int = start, stop: int = stop) -> None:
                """What a pymilvus user writes: rows built from the same inputs, inserted."""
                vectors = matrix[start:stop].tolist()
                rows = [
                    {
                        "id": ids[i],
                        "vector": vectors[i - start],
                        "text": texts[i],
                        "metadata": metadata[i],
                    }
                    for i in range(start, stop)
                ]
                client.insert(RAW, rows)

            (ours, _), (raw, _) = interleaved(start // args.batch, ours_batch, raw_batch)
            ours_insert.append(ours)
            raw_insert.append(raw)
        print(
            f"insert    ragloom {n / sum(w for w, _ in ours_insert):9.0f} rows/s | pymilvus "
            f"{n / sum(w for w, _ in raw_insert):9.0f} rows/s"
        )
        summary("  batch", ours_insert, raw_insert)

        # -- search, interleaved query by query ------------------------------------------
        tenant = np.array([m["tenant"] == "t3" for m in metadata])
        t3 = metadata_key("tenant").is_equal_to("t3")
        raw_t3 = 'metadata["tenant"] == "t3"'
        lenient = MilvusEmbeddingStore(
            client=client,
            collection_name=STORE,
            type_checks=False,
            expression_templates=args.uri is not None,
        )
        for label, searcher, condition, raw_filter, mask in (
            ("search", store, None, "", None),
            ("filtered", store, t3, raw_t3, tenant),
            ("filt,tc=0", lenient, t3, raw_t3, tenant),
        ):
            ours_t: list[tuple[float, float]] = []
            raw_t: list[tuple[float, float]] = []
            found: list[list[str]] = []
            exact: list[list[str]] = []
            for position, query in enumerate(queries):
                request = EmbeddingSearchRequest(Embedding(query), max_results=k, filter=condition)

                def raw_search(query: Matrix = query, raw_filter: str = raw_filter) -> list[Any]:
                    """What a pymilvus user writes: search, then read the hits' fields."""
                    result = client.search(
                        STORE,
                        data=[query.tolist()],
                        limit=k,
                        filter=raw_filter,
                        output_fields=["id", "text", "metadata"],
                        consistency_level="Strong",
                    )
                    return [
                        (
                            hit["id"],
                            hit["distance"],
                            hit["entity"]["text"],
                            hit["entity"]["metadata"],
                        )
                        for hit in result[0]
                    ]

                (ours, result), (raw, _) = interleaved(
                    position,
                    lambda: searcher.search(request),  # noqa: B023
                    raw_search,
                )
                ours_t.append(ours)
                raw_t.append(raw)
                found.append([m.embedding_id for m in result.matches])
                scores = matrix @ query
                if mask is not None:
                    scores = np.where(mask, scores, -np.inf)
                exact.append([ids[i] for i in np.argsort(-scores, kind="stable")[:k]])
            summary(label, ours_t, raw_t)
            print(
                f"{'':<9} recall@{k} of the store vs exact numpy search: {recall(found, exact):.4f}"
            )
        for name in (STORE, registry_name(STORE), RAW):
            if client.has_collection(name):
                client.drop_collection(name)
        client.close()


if __name__ == "__main__":
    main()
