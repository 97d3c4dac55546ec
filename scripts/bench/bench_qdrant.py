"""Benchmark QdrantEmbeddingStore against qdrant-client called directly, in one run.

Seeded clustered unit vectors (20k x 384 float32 by default), each with a segment (text
and two metadata keys), in qdrant-client's local mode (``:memory:``; ``--path`` for an
on-disk local database, ``--url`` for a server). Both sides get the same data in the
same batches, interleaved (who goes first alternates), and both are timed by wall clock
and by CPU (this process: local mode computes in-process):

- insert:   ``store.add_all`` (ids given) vs ``client.upsert`` of points a qdrant-client
            user writes (uuid id, vector, payload {text, tenant, n}), ``--batch`` rows
            per call on both sides (the store's ``batch_size`` too)
- search:   top-10, ``store.search`` vs ``client.query_points(limit=10,
            with_payload=True)`` on a collection of its own, query by query; recall@10 of
            both against exact numpy search
- filtered: the same with ``tenant == "t3"`` (10% of the rows)

Ratios are ragloom over the raw client (goal: <= 1.2x): of the summed CPU seconds
(the steadier measure on a shared machine) and of the wall-clock medians.

    .venv/bin/python scripts/bench/bench_qdrant.py [--rows 20000] [--dim 384]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
from qdrant_client import QdrantClient, models

from ragloom.core import Embedding, EmbeddingSearchRequest, TextSegment, metadata_key
from ragloom.stores.qdrant import QdrantEmbeddingStore

Matrix = npt.NDArray[np.float32]
STORE, RAW = "bench_ragloom", "bench_raw"
Sample = tuple[float, float]
"""(wall seconds, CPU seconds) of one call."""


def clustered_unit_vectors(count: int, dim: int, seed: int) -> Matrix:
    """Sentence-embedding-like data: 1000 cluster centres plus noise, normalized."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(1000, dim))
    vectors = centres[rng.integers(0, 1000, size=count)] + 0.35 * rng.normal(size=(count, dim))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.astype(np.float32)


def timed(call: Callable[[], Any]) -> tuple[Sample, Any]:
    """((wall seconds, CPU seconds), result) of ``call()``."""
    start, cpu = time.perf_counter(), time.process_time()
    result = call()
    return (time.perf_counter() - start, time.process_time() - cpu), result


def interleaved(
    turn: int, ours: Callable[[], Any], raw: Callable[[], Any]
) -> tuple[tuple[Sample, Any], tuple[Sample, Any]]:
    """Both timed, the one going first alternating with ``turn`` (no order bias)."""
    if turn % 2:
        theirs = timed(raw)
        return timed(ours), theirs
    mine = timed(ours)
    return mine, timed(raw)


def ratios(ours: list[Sample], raw: list[Sample]) -> dict[str, float]:
    """CPU ratio (summed CPU seconds) and wall ratio (medians), ragloom over raw."""
    return {
        "cpu": sum(c for _, c in ours) / sum(c for _, c in raw),
        "wall": statistics.median(w for w, _ in ours) / statistics.median(w for w, _ in raw),
        "ours_ms": statistics.median(w for w, _ in ours) * 1e3,
        "raw_ms": statistics.median(w for w, _ in raw) * 1e3,
    }


def recall(found: list[list[int]], exact: list[list[int]]) -> float:
    hits = sum(len(set(f) & set(e)) for f, e in zip(found, exact, strict=True))
    return hits / sum(len(e) for e in exact)


