"""The client side of the store's steps: one pooled connection inside one transaction.

The store writes each operation once as :data:`~ragloom.core.aio.Steps` yielding
:class:`~ragloom.core.aio.ClientCall` objects named after the methods below; a
:class:`Session` performs them on a sync connection and an :class:`AsyncSession` on an
async one, in the transaction the store's ``_run``/``_arun`` opened (see
:class:`Transaction`).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, Generic, TypeVar

import psycopg

from ragloom.core.kit.steps import ClientCall, Steps
from ragloom.stores.pgvector._copy import Batch

__all__ = ["AsyncSession", "Session", "Transaction"]

T = TypeVar("T")


def _copy_types(vector_oid: int | None) -> list[int | str]:
    """The column types of a row-by-row ``COPY`` of a batch."""
    assert vector_oid is not None  # known since the store's setup
    return ["text", vector_oid, "text", "jsonb", "text[]"]


class Transaction(Generator[ClientCall, Any, T], Generic[T]):
    """Steps that run in one transaction on one pooled connection, and can run again.

    A deadlock, or a connection found dead before the commit began, rolls the transaction
    back; the store then runs the operation again from its first step
    (:meth:`again`), which a plain generator cannot do. ``write``: the steps write (one
    transaction; else autocommit reads); ``idempotent``: running them twice is harmless
    (a connection lost while committing may be retried); ``settings``: session settings
    for this operation only; ``committed``: called once the transaction has committed.
    """

    def __init__(
        self,
        what: str,
        make: Callable[[], Steps[T]],
        *,
        write: bool,
        idempotent: bool,
        settings: dict[str, str] | None = None,
        committed: Callable[[], None] | None = None,
    ) -> None:
        self.what = what
        self.write = write
        self.idempotent = idempotent
        self.settings = settings
        self.committed = committed
        self._make = make
        self._steps: Steps[T] | None = None

    def again(self) -> Transaction[T]:
        """The steps from the start (the first run's generator is dropped)."""
        self._steps = self._make()
        return self

    def send(self, value: Any) -> ClientCall:
        if self._steps is None:
            self._steps = self._make()
        return self._steps.send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> ClientCall:
        if self._steps is None:
            self._steps = self._make()
        return self._steps.throw(typ if val is None else val)


class Session:
    """The calls of the store's steps on a sync connection."""

    def __init__(self, conn: psycopg.Connection[Any], vector_oid: int | None) -> None:
        self._conn = conn
        self._vector_oid = vector_oid

    def perform(self, step: ClientCall) -> Any:
        """One step: ``self.<step.method>(*step.args, **step.kwargs)``."""
        return getattr(self, step.method)(*step.args, **step.kwargs)

    def execute(self, statement: Any, params: Any = None) -> None:
        """Run a statement whose result is not needed."""
        self._conn.execute(statement, params)

    def rows(self, statement: Any, params: Any = None, binary: bool = False) -> list[Any]:
        """Every row of a query."""
        return self._conn.execute(statement, params, binary=binary).fetchall()

    def row(self, statement: Any, params: Any = None) -> tuple[Any, ...] | None:
        """The first row of a query (None: no row, or a statement without a result)."""
        cursor = self._conn.execute(statement, params)
        return cursor.fetchone() if cursor.description else None

    def executemany(self, statement: Any, rows: list[tuple[Any, ...]]) -> None:
        """One statement for each of ``rows`` (pipelined by psycopg)."""
        with self._conn.cursor() as cursor:
            cursor.executemany(statement, rows)

    def copy(self, statement: Any, batch: Batch) -> None:
        """Binary ``COPY`` of ``batch``: the store's own stream on a UTF-8 connection, else
        row by row with psycopg's adapters (which encode the texts)."""
        with self._conn.cursor() as cursor, cursor.copy(statement) as copy:
            if self._conn.info.encoding == "utf-8":
                for chunk in batch.copy_chunks():
                    copy.write(chunk)
                return
            copy.set_types(_copy_types(self._vector_oid))
            for values in batch.param_rows():
                copy.write_row(values)


class AsyncSession:
    """The calls of the store's steps on an async connection (as :class:`Session`)."""

    def __init__(self, conn: psycopg.AsyncConnection[Any], vector_oid: int | None) -> None:
        self._conn = conn
        self._vector_oid = vector_oid

    async def perform(self, step: ClientCall) -> Any:
        """One step: ``await self.<step.method>(*step.args, **step.kwargs)``."""
        return await getattr(self, step.method)(*step.args, **step.kwargs)

    async def execute(self, statement: Any, params: Any = None) -> None:
        await self._conn.execute(statement, params)

    async def rows(self, statement: Any, params: Any = None, binary: bool = False) -> list[Any]:
        cursor = await self._conn.execute(statement, params, binary=binary)
        return await cursor.fetchall()

    async def row(self, statement: Any, params: Any = None) -> tuple[Any, ...] | None:
        cursor = await self._conn.execute(statement, params)
        return await cursor.fetchone() if cursor.description else None

    async def executemany(self, statement: Any, rows: list[tuple[Any, ...]]) -> None:
        async with self._conn.cursor() as cursor:
            await cursor.executemany(statement, rows)

    async def copy(self, statement: Any, batch: Batch) -> None:
        async with self._conn.cursor() as cursor, cursor.copy(statement) as copy:
            if self._conn.info.encoding == "utf-8":
                for chunk in batch.copy_chunks():
                    await copy.write(chunk)
                return
            copy.set_types(_copy_types(self._vector_oid))
            for values in batch.param_rows():
                await copy.write_row(values)
