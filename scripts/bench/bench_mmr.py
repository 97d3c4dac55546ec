"""MMR speed: ragloom.core.mmr (numpy, vectorized) vs a plain-python reference, same run.

Both pick the same order (checked); timings interleaved, best of ``--repeats``.
Usage: python scripts/bench/bench_mmr.py [--dims 384] [--repeats 3]
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable, Sequence

import numpy as np

from ragloom.core.mmr import maximal_marginal_relevance


def reference(
    query: Sequence[float], vectors: Sequence[Sequence[float]], lam: float, k: int
) -> list[int]:
    """MMR straight from the definition, in plain python (cosines cached per pair)."""

    def norm(v: Sequence[float]) -> list[float]:
        n = math.sqrt(sum(x * x for x in v))
        return [x / n for x in v] if n else [0.0] * len(v)

    units = [norm(v) for v in vectors]
    q = norm(query)
    rel = [sum(a * b for a, b in zip(u, q, strict=True)) for u in units]
    penalty = [0.0] * len(units)
    left = set(range(len(units)))
    chosen: list[int] = []
    while left and len(chosen) < k:
        best = max(left, key=lambda i: (lam * rel[i] - (1 - lam) * penalty[i], -i))
        chosen.append(best)
        left.remove(best)
        for i in left:
            sim = sum(a * b for a, b in zip(units[i], units[best], strict=True))
            penalty[i] = sim if len(chosen) == 1 else max(penalty[i], sim)
    return chosen


def timed(
    call: Callable[..., list[int]], *args: object, **kwargs: object
) -> tuple[float, list[int]]:
    start = time.perf_counter()
    result = call(*args, **kwargs)
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"dims={args.dims}, lambda=0.5, best of {args.repeats}")
    print(f"{'candidates':>10} {'k':>4} {'numpy ms':>9} {'python ms':>10} {'speed-up':>9}")
    for n, k in ((20, 10), (100, 10), (100, 50), (500, 20), (1000, 50)):
        vectors = rng.normal(size=(n, args.dims))
        query = rng.normal(size=args.dims)
        as_lists, q_list = vectors.tolist(), query.tolist()
        fast_t = slow_t = math.inf
        for _ in range(args.repeats):  # interleaved
            t, fast = timed(maximal_marginal_relevance, query, vectors, max_results=k)
            fast_t = min(fast_t, t)
            t, slow = timed(reference, q_list, as_lists, 0.5, k)
            slow_t = min(slow_t, t)
        assert fast == slow, (n, k)
        print(f"{n:>10} {k:>4} {fast_t * 1e3:>9.2f} {slow_t * 1e3:>10.1f} {slow_t / fast_t:>8.0f}x")


if __name__ == "__main__":
    main()