def run(
    rows: int = 20_000,
    dim: int = 384,
    queries: int = 200,
    k: int = 10,
    batch: int = 256,
    path: str | None = None,
    url: str | None = None,
) -> dict[str, Any]:
    """One interleaved run (see the module docstring): the ratios, recalls and load."""
    load_before = os.getloadavg()[0]
    matrix = clustered_unit_vectors(rows + queries, dim, seed=42)
    matrix, query_matrix = matrix[:rows], matrix[rows:]
    ids = [f"doc-{i}" for i in range(rows)]
    texts = [f"segment {i} of the benchmark corpus" for i in range(rows)]
    metadata: list[dict[str, Any]] = [{"tenant": f"t{i % 10}", "n": i} for i in range(rows)]
    segments = [TextSegment(t, m) for t, m in zip(texts, metadata, strict=True)]

    directory = tempfile.mkdtemp(prefix="bench-qdrant-") if path is None else path
    try:
        if url is not None:
            client = QdrantClient(url=url)
        elif path is not None:
            client = QdrantClient(path=directory, force_disable_check_same_thread=True)
        else:
            client = QdrantClient(location=":memory:", force_disable_check_same_thread=True)
        for name in (STORE, RAW):
            if client.collection_exists(name):
                client.delete_collection(name)
        store = QdrantEmbeddingStore(STORE, client=client, dimension=dim, batch_size=batch)
        client.create_collection(
            RAW, vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE)
        )

        ours_insert: list[Sample] = []
        raw_insert: list[Sample] = []
        for turn, start in enumerate(range(0, rows, batch)):
            stop = min(rows, start + batch)

            def ours_batch(start: int = start, stop: int = stop) -> None:
                store.add_all(matrix[start:stop], segments[start:stop], ids=ids[start:stop])

            def raw_batch(start: int = start, stop: int = stop) -> None:
                """What a qdrant-client user writes: points from the same inputs."""
                vectors = matrix[start:stop].tolist()
                points = [
                    models.PointStruct(
                        id=str(uuid.uuid5(uuid.NAMESPACE_URL, ids[i])),
                        vector=vectors[i - start],
                        payload={"text": texts[i], **metadata[i]},
                    )
                    for i in range(start, stop)
                ]
                client.upsert(RAW, points=points, wait=True)

            (ours, _), (theirs, _) = interleaved(turn, ours_batch, raw_batch)
            ours_insert.append(ours)
            raw_insert.append(theirs)
        result: dict[str, Any] = {"insert": ratios(ours_insert, raw_insert)}

        tenant = np.array([m["tenant"] == "t3" for m in metadata])
        t3 = metadata_key("tenant").is_equal_to("t3")
        raw_t3 = models.Filter(
            must=[models.FieldCondition(key="tenant", match=models.MatchValue(value="t3"))]
        )
        for label, condition, raw_filter, mask in (
            ("search", None, None, None),
            ("filtered", t3, raw_t3, tenant),
        ):
            ours_t: list[Sample] = []
            raw_t: list[Sample] = []
            found: list[list[int]] = []
            found_raw: list[list[int]] = []
            exact: list[list[int]] = []
            for position, query in enumerate(query_matrix):
                request = EmbeddingSearchRequest(Embedding(query), max_results=k, filter=condition)

                def raw_search(
                    query: Matrix = query, raw_filter: models.Filter | None = raw_filter
                ) -> list[Any]:
                    """What a qdrant-client user writes: query, then read the hits."""
                    points = client.query_points(
                        RAW, query=query.tolist(), limit=k, query_filter=raw_filter
                    ).points
                    return [(p.id, p.score, p.payload) for p in points]

                (ours, matches), (theirs, hits) = interleaved(
                    position,
                    lambda: store.search(request),  # noqa: B023
                    raw_search,
                )
                ours_t.append(ours)
                raw_t.append(theirs)
                found.append([int(m.embedded.metadata["n"]) for m in matches.matches])
                found_raw.append([int(payload["n"]) for _, _, payload in hits])
                scores = matrix @ query
                if mask is not None:
                    scores = np.where(mask, scores, -np.inf)
                exact.append([int(i) for i in np.argsort(-scores, kind="stable")[:k]])
            result[label] = {
                **ratios(ours_t, raw_t),
                "recall": recall(found, exact),
                "recall_raw": recall(found_raw, exact),
                "same_ids": found == found_raw,
            }
        store.close()
        client.close()
    finally:
        if path is None:
            shutil.rmtree(directory, ignore_errors=True)
    result["load"] = [load_before, os.getloadavg()[0]]
    result["rows"], result["dim"], result["batch"] = rows, dim, batch
    return result


