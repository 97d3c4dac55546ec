"""Benchmark PgVectorEmbeddingStore against raw psycopg running the same SQL, in one run.

Seeded clustered unit vectors (100k x 384 float32 by default, like sentence embeddings:
1000 cluster centres plus noise), each with a segment (text and two metadata keys), on the
local PostgreSQL 18 + pgvector of ``scripts/services/pgvector.sh`` (or ``--dsn``):

- insert:   ``store.add_all`` in batches (binary COPY, no vector index yet) vs raw psycopg
            COPYing the same rows into an identical table (goal: overhead <= 20%)
- index:    HNSW build time (m=16, ef_construction=64) after the load (no baseline)
- search:   top-10 with HNSW, ``store.search`` vs raw psycopg executing the same statement
            on the same table and connection settings, interleaved query by query;
            median and p95 latency (goal: overhead <= 20%), and recall@10 against exact
            numpy brute force
- filtered: the same with ``tenant == "t3"`` (10% of the rows), the store's SQL (with its
            type-check probe) run by both, recall against exact filtered brute force
- CPU:      beside wall time, the CPU seconds of each call: this process plus the
            PostgreSQL server processes (psutil); on a shared machine the CPU ratio is the
            steadier measure (other clients of the same server count too: keep it idle)

    bash scripts/services/pgvector.sh start
    .venv/bin/python scripts/bench/bench_pgvector.py [--rows 100000] [--dim 384]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import struct
import time
import uuid
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt
import psutil
import psycopg
from psycopg import sql
from psycopg.adapt import Buffer, Dumper, Loader
from psycopg.pq import Format
from psycopg.types.json import Jsonb

from ragloom.core import (
    Embedding,
    EmbeddingSearchRequest,
    TextSegment,
    metadata_key,
)
from ragloom.stores.pgvector import PgVectorEmbeddingStore

Matrix = npt.NDArray[np.float32]
DEFAULT_DSN = "postgresql://postgres@127.0.0.1:55433/postgres"
TABLE, RAW_TABLE = "bench_ragloom", "bench_raw"


# ---------------------------------------------------------------------- raw psycopg


class RawVectorDumper(Dumper):
    """What a psycopg user writes for pgvector: numpy array -> binary vector."""

    format = Format.BINARY

    def dump(self, obj: Matrix) -> Buffer:
        return struct.pack(">HH", obj.shape[0], 0) + obj.astype(">f4").tobytes()


class RawVectorLoader(Loader):
    format = Format.BINARY

    def load(self, data: Buffer) -> Matrix:
        dim = struct.unpack_from(">H", data)[0]
        return np.frombuffer(data, dtype=">f4", count=dim, offset=4).astype(np.float32)


def raw_connection(dsn: str, vector_oid: int) -> psycopg.Connection[Any]:
    conn = psycopg.connect(dsn, autocommit=True)
    dumper = type("Dumper", (RawVectorDumper,), {"oid": vector_oid})
    conn.adapters.register_dumper(np.ndarray, dumper)
    conn.adapters.register_loader(vector_oid, RawVectorLoader)
    conn.execute(
        "SELECT set_config('hnsw.ef_search', '40', false), "
        "set_config('hnsw.iterative_scan', 'strict_order', false)"
    )
    return conn


def raw_insert(
    conn: psycopg.Connection[Any],
    vector_oid: int,
    matrix: Matrix,
    texts: list[str],
    metadata: list[dict[str, Any]],
) -> None:
    """The same COPY in one transaction, row by row with psycopg's adapters."""
    statement = sql.SQL(
        "COPY {} (id, embedding, text, metadata, metadata_kinds) FROM STDIN (FORMAT BINARY)"
    ).format(sql.Identifier(RAW_TABLE))
    with conn.transaction(), conn.cursor() as cur, cur.copy(statement) as copy:
        copy.set_types(["text", vector_oid, "text", "jsonb", "text[]"])
        for i in range(len(matrix)):
            meta = metadata[i]
            copy.write_row(
                (
                    str(uuid.uuid4()),
                    matrix[i],
                    texts[i],
                    Jsonb(meta),
                    [("s:" if isinstance(v, str) else "n:") + k for k, v in meta.items()],
                )
            )


