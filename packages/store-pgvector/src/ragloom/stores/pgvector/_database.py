"""Connections: a psycopg pool, the vector type adapters, session settings and retries."""

from __future__ import annotations

import contextlib
import random
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import errors as pg_errors
from psycopg.adapt import Buffer, Dumper, Loader
from psycopg.pq import Format
from psycopg_pool import ConnectionPool, PoolTimeout

from ragloom.core.errors import EmbeddingStoreError

T = TypeVar("T")
Connection = psycopg.Connection[Any]
Vector = npt.NDArray[np.float32]

_BIG_ENDIAN_FLOAT32 = np.dtype(">f4")


_APPLIED = "\x00applied"  # state key: the settings dict last applied in full


class VectorParam:
    """A vector already in pgvector's binary format: uint16 dimension, uint16 unused,
    then big-endian float32s (sent as is by :class:`VectorDumper`)."""

    __slots__ = ("payload",)

    def __init__(self, payload: bytes) -> None:
        self.payload = payload


class VectorDumper(Dumper):
    """Binary dumper of :class:`VectorParam`.

    Subclassed per server with the ``vector`` type's OID set (see :meth:`Database.prepare`).
    """

    format = Format.BINARY

    def dump(self, obj: VectorParam) -> Buffer:
        return obj.payload


class VectorLoader(Loader):
    """Binary loader of ``vector`` values: the raw payload, decoded in bulk by
    :func:`decode_vectors` (one numpy conversion for all the rows of a result)."""

    format = Format.BINARY

    def load(self, data: Buffer) -> bytes:
        return bytes(data)


def decode_vectors(payloads: list[bytes], dimension: int) -> Vector:
    """The ``(n, dimension)`` float32 matrix of pgvector binary payloads of one dimension."""
    joined = b"".join(payloads)
    if len(joined) != len(payloads) * (4 + 4 * dimension):
        raise EmbeddingStoreError(
            f"the table returned vectors that are not of dimension {dimension}"
        )
    # Each payload is a 4-byte header and the floats: read it as dimension + 1 floats and
    # drop the first column.
    rows = np.frombuffer(joined, dtype=_BIG_ENDIAN_FLOAT32).reshape(len(payloads), dimension + 1)
    return rows[:, 1:].astype(np.float32)


def describe(exc: BaseException) -> str:
    """A one-line description of a psycopg error (its first line and SQLSTATE)."""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    state = getattr(exc, "sqlstate", None)
    return f"{message} [{state}]" if state else message


ROLLED_BACK = (pg_errors.DeadlockDetected, pg_errors.SerializationFailure)
"""Errors after which the server rolled the transaction back: safe to run it again."""


def rerun_pause(attempts: int) -> float | None:
    """How long to wait before running a rolled-back transaction again (None: give up)."""
    return 0.01 * attempts * random.random() if attempts < 5 else None


def no_connection(what: str, timeout: float, exc: BaseException) -> EmbeddingStoreError:
    """The error for a pool that gave no connection within ``timeout``."""
    return EmbeddingStoreError(
        f"{what}: no connection to PostgreSQL within {timeout:g}s "
        f"({describe(exc)}); is the server running and reachable?"
    )


