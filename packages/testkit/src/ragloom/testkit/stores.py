"""Every embedding store the cross-store tests compare, opened one way.

``open_store(name, dimension, directory)`` yields a fresh, empty store of kind ``name``
(one of :data:`STORES`) and removes what it made on exit: pgvector's table on the
server of ``RAGLOOM_PG_DSN`` (see :func:`~ragloom.testkit.servers.service_setting`),
Milvus Lite's and Qdrant local mode's collection in files under ``directory``.
``store_options`` gives the same store as keyword arguments of its entry point (what
``ragloom serve`` takes as ``store.options``). The store packages are imported only
when asked for, so the testkit does not depend on them: a missing one is a
:class:`PluginError` naming the distribution to install. A pgvector server that does not
answer fails the test with the command that starts it.
"""

from __future__ import annotations

import contextlib
import importlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ragloom.core import EmbeddingStore, InMemoryEmbeddingStore
from ragloom.core.errors import InvalidArgumentError, PluginError
from ragloom.testkit.servers import service_setting

__all__ = ["STORES", "open_store", "store_options"]

STORES = ("memory", "pgvector", "milvus", "qdrant")
"""The stores :func:`open_store` opens: the in-memory one and each store package's."""

# name -> (module, class, distribution)
_PACKAGES = {
    "pgvector": ("ragloom.stores.pgvector", "PgVectorEmbeddingStore", "ragloom-store-pgvector"),
    "milvus": ("ragloom.stores.milvus", "MilvusEmbeddingStore", "ragloom-store-milvus"),
    "qdrant": ("ragloom.stores.qdrant", "QdrantEmbeddingStore", "ragloom-store-qdrant"),
}
PG_START = "bash scripts/services/pgvector.sh start"


def _import(name: str, module: str | None = None) -> ModuleType:
    """``module`` (default: the store package) for store ``name``; :class:`PluginError`
    naming the distribution when it is not installed."""
    if name not in _PACKAGES:
        raise InvalidArgumentError(
            f"store {name!r}: not one the testkit opens (one of {', '.join(STORES)})"
        )
    package, _, distribution = _PACKAGES[name]
    try:
        return importlib.import_module(module or package)
    except ImportError as exc:
        raise PluginError(
            f"store {name!r} needs {module or package} ({exc}); pip install {distribution}"
        ) from exc


@contextlib.contextmanager
def store_options(
    name: str, directory: Path, *, collection: str | None = None
) -> Iterator[dict[str, Any]]:
    """The keyword arguments (``dimension`` aside) of store ``name``'s class for a new
    collection (``collection``, else a generated name); pgvector's table is dropped on exit.

    pgvector's table always gets a random suffix (the server is shared); the local-mode
    stores keep their files under ``directory``.
    """
    if name == "memory":
        yield {}
        return
    _import(name)
    collection = collection or f"ragloom_{uuid.uuid4().hex[:10]}"
    if name == "milvus":
        yield {"uri": str(directory / f"{collection}.db"), "collection": collection}
    elif name == "qdrant":
        yield {"collection": collection, "path": str(directory / collection), "exact": True}
    else:
        dsn = service_setting("RAGLOOM_PG_DSN")
        psycopg = _import(name, "psycopg")
        try:
            psycopg.connect(dsn, connect_timeout=3).close()
        except psycopg.OperationalError as exc:
            pytest.fail(
                f"PostgreSQL + pgvector not reachable at {dsn} ({exc}); start it with `{PG_START}`",
                pytrace=False,
            )
        table = f"{collection}_{uuid.uuid4().hex[:10]}"
        try:
            yield {"connection": dsn, "collection": table, "index": "none"}
        finally:
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(
                    psycopg.sql.SQL("DROP TABLE IF EXISTS {}").format(psycopg.sql.Identifier(table))
                )


def _drop(name: str, store: Any, collection: str) -> None:
    """Drop the local-mode store's collection (pgvector's table: :func:`store_options`)."""
    if name == "milvus":
        store.client.drop_collection(collection)
    elif name == "qdrant":
        store.client.delete_collection(collection)


@contextlib.contextmanager
def open_store(
    name: str, dimension: int, directory: Path, *, collection: str | None = None
) -> Iterator[EmbeddingStore]:
    """A new, empty store of kind ``name`` (one of :data:`STORES`) of ``dimension``
    vectors; what it made is dropped and the store closed on exit."""
    if name == "memory":
        yield InMemoryEmbeddingStore()
        return
    store_class = getattr(_import(name), _PACKAGES[name][1])
    with store_options(name, directory, collection=collection) as options:
        store = store_class(dimension=dimension, **options)
        try:
            yield store
            _drop(name, store, options["collection"])
        finally:
            store.close()