# ---------------------------------------------------------------------- data


def clustered_unit_vectors(count: int, dim: int, seed: int) -> Matrix:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(1000, dim))
    vectors = centres[rng.integers(0, 1000, size=count)] + 0.35 * rng.normal(size=(count, dim))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.astype(np.float32)


def exact_top_k(
    matrix: Matrix, queries: Matrix, k: int, rows: npt.NDArray[np.intp]
) -> list[set[int]]:
    """The exact top-k rows (among ``rows``) of every query, by brute force."""
    scores = matrix[rows] @ queries.T  # (len(rows), len(queries))
    best = np.argpartition(-scores, k, axis=0)[:k]
    return [{int(i) for i in rows[best[:, q]]} for q in range(queries.shape[0])]


_SERVER: list[psutil.Process] = []


def _server_processes() -> list[psutil.Process]:
    """The PostgreSQL processes of this machine (the local server's backends)."""
    return [p for p in psutil.process_iter(["name"]) if p.info["name"] == "postgres"]


def _cpu() -> float:
    """CPU seconds used so far by this process and the server processes found."""
    total = time.process_time()
    for process in _SERVER:
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


CPU: dict[str, list[float]] = {}


def timed(run: Callable[[], Any], side: str = "") -> float:
    """Wall seconds of ``run()``; its CPU seconds (client + server) go to ``CPU[side]``."""
    start, cpu = time.perf_counter(), _cpu()
    run()
    wall = time.perf_counter() - start
    CPU.setdefault(side, []).append(_cpu() - cpu)
    return wall


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q))


# ---------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--batch", type=int, default=10_000, help="rows per add_all / COPY")
    parser.add_argument("--dsn", default=os.environ.get("RAGLOOM_PG_DSN", DEFAULT_DSN))
    parser.add_argument("--keep", action="store_true", help="keep the benchmark tables")
    run(parser.parse_args())


