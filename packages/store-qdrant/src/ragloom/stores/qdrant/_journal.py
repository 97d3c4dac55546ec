"""The undo journal that makes an ``add_all`` batch all-or-nothing in local mode.

Qdrant's local mode commits every point on its own (one SQLite transaction each), so a
process killed during ``add_all`` left part of the batch on disk. Before writing a batch
the store records, in one file per collection next to the local database, the batch's
point ids and the points they replace (as they were); the file is replaced atomically
(write, fsync, rename) and removed once the whole batch is written. A store that opens
the collection and finds the file rolls the unfinished batch back: it deletes the batch's
points and writes the recorded ones again (a kill during that is rolled back again on
the next open). JSON, not pickle: the file is read back as data only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from ragloom.core.errors import EmbeddingStoreError

__all__ = ["PriorPoint", "clear", "journal_path", "read", "write"]

PriorPoint = dict[str, Any]
"""A point as it was before the batch: ``{"id", "vector", "payload"}``."""


def journal_path(directory: str | os.PathLike[str], collection: str) -> Path:
    """The journal of ``collection`` in the local database ``directory``."""
    digest = hashlib.blake2b(collection.encode("utf-8"), digest_size=12).hexdigest()
    return Path(directory) / f".ragloom-batch-{digest}.json"


def write(path: Path, collection: str, pids: list[str], prior: list[PriorPoint]) -> None:
    """Record an unfinished batch durably (the old journal is replaced atomically)."""
    temporary = path.with_suffix(".tmp")
    body = {"collection": collection, "pids": pids, "prior": prior}
    with open(temporary, "w", encoding="utf-8") as file:
        json.dump(body, file, separators=(",", ":"))
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    _sync_directory(path.parent)


def read(path: Path, collection: str) -> tuple[list[str], list[PriorPoint]] | None:
    """The unfinished batch recorded at ``path`` (None when there is none)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        body = json.loads(text)
        if body["collection"] != collection:
            raise ValueError(f"it belongs to collection {body['collection']!r}")
        pids, prior = body["pids"], body["prior"]
        if not (isinstance(pids, list) and isinstance(prior, list)):
            raise ValueError("pids and prior must be lists")
    except (ValueError, KeyError, TypeError) as exc:
        raise EmbeddingStoreError(
            f"Qdrant collection {collection!r}: the batch journal {str(path)!r} is damaged "
            f"({exc}); the last add_all may be partly written: remove the file and re-run it"
        ) from exc
    return pids, prior


def clear(path: Path) -> None:
    """The batch is complete (or rolled back): forget it."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def _sync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (a no-op where directories cannot be opened)."""
    with contextlib.suppress(OSError):
        descriptor = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
