"""An index's vector store from configuration, for ``ragloom ingest/query/ask`` and
``ragloom serve`` alike.

The kind names a provider of the ``ragloom.embedding_stores`` entry-point group
(``pgvector``, ``qdrant``, ``milvus`` once their packages are installed) and the options
are its keyword arguments; ``memory`` (the default) is the in-memory store persisted in
the index directory. With another store the directory keeps the manifest and the BM25
index of the same segments; the vectors live in the store.

The marker file (:data:`MARKER`) records the kind a directory was built with, so it is
never read against another store, and the names of its data inside the store
(:data:`REMEMBERED`: collection, table, schema...). It never says where to connect (a
URL, a conninfo, a local path) nor how the store behaves: a directory can come from a
stranger, so connection targets and settings come from the user's own flags, environment
or configuration, and a marker holding anything else is refused (see
:func:`recorded_store`). A directory with a manifest and no marker is an in-memory index.
"""

from __future__ import annotations

import inspect
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragloom.core import EmbeddingStore, PluginError, plugins
from ragloom.core.errors import InvalidArgumentError, RagIndexError
from ragloom.easy_rag.index import MANIFEST, STORE, RagIndex

__all__ = [
    "MARKER",
    "MARKER_BYTES",
    "MEMORY",
    "REMEMBERED",
    "Fields",
    "StoreConfigError",
    "Recorded",
    "open_store",
    "recorded_store",
    "remembered_options",
    "check_store",
    "open_index",
]

MARKER = "vector-store.json"
MEMORY = "memory"
#: The options a marker may hold: names of the data inside the store the user connects
#: to, never where to connect, a secret, or a setting (a deadline, a pool size, a drop).
REMEMBERED = frozenset(
    {"collection", "collection_name", "table", "schema", "index_name", "db_name"}
)
#: A marker larger than this is not one ragloom wrote.
MARKER_BYTES = 64 * 1024
_NAME_CHARS = 255  # a remembered name's longest (PostgreSQL's identifiers: 63)
_KIND = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")


class StoreConfigError(InvalidArgumentError):
    """A store kind or option that cannot be used, or a directory built with another
    store (names the field, as its caller spells it, and the value)."""


@dataclass(frozen=True)
class Fields:
    """How the caller names the two settings in messages: ``store.kind`` and
    ``store.options`` in the server's configuration, ``--store`` and ``--store-option``
    on the command line."""

    kind: str = "store.kind"
    options: str = "store.options"


@dataclass(frozen=True)
class Recorded:
    """What an index directory records about its store: the kind, and the remembered
    options (empty for the in-memory store)."""

    kind: str
    options: dict[str, Any]


def open_store(
    kind: str, options: Mapping[str, Any], dimension: int, *, fields: Fields = Fields()
) -> EmbeddingStore:
    """The store ``kind``, built with ``options`` (and ``dimension`` when the store takes
    one and it is not given); :class:`StoreConfigError` names the field at fault."""
    factory = _factory(kind, fields)
    arguments = dict(options)
    try:
        accepted: Mapping[str, inspect.Parameter] = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # no signature to read: the factory decides
        accepted = {}
    if "dimension" in accepted and "dimension" not in arguments:
        arguments["dimension"] = dimension
    unknown = sorted(set(arguments) - set(accepted)) if accepted else []
    if unknown and not any(p.kind is p.VAR_KEYWORD for p in accepted.values()):
        raise StoreConfigError(
            f"{fields.options}: {', '.join(unknown)} not accepted by {kind!r} "
            f"(it takes {', '.join(sorted(accepted))})"
        )
    try:
        store = factory(**arguments)
    except (TypeError, ValueError) as exc:
        raise StoreConfigError(f"{fields.options} of {kind!r}: {exc}") from None
    if not isinstance(store, EmbeddingStore):
        _close(store)
        raise StoreConfigError(f"{fields.kind} {kind!r} is not an embedding store")
    return store


def _factory(kind: str, fields: Fields) -> Any:
    try:
        return plugins.component(plugins.EMBEDDING_STORES, kind)
    except PluginError as exc:
        raise StoreConfigError(f"{fields.kind} {kind!r}: {exc}") from None


def _close(store: object) -> None:
    close = getattr(store, "close", None)
    if callable(close):
        close()