def run(args: argparse.Namespace) -> dict[str, Any]:
    """One run with ``main``'s options (``rows``, ``dim``, ``queries``, ``k``, ``batch``,
    ``dsn``, ``keep``): prints the table and returns the summary."""
    n, dim, k = args.rows, args.dim, args.k
    CPU.clear()

    print(f"data: {n} x {dim} clustered unit vectors, {args.queries} queries, top-{k}")
    matrix = clustered_unit_vectors(n + args.queries, dim, seed=42)
    matrix, queries = matrix[:n], matrix[n:]
    texts = [f"segment {i} of the benchmark corpus" for i in range(n)]
    metadata: list[dict[str, Any]] = [{"tenant": f"t{i % 10}", "n": i} for i in range(n)]

    load_before = os.getloadavg()[0]
    store = PgVectorEmbeddingStore(
        args.dsn, TABLE, dimension=dim, index="none", drop_table_first=True
    )
    vector_oid = store._db.vector_oid
    assert vector_oid is not None
    raw = raw_connection(args.dsn, vector_oid)
    _SERVER[:] = _server_processes()
    raw.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(RAW_TABLE)))
    raw.execute(
        sql.SQL("CREATE TABLE {} (LIKE {} INCLUDING ALL)").format(
            sql.Identifier(RAW_TABLE), sql.Identifier(TABLE)
        )
    )
    print(
        "server:",
        raw.execute("SELECT version()").fetchone()[0].split(",")[0],  # type: ignore[index]
        "| pgvector",
        raw.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0],  # type: ignore[index]
    )

    # -- insert ------------------------------------------------------------------------
    segments = [TextSegment(text, meta) for text, meta in zip(texts, metadata, strict=True)]

    # Interleaved batch by batch, so that both meet the same server state.
    ours_insert = raw_insert_time = 0.0
    for start in range(0, n, args.batch):
        stop = min(start + args.batch, n)
        ours_insert += timed(
            partial(store.add_all, matrix[start:stop], segments[start:stop]), "insert ragloom"
        )
        raw_insert_time += timed(
            partial(
                raw_insert,
                raw,
                vector_oid,
                matrix[start:stop],
                texts[start:stop],
                metadata[start:stop],
            ),
            "insert raw",
        )
    print(
        f"\ninsert: ragloom {n / ours_insert:,.0f} rows/s ({ours_insert:.1f} s), "
        f"raw psycopg {n / raw_insert_time:,.0f} rows/s ({raw_insert_time:.1f} s)"
    )

    del segments, texts, metadata  # the corpus objects are not needed for searching
    gc.collect()

    # -- index ---------------------------------------------------------------------------
    raw.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(RAW_TABLE)))
    build = timed(lambda: store.create_index("hnsw"))
    raw.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(TABLE)))
    print(f"HNSW build (m=16, ef_construction=64): {build:.1f} s")

    # -- search --------------------------------------------------------------------------
    all_rows = np.arange(n)
    tenant_rows = np.flatnonzero(np.array([i % 10 == 3 for i in range(n)]))
    condition = metadata_key("tenant").is_equal_to("t3")

    results: dict[str, Any] = {}
    got: dict[str, Any] = {}  # what the last timed search returned
    for label, filt, eligible in [
        ("search", None, all_rows),
        ("filtered", condition, tenant_rows),
    ]:
        truth = exact_top_k(matrix, queries, k, eligible)
        ours: list[float] = []
        theirs: list[float] = []
        recall_hits = 0
        for position, query in enumerate([*queries[:10], *queries]):  # 10 warm-up queries
            request = EmbeddingSearchRequest(Embedding(query), max_results=k, filter=filt)
            statement, params = store._search_statement(filt, query, 1.0, k)
            params = [query if type(p).__name__ == "VectorParam" else p for p in params]

            # Alternate who goes first: the second run of a query finds the pages warm.
            def ours_call(request: EmbeddingSearchRequest = request) -> None:
                got["matches"] = store.search(request).matches

            def raw_call(statement: Any = statement, params: Any = params) -> None:
                got["rows"] = raw.execute(statement, params, binary=True).fetchall()

            side = label if position >= 10 else "warm-up"
            if position % 2:
                raw_time = timed(raw_call, f"{side} raw")
                our_time = timed(ours_call, f"{side} ragloom")
            else:
                our_time = timed(ours_call, f"{side} ragloom")
                raw_time = timed(raw_call, f"{side} raw")
            matches, rows = got["matches"], got["rows"]
            if position < 10:
                continue
            ours.append(our_time)
            theirs.append(raw_time)
            assert len(rows) == len(matches)
            found = {int(m.embedded.metadata["n"]) for m in matches if m.embedded}
            recall_hits += len(found & truth[position - 10])
        recall = recall_hits / (k * len(queries))
        results[label] = (ours, theirs, recall)

    print(f"\n{'measure':34} {'ragloom':>10} {'psycopg':>10} {'ratio':>7} {'goal':>6}")
    rows_out = [("insert (s per 100k rows)", ours_insert * 1e5 / n, raw_insert_time * 1e5 / n)]
    for label in ("search", "filtered"):
        ours, theirs, _ = results[label]
        rows_out.append(
            (
                f"{label} top-{k} median (ms)",
                statistics.median(ours) * 1e3,
                statistics.median(theirs) * 1e3,
            )
        )
        rows_out.append(
            (f"{label} top-{k} p95 (ms)", percentile(ours, 95) * 1e3, percentile(theirs, 95) * 1e3)
        )
    for name, a, b in rows_out:
        ratio = a / b
        verdict = "ok" if ratio <= 1.2 else "OVER"
        print(f"{name:34} {a:10.3f} {b:10.3f} {ratio:6.2f}x {'1.20x':>6} {verdict}")
    # On a shared machine the medians drift with the load; the median of the per-query
    # differences (each pair run back to back) is the steadier estimate of the overhead.
    for label in ("search", "filtered"):
        ours, theirs, _ = results[label]
        overhead = statistics.median([a - b for a, b in zip(ours, theirs, strict=True)])
        ratio = 1 + overhead / statistics.median(theirs)
        print(
            f"{label}: median paired overhead {overhead * 1e3:.3f} ms per search, "
            f"{ratio:.2f}x the raw median ({'ok' if ratio <= 1.2 else 'OVER'})"
        )
    for label in ("search", "filtered"):
        print(f"recall@{k} ({label}, HNSW ef_search=40 vs exact): {results[label][2]:.4f}")
    cpu_ratio = {
        label: sum(CPU[f"{label} ragloom"]) / sum(CPU[f"{label} raw"])
        for label in ("insert", "search", "filtered")
    }
    load = [load_before, os.getloadavg()[0]]
    print(
        "CPU ratio (client + server, summed): "
        + ", ".join(f"{label} {ratio:.2f}x" for label, ratio in cpu_ratio.items())
        + f"; load average {load[0]:.1f} -> {load[1]:.1f}"
    )
    summary = {
        "rows": n,
        "dim": dim,
        "cpu_ratio": cpu_ratio,
        "load": load,
        "insert_rows_per_s": {"ragloom": n / ours_insert, "psycopg": n / raw_insert_time},
        "hnsw_build_s": build,
        **{
            label: {
                "median_ms": [statistics.median(o) * 1e3, statistics.median(t) * 1e3],
                "p95_ms": [percentile(o, 95) * 1e3, percentile(t, 95) * 1e3],
                "recall": r,
                "paired_overhead_ms": statistics.median([a - b for a, b in zip(o, t, strict=True)])
                * 1e3,
            }
            for label, (o, t, r) in results.items()
        },
    }
    print("\njson:", json.dumps(summary))
    if not args.keep:
        store.remove_all()
        raw.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(TABLE)))
    raw.close()
    store.close()
    return summary


