"""The lifetime of the Milvus Lite servers that stores start.

pymilvus starts one Milvus Lite server process per ``.db`` file (``milvus_lite``'s
process-wide server manager) and never stops it: closing a client leaves it running, so a
long-running program leaked one process per store it opened. Stores opened with a ``.db``
URI take a lease on the file's server here; when the last store holding a lease closes,
the server is stopped, if a store started it. A server that was already running when the
first lease was taken (another client of the process started it) is left running.
"""

from __future__ import annotations

import threading
from pathlib import Path

__all__ = ["acquire", "release"]

_lock = threading.Lock()
_leases: dict[str, int] = {}  # resolved .db path -> open stores holding a lease


def _key(uri: str) -> str:
    """The path milvus_lite's server manager keys its servers by."""
    return str(Path(uri).absolute().resolve())


def _running(key: str) -> bool:
    from milvus_lite.server_manager import server_manager_instance  # type: ignore[import-untyped]

    # The manager has no public query; its server table is ``_servers`` (milvus-lite 2.4-2.5).
    return key in getattr(server_manager_instance, "_servers", {})


def acquire(uri: str) -> str | None:
    """Lease the server of ``uri`` before connecting; the key to :func:`release`, or
    ``None`` when its server was started by something else (then it is never stopped)."""
    key = _key(uri)
    with _lock:
        if key not in _leases:
            if _running(key):
                return None
            _leases[key] = 0
        _leases[key] += 1
    return key


def release(key: str) -> None:
    """Give back a lease; the last one stops the server (after the store's client closed)."""
    from milvus_lite.server_manager import server_manager_instance

    with _lock:
        _leases[key] -= 1
        if _leases[key]:
            return
        del _leases[key]
        if _running(key):  # not when connecting failed before the server started
            server_manager_instance.release_server(key)
