"""The store's asyncio side: a psycopg ``AsyncConnectionPool``, opened on first async use.

The sync :class:`~ragloom.stores.pgvector._database.Database` sets the table up and knows
the ``vector`` type; this pool reuses that (adapters and session settings are applied
once per connection by the pool's ``configure`` hook). An async pool belongs to the event
loop that opened it: a store used from a new loop opens a new pool there (close each with
:meth:`AsyncDatabase.close` before its loop ends).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from ragloom.core.errors import EmbeddingStoreError
from ragloom.stores.pgvector._database import (
    ROLLED_BACK,
    Database,
    VectorLoader,
    VectorParam,
    describe,
    no_connection,
    rerun_pause,
)

T = TypeVar("T")
AsyncConnection = psycopg.AsyncConnection[Any]

_SET_CONFIG = "set_config(%s, %s, {local})"


def _set_config(settings: dict[str, str], local: bool) -> tuple[str, list[str]]:
    """One ``SELECT set_config(...)`` statement applying ``settings``."""
    call = _SET_CONFIG.format(local="true" if local else "false")
    params: list[str] = []
    for name, value in settings.items():
        params += [name, value]
    return "SELECT " + ", ".join([call] * len(settings)), params


class AsyncDatabase:
    """An autocommit ``AsyncConnectionPool`` of ``pool_size`` connections to ``conninfo``
    (None: the store was given a pool whose connection string is a function)."""

    def __init__(self, database: Database, conninfo: str | None, pool_size: int) -> None:
        self._database = database
        self._conninfo = conninfo
        self._pool_size = pool_size
        self._pool: AsyncConnectionPool[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._opening: asyncio.Future[AsyncConnectionPool[Any]] | None = None

    @property
    def pool(self) -> AsyncConnectionPool[Any] | None:
        """The pool of the current event loop's calls, once opened (None before)."""
        return self._pool

    async def _configure(self, conn: AsyncConnection) -> None:
        """Each new connection: the vector adapters and the store's session settings."""
        dumper = self._database.dumper
        oid = self._database.vector_oid
        if dumper is None or oid is None:
            raise EmbeddingStoreError("the vector type is not known yet (internal error)")
        conn.adapters.register_dumper(VectorParam, dumper)
        conn.adapters.register_loader(oid, VectorLoader)
        statement, params = _set_config(self._database.settings, local=False)
        await conn.execute(statement, params)

    async def _open(self) -> AsyncConnectionPool[Any]:
        if self._conninfo is None:
            raise EmbeddingStoreError(
                "the async methods open their own pool from the connection string, but the "
                "given ConnectionPool computes it with a function; pass a connection string"
            )
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            self._conninfo,
            min_size=1,
            max_size=self._pool_size,
            kwargs={"autocommit": True},
            configure=self._configure,
            timeout=self._database.timeout,
            open=False,
            name="ragloom-pgvector-async",
        )
        try:
            await pool.open(wait=True, timeout=self._database.timeout)
        except (PoolTimeout, psycopg.Error) as exc:
            await pool.close()
            raise EmbeddingStoreError(
                f"cannot open an async connection pool ({describe(exc)}); "
                "is the server running and reachable?"
            ) from exc
        self._pool = pool
        return pool

    async def _current(self) -> AsyncConnectionPool[Any]:
        """This loop's pool, opened once (concurrent first callers share the opening)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._opening is None:
            self._loop, self._pool = loop, None
            self._opening = asyncio.ensure_future(self._open())
        opening = self._opening
        try:
            return await asyncio.shield(opening)
        except BaseException:
            if opening.done() and self._opening is opening:
                self._opening = None  # a failed opening is retried by the next call
            raise

    async def close(self) -> None:
        """Close this loop's pool, if one was opened."""
        opening, self._opening, self._loop = self._opening, None, None
        self._pool = None
        if opening is not None:
            pool = await opening
            await pool.close()

    async def run(
        self,
        work: Callable[[AsyncConnection], Awaitable[T]],
        *,
        what: str,
        write: bool,
        idempotent: bool,
        settings: dict[str, str] | None = None,
    ) -> T:
        """``await work(conn)`` on a pooled connection, as :meth:`Database.run` does
        synchronously: ``write`` runs it in one transaction, ``settings`` are applied to it
        alone (``set_config(..., true)`` in its transaction), errors become
        :class:`EmbeddingStoreError`, a deadlock is retried and a dead connection replaced
        (retrying when ``idempotent``). A cancelled call gives its connection back to the
        pool, which discards it if a query was still running on it."""
        pool = await self._current()
        attempts = 0
        while True:
            attempts += 1
            try:
                async with pool.connection(timeout=self._database.timeout) as conn:
                    if not write and settings is None:
                        return await work(conn)
                    async with conn.transaction():
                        if settings:
                            statement, params = _set_config(settings, local=True)
                            await conn.execute(statement, params)
                        return await work(conn)
            except PoolTimeout as exc:
                raise no_connection(what, self._database.timeout, exc) from exc
            except ROLLED_BACK as exc:
                pause = rerun_pause(attempts)
                if pause is None:
                    raise EmbeddingStoreError(f"{what} failed: {describe(exc)}") from exc
                await asyncio.sleep(pause)
            except psycopg.OperationalError as exc:
                if idempotent and attempts <= 2:
                    await pool.check()  # replace dead idle connections, then retry
                    continue
                raise EmbeddingStoreError(f"{what} failed: {describe(exc)}") from exc
            except psycopg.Error as exc:
                raise EmbeddingStoreError(f"{what} failed: {describe(exc)}") from exc