def suite_part(rows: int, queries: int, dsn: str | None = None) -> dict[str, Any]:
    """``run_suite.py``'s part: one run of ``rows`` rows (``dsn``: the local service's)."""
    return run(
        argparse.Namespace(
            rows=rows,
            dim=384,
            queries=queries,
            k=10,
            batch=10_000,
            dsn=dsn or os.environ.get("RAGLOOM_PG_DSN", DEFAULT_DSN),
            keep=False,
        )
    )


def section(result: dict[str, Any]) -> list[str]:
    """The benchmarks page's rows for ``suite_part``'s result."""
    speed = result["insert_rows_per_s"]
    cpu = result["cpu_ratio"]
    load = result["load"]
    lines = [
        "## pgvector store against psycopg",
        "",
        f"{result['rows']:,} clustered unit vectors of 384 dimensions with a text and two",
        "metadata keys, on the local PostgreSQL + pgvector of `scripts/services/pgvector.sh`",
        "(`scripts/bench/bench_pgvector.py`): *insert* is `store.add_all` (binary COPY) vs",
        "raw psycopg COPYing the same rows, batch by batch; *search* is top-10 with HNSW",
        "(ef_search 40), `store.search` vs psycopg executing the same statement, query by",
        'query (who goes first alternates); *filtered* adds `tenant == "t3"`. CPU is this',
        "process plus the server's processes; CPU ratios are over the summed calls, wall",
        "ratios of the medians (insert: of the totals). Load average",
        f"{load[0]:.1f} before, {load[1]:.1f} after.",
        "",
        "| measure | ragloom (ms) | psycopg (ms) | CPU ratio | wall ratio | recall@10 |",
        "|---|---|---|---|---|---|",
        f"| insert (per 10k rows) | {1e7 / speed['ragloom']:.0f} | {1e7 / speed['psycopg']:.0f}"
        f" | {cpu['insert']:.2f}x | {speed['psycopg'] / speed['ragloom']:.2f}x | - |",
    ]
    for label in ("search", "filtered"):
        ours, theirs = result[label]["median_ms"]
        lines.append(
            f"| {label} | {ours:.2f} | {theirs:.2f} | {cpu[label]:.2f}x | "
            f"{ours / theirs:.2f}x | {result[label]['recall']:.3f} |"
        )
    lines += ["", "Goal: at most 1.2x on each (recall is HNSW's, the same for both).", ""]
    return lines


if __name__ == "__main__":
    main()
