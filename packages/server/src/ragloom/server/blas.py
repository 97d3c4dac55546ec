"""limit_blas_threads: how many threads numpy's BLAS may use in the server's process.

The server's parallelism is its concurrent requests (worker threads). A multi-threaded
BLAS adds little to one query's matrix-vector product over the in-memory store and its
idle threads busy-wait after each call (OpenBLAS), taking a core from the event loop and
from the other requests: on 10k segments a retrieval cost 15.7 ms CPU with OpenBLAS's
two threads and 6.4 ms with one (docs/benchmarks.md, "Serving").
"""

from __future__ import annotations

from threadpoolctl import threadpool_info, threadpool_limits  # type: ignore[import-untyped]

__all__ = ["blas_threads", "limit_blas_threads"]


def limit_blas_threads(threads: int) -> None:
    """Cap the BLAS libraries loaded in this process at ``threads`` each, for the rest of
    its life (``0``: leave them as the environment set them)."""
    if threads:
        threadpool_limits(limits=threads, user_api="blas")


def blas_threads() -> dict[str, int]:
    """Each loaded BLAS library (by file) and its thread count now."""
    return {
        str(library["filepath"]): int(library["num_threads"])
        for library in threadpool_info()
        if library.get("user_api") == "blas"
    }
