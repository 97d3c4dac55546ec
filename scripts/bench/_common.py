"""Measurement helpers shared by the benchmark scripts: interleaved rounds and ratios.

Contenders run one after the other in each round, in an order that rotates from round to
round, so that load from other processes weighs on all of them alike; a contender's
time is the median of its rounds, and a ratio comes with its spread (the lowest and
highest of the per-round ratios).
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Timings:
    """Seconds per round of each contender, and what its last round returned."""

    seconds: dict[str, list[float]] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)

    def median(self, name: str) -> float:
        return statistics.median(self.seconds[name])

    def ratio(self, name: str, baseline: str) -> tuple[float, float, float]:
        """Median, lowest and highest of the per-round ratios ``name / baseline``
        (above 1: ``name`` took longer)."""
        ratios = [a / b for a, b in zip(self.seconds[name], self.seconds[baseline], strict=True)]
        return statistics.median(ratios), min(ratios), max(ratios)


def interleave(
    runs: dict[str, Callable[[], Any]], rounds: int, *, collect: bool = True, keep: bool = True
) -> Timings:
    """Time every run once per round, the starting contender rotating each round.

    The value a run returns is kept until its time is taken (freeing it is not timed)
    and the last one is returned in ``Timings.results`` (with ``keep``; without it, each
    is freed once timed, so that large results do not pile up).
    """
    names = list(runs)
    timings = Timings({name: [] for name in names})
    for round_ in range(rounds):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            if collect:
                gc.collect()
            start = time.perf_counter()
            kept = runs[name]()
            timings.seconds[name].append(time.perf_counter() - start)
            if keep:
                timings.results[name] = kept
            del kept
    return timings


def spread(ratio: tuple[float, float, float]) -> str:
    """``1.23x (1.10-1.40)``: a median ratio and its spread over the rounds."""
    median, low, high = ratio
    return f"{median:.2f}x ({low:.2f}-{high:.2f})"