def remembered_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options a marker keeps: the names in :data:`REMEMBERED` given as text. Where
    to connect (a conninfo, a URL, a path), secrets and settings are never kept."""
    return {
        name: value
        for name, value in options.items()
        if name in REMEMBERED and isinstance(value, str) and _is_name(value)
    }


def _is_name(value: str) -> bool:
    return 0 < len(value) <= _NAME_CHARS and value.isprintable()


def _read_marker(marker: Path) -> object:
    try:
        with marker.open("rb") as file:
            data = file.read(MARKER_BYTES + 1)
    except OSError as exc:
        raise RagIndexError(f"{marker}: unreadable store marker: {exc}") from exc
    if len(data) > MARKER_BYTES:
        raise RagIndexError(f"{marker}: not a store marker (over {MARKER_BYTES} bytes)")
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise RagIndexError(f"{marker}: unreadable store marker: {exc}") from None


def recorded_store(directory: Path) -> Recorded | None:
    """What ``directory`` records (``memory`` for an index without a marker); ``None``
    for a directory that holds no index yet."""
    marker = directory / MARKER
    if marker.is_file():
        data = _read_marker(marker)
        data = data if isinstance(data, dict) else {}
        kind, options = data.get("kind"), data.get("options", {})
        if not isinstance(kind, str) or not isinstance(options, dict):
            raise RagIndexError(
                f'{marker}: not a store marker (a JSON object with "kind" and "options"); '
                "rebuild the index"
            )
        if not _KIND.fullmatch(kind):
            raise RagIndexError(f"{marker}: kind {kind[:80]!r} is not a store's name")
        for name, value in options.items():
            if name not in REMEMBERED:
                raise RagIndexError(
                    f"{marker}: option {name[:80]!r} is not one a marker may hold (only "
                    f"{', '.join(sorted(REMEMBERED))}); where to connect and the store's "
                    "settings come from your own options, never from an index directory: "
                    "remove it from the marker"
                )
            if not (isinstance(value, str) and _is_name(value)):
                raise RagIndexError(
                    f"{marker}: option {name!r} is {repr(value)[:80]}, not a name "
                    f"(text of 1-{_NAME_CHARS} printable characters)"
                )
        return Recorded(kind, options)
    if (directory / MANIFEST).is_file():
        return Recorded(MEMORY, {})
    return None


def check_store(directory: Path, kind: str, *, fields: Fields = Fields()) -> Recorded | None:
    """What ``directory`` records, after checking it was built with ``kind``."""
    recorded = recorded_store(directory)
    if recorded is not None and recorded.kind != kind:
        raise StoreConfigError(
            f"{fields.kind} {kind!r}: the index directory {directory} was built with store "
            f"{recorded.kind!r}; use another index directory or the same store"
        )
    if kind != MEMORY and (directory / STORE).is_dir():
        raise StoreConfigError(
            f"{fields.kind} {kind!r}: {directory} holds an in-memory store; use another "
            "index directory"
        )
    return recorded


def _remember(directory: Path, kind: str, options: Mapping[str, Any]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    marker = {"kind": kind, "options": remembered_options(options)}
    temporary = directory / f"{MARKER}.tmp"  # never half a marker: it binds the directory
    temporary.write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
    os.replace(temporary, directory / MARKER)


def open_index(
    path: Path,
    kind: str,
    options: Mapping[str, Any],
    dimension: int,
    *,
    model: str | None = None,
    fields: Fields = Fields(),
) -> RagIndex:
    """The index at ``path`` over store ``kind`` with ``options`` (the options the
    directory remembers fill in those not given). With ``model`` (a writer, under the
    index's lock): opened or created, refusing another model's index, and a new one's
    marker records the kind and the options it may remember. Without: the existing index
    (:class:`~ragloom.core.RagIndexError` when there is none)."""
    recorded = check_store(path, kind, fields=fields)
    if recorded is not None and kind != MEMORY and not options:
        _factory(kind, fields)  # a kind not installed says so first
        raise StoreConfigError(
            f"{fields.options}: {path} keeps its vectors in store {kind!r}; say where that "
            f"store is (its {MARKER} never does: a directory may come from anyone)"
        )
    if recorded is not None:
        options = {**recorded.options, **options}
    if kind == MEMORY and options:
        raise StoreConfigError(f"{fields.options}: the memory store takes none")
    if model is None and not (path / MANIFEST).is_file():
        return RagIndex.open(path)  # "no ragloom index here", before any connection
    store = None if kind == MEMORY else open_store(kind, options, dimension, fields=fields)
    try:
        if model is None:
            return RagIndex.open(path, store=store)
        if recorded is None and store is not None:
            _remember(path, kind, options)
        return RagIndex.open_or_create(path, model, store=store)
    except BaseException:  # another model's or an unreadable manifest: release the store
        _close(store)
        raise