class Database:
    """A pool of connections prepared for one store: adapters registered, settings applied.

    ``connection`` is a libpq connection string/URI (a pool of ``pool_size`` autocommit
    connections is created and owned, closed by :meth:`close`) or a
    :class:`psycopg_pool.ConnectionPool` owned by the caller. Session settings the store
    needs (``hnsw.ef_search`` and friends) are set on each connection the first time it is
    used, with ``set_config``, and tracked so that they cost nothing afterwards.
    """

    def __init__(
        self,
        connection: str | ConnectionPool[Any],
        *,
        pool_size: int,
        timeout: float,
        settings: dict[str, str],
    ) -> None:
        self.timeout = timeout
        self.settings = dict(settings)
        self.vector_oid: int | None = None
        self._dumper: type[VectorDumper] | None = None
        self._prepared: weakref.WeakKeyDictionary[Connection, dict[str, Any]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()
        if isinstance(connection, str):
            self.owns_pool = True
            self.pool: ConnectionPool[Any] = ConnectionPool(
                connection,
                min_size=1,
                max_size=max(1, pool_size),
                kwargs={"autocommit": True},
                timeout=timeout,
                open=False,
                name="ragloom-pgvector",
            )
            # Wait for the first connection: a request queued while the pool is still
            # connecting makes it open a second one, and idle connections are handed out in
            # turn, so a single-threaded user would alternate between two server processes
            # (each one colder), which costs measurable latency.
            try:
                self.pool.open(wait=True, timeout=timeout)
            except PoolTimeout as exc:
                self.pool.close()
                raise EmbeddingStoreError(
                    f"no connection to PostgreSQL within {timeout:g}s ({describe(exc)}); "
                    "is the server running and reachable?"
                ) from exc
            except psycopg.Error as exc:
                self.pool.close()
                message = f"cannot open a connection pool: {describe(exc)}"
                raise EmbeddingStoreError(message) from exc
        elif isinstance(connection, ConnectionPool):
            self.owns_pool = False
            self.pool = connection
        else:
            raise EmbeddingStoreError(
                "connection must be a libpq connection string or a psycopg_pool.ConnectionPool, "
                f"got {type(connection).__name__}"
            )

    def close(self) -> None:
        if self.owns_pool:
            self.pool.close()

    @property
    def dumper(self) -> type[VectorDumper] | None:
        """The binary dumper of :class:`VectorParam` for this server (None before setup)."""
        return self._dumper

    # -- per-connection preparation -------------------------------------------------------

    def set_vector_oid(self, oid: int) -> None:
        with self._lock:
            if self.vector_oid != oid:
                self.vector_oid = oid
                self._dumper = type("RagloomVectorDumper", (VectorDumper,), {"oid": oid})
                self._prepared = weakref.WeakKeyDictionary()

    def prepare(self, conn: Connection, settings: dict[str, str] | None = None) -> None:
        """Register the vector adapters on ``conn`` and apply the session settings."""
        state = self._prepared.get(conn)
        if state is None:
            if self.vector_oid is None or self._dumper is None:
                raise EmbeddingStoreError("the vector type is not known yet (internal error)")
            conn.adapters.register_dumper(VectorParam, self._dumper)
            conn.adapters.register_loader(self.vector_oid, VectorLoader)
            state = {}
            self._prepared[conn] = state
        elif settings is None and state.get(_APPLIED) is self.settings:
            return  # the common case: the store's settings are in place
        wanted = self.settings if settings is None else {**self.settings, **settings}
        changes = {name: value for name, value in wanted.items() if state.get(name) != value}
        if changes:
            names = list(changes)
            query = "SELECT " + ", ".join(["set_config(%s, %s, false)"] * len(names))
            params: list[str] = []
            for name in names:
                params += [name, changes[name]]
            with self.transaction(conn):
                conn.execute(query, params)
            state.update(changes)
        state[_APPLIED] = self.settings if settings is None else {}

    def forget(self, conn: Connection) -> None:
        """Drop what we know of ``conn``'s session (after an error rolled it back)."""
        self._prepared.pop(conn, None)

    @staticmethod
    @contextmanager
    def transaction(conn: Connection) -> Iterator[None]:
        """A transaction on an autocommit connection; the caller's on a non-autocommit one."""
        with conn.transaction():
            yield

    # -- running work ----------------------------------------------------------------------

    def run(
        self,
        work: Callable[[Connection], T],
        *,
        what: str,
        write: bool,
        idempotent: bool,
        prepare: bool = True,
        settings: dict[str, str] | None = None,
    ) -> T:
        """``work(conn)`` on a pooled connection; errors become :class:`EmbeddingStoreError`.

        With ``write``, the work runs in one transaction. A connection found dead (e.g.
        after a server restart) is discarded and the work is retried on a fresh one, when
        that is safe: the work is ``idempotent``, or it failed before its transaction began
        to commit. A deadlock or serialization failure (the transaction was rolled back) is
        retried too. :class:`~ragloom.core.errors.RagloomError` raised by ``work`` (e.g.
        ``InvalidFilterError``) passes through unchanged.
        """
        attempts = 0
        while True:
            attempts += 1
            progress: dict[str, bool] = {"committing": False}
            try:
                conn = self.pool.getconn(timeout=self.timeout)
                try:
                    if prepare:
                        self.prepare(conn, settings)
                    if not write:
                        result = work(conn)
                        if not conn.autocommit:
                            conn.commit()
                        return result
                    with conn.transaction():
                        result = work(conn)
                        progress["committing"] = True
                    if not conn.autocommit:
                        conn.commit()
                    return result
                except BaseException:
                    self.forget(conn)
                    if conn.broken or conn.closed:
                        progress["broken"] = True
                    elif not conn.autocommit:
                        conn.rollback()
                    raise
                finally:
                    self.pool.putconn(conn)
            except PoolTimeout as exc:
                raise no_connection(what, self.timeout, exc) from exc
            except ROLLED_BACK as exc:
                pause = rerun_pause(attempts)
                if pause is None:
                    raise EmbeddingStoreError(f"{what} failed: {describe(exc)}") from exc
                time.sleep(pause)
            except psycopg.OperationalError as exc:
                if progress.get("broken") and attempts <= 2:
                    if idempotent or not progress["committing"]:
                        self._check_pool()
                        continue
                    raise EmbeddingStoreError(
                        f"{what}: the connection was lost while committing; the change may or "
                        f"may not have been applied ({describe(exc)})"
                    ) from exc
                raise EmbeddingStoreError(f"{what} failed: {describe(exc)}") from exc
            except psycopg.Error as exc:
                raise EmbeddingStoreError(f"{what} failed: {describe(exc)}") from exc

    def _check_pool(self) -> None:
        """Replace the pool's dead idle connections (after one was found dead)."""
        with contextlib.suppress(psycopg.Error):  # the retry reports any problem
            self.pool.check()