def suite_part(rows: int, queries: int, repeats: int) -> dict[str, Any]:
    """``run_suite.py``'s part: ``repeats`` independent runs (fresh collections each) and
    the median, lowest and highest of each ratio over them."""
    runs = [run(rows=rows, queries=queries) for _ in range(repeats)]
    summary: dict[str, Any] = {"rows": rows, "queries": queries, "runs": runs}
    for label in ("insert", "search", "filtered"):
        summary[label] = {
            measure: [
                statistics.median(r[label][measure] for r in runs),
                min(r[label][measure] for r in runs),
                max(r[label][measure] for r in runs),
            ]
            for measure in ("cpu", "wall", "ours_ms", "raw_ms")
        }
    return summary


def section(result: dict[str, Any]) -> list[str]:
    """The benchmarks page's rows for ``suite_part``'s result."""

    def spread(values: list[float]) -> str:
        return f"{values[0]:.2f}x ({values[1]:.2f}-{values[2]:.2f})"

    runs = result["runs"]
    loads = [x for r in runs for x in r["load"]]
    lines = [
        "## Qdrant store against qdrant-client",
        "",
        f"{result['rows']:,} clustered unit vectors of 384 dimensions with a text and two",
        "metadata keys, in qdrant-client's local mode (`:memory:`), against the raw client on",
        "a collection of its own (`scripts/bench/bench_qdrant.py`): *insert* is",
        "`store.add_all` (ids given) vs `client.upsert` of the same points in the same",
        f"batches of {runs[0]['batch']}; *search* is top-10 over {result['queries']} queries,",
        "`store.search` (exact float64 scores) vs `query_points(with_payload=True)`;",
        '*filtered* adds `tenant == "t3"` (10% of the rows). Calls interleaved (who goes',
        "first alternates); ratios are ragloom over the raw client, by CPU time (summed over",
        "the calls) and by wall time (medians), median (lowest-highest) over",
        f"{len(runs)} independent runs. Load average {min(loads):.1f}-{max(loads):.1f}.",
        "",
        "| measure | ragloom (ms) | qdrant-client (ms) | CPU ratio | wall ratio | recall@10 |",
        "|---|---|---|---|---|---|",
    ]
    for label in ("insert", "search", "filtered"):
        r = result[label]
        recall = (
            "-"
            if label == "insert"
            else f"{min(x[label]['recall'] for x in runs):.3f} (raw "
            f"{min(x[label]['recall_raw'] for x in runs):.3f})"
        )
        lines.append(
            f"| {label} | {r['ours_ms'][0]:.2f} | {r['raw_ms'][0]:.2f} | {spread(r['cpu'])} | "
            f"{spread(r['wall'])} | {recall} |"
        )
    lines += [
        "",
        "Goal: at most 1.2x on each. Every query returned the same ids in the same order",
        "as the raw client: "
        + (
            "yes." if all(x[k]["same_ids"] for x in runs for k in ("search", "filtered")) else "NO."
        ),
        "",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--batch", type=int, default=256, help="rows per write, both sides")
    parser.add_argument("--path", help="a local on-disk database directory (kept)")
    parser.add_argument("--url", help="a Qdrant server")
    args = parser.parse_args()
    result = run(args.rows, args.dim, args.queries, args.k, args.batch, args.path, args.url)
    for label in ("insert", "search", "filtered"):
        r = result[label]
        extra = f" recall {r['recall']:.3f} (raw {r['recall_raw']:.3f})" if "recall" in r else ""
        print(
            f"{label:<9} ragloom {r['ours_ms']:8.2f} ms  raw {r['raw_ms']:8.2f} ms (medians)  "
            f"cpu {r['cpu']:.2f}x  wall {r['wall']:.2f}x{extra}"
        )
    print(f"load average {result['load'][0]:.1f} -> {result['load'][1]:.1f}")
    print("json:", json.dumps(result))


if __name__ == "__main__":
    main()
