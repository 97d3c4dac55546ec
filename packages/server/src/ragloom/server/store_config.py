"""The server's vector store from configuration: ``store.kind`` names a provider of the
``ragloom.embedding_stores`` entry-point group (``pgvector``, ``qdrant``, ``milvus`` once
their packages are installed) and ``store.options`` are its keyword arguments; ``memory``
(the default) is the in-memory store persisted in the index directory.

With another store the index directory keeps what the server itself owns: the manifest of
uploads and the BM25 index of the same segments (hybrid retrieval). The vectors and their
metadata live in the store, so the tenant filter of every retrieval runs in the store's
own query. A marker file records the kind, so a directory is never read against a store
it was not built with.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from pathlib import Path

from ragloom.core import EmbeddingStore, PluginError, plugins
from ragloom.easy_rag import RagIndex
from ragloom.easy_rag.index import MANIFEST, STORE
from ragloom.server.settings import ServerConfigError, StoreSettings

__all__ = ["MARKER", "open_index", "open_store"]

MARKER = "server-store.json"


def open_store(settings: StoreSettings, dimension: int) -> EmbeddingStore:
    """The store ``settings`` name, built with its options (and ``dimension`` when the
    store takes one and it is not given); :class:`ServerConfigError` names the field."""
    try:
        factory = plugins.component(plugins.EMBEDDING_STORES, settings.kind)
    except PluginError as exc:
        raise ServerConfigError(f"store.kind {settings.kind!r}: {exc}") from None
    options = dict(settings.options)
    try:
        accepted: Mapping[str, inspect.Parameter] = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # no signature to read: the factory decides
        accepted = {}
    if "dimension" in accepted and "dimension" not in options:
        options["dimension"] = dimension
    unknown = sorted(set(options) - set(accepted)) if accepted else []
    if unknown and not any(p.kind is p.VAR_KEYWORD for p in accepted.values()):
        raise ServerConfigError(
            f"store.options: {', '.join(unknown)} not accepted by {settings.kind!r} "
            f"(it takes {', '.join(sorted(accepted))})"
        )
    try:
        store = factory(**options)
    except (TypeError, ValueError) as exc:
        raise ServerConfigError(f"store.options of {settings.kind!r}: {exc}") from None
    if not isinstance(store, EmbeddingStore):
        raise ServerConfigError(f"store.kind {settings.kind!r} is not an embedding store")
    return store


def _check_marker(directory: Path, kind: str) -> None:
    marker = directory / MARKER
    if marker.is_file():
        recorded = json.loads(marker.read_text(encoding="utf-8")).get("kind")
    elif (directory / MANIFEST).is_file():
        recorded = "memory"  # an index `ragloom ingest` wrote
    else:
        recorded = None
    if recorded is not None and recorded != kind:
        raise ServerConfigError(
            f"store.kind {kind!r}: the index directory {directory} was built with store "
            f"{recorded!r}; use another --index directory or the same store"
        )
    if kind != "memory" and (directory / STORE).is_dir():
        raise ServerConfigError(
            f"store.kind {kind!r}: {directory} holds an in-memory store; use another --index"
        )
    if recorded is None and kind != "memory":
        directory.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps({"kind": kind}) + "\n", encoding="utf-8")


def open_index(path: Path, model: str, settings: StoreSettings, dimension: int) -> RagIndex:
    """The index at ``path`` over the configured store (created when new)."""
    _check_marker(path, settings.kind)
    if settings.kind == "memory":
        if settings.options:
            raise ServerConfigError("store.options: the memory store takes none")
        return RagIndex.open_or_create(path, model)
    store = open_store(settings, dimension)
    try:
        return RagIndex.open_or_create(path, model, store=store)
    except BaseException:  # another model's or an unreadable manifest: release the store
        RagIndex.create(path, model, store=store).close()
        raise
