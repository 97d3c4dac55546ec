"""The remote-store base: what every EmbeddingStore on a database client shares.

A store on a vector database writes each operation once, as
:data:`~ragloom.core.kit.steps.Steps` (a generator yielding
:class:`~ragloom.core.kit.steps.ClientCall` objects), and
:class:`RemoteEmbeddingStore` runs it on the sync client (:meth:`~RemoteEmbeddingStore._run`)
or on the running event loop's async client (:meth:`~RemoteEmbeddingStore._arun`). The base
holds everything that does not depend on the client:

- **errors**: a client error becomes an :class:`EmbeddingStoreError` naming the collection
  and the call (:meth:`~RemoteEmbeddingStore._call`, :meth:`~RemoteEmbeddingStore._error`);
- **the per-event-loop async client**: opened on the first async call in a loop (an async
  client's connections belong to the loop that opened them), at most ``async_concurrency``
  calls in flight per loop, closed by :meth:`~RemoteEmbeddingStore.aclose`; without one,
  an operation runs on the sync client in a worker thread;
- **the insertion counter** (:meth:`~RemoteEmbeddingStore._next_seqs`): equal scores come
  back in insertion order, as in memory;
- **the add_all prologue** (:func:`new_entries`) and the metadata type check
  (:meth:`~RemoteEmbeddingStore._check_kinds`);
- **exact scores** (:meth:`~RemoteEmbeddingStore._nearest`, :meth:`~RemoteEmbeddingStore._ranked`):
  the server's approximate (float32) cosines only pick candidates; they are rescored in
  float64 from the stored vectors and ordered by ``(-score, seq)``, so a store gives the
  in-memory store's scores and tie order.

A subclass supplies the client: ``_client`` (and ``_new_async_client`` for one async client
per loop), ``close``, and its operations as steps: how to insert, how to search (the
``fetch`` of :meth:`~RemoteEmbeddingStore._nearest`), how to compile a filter, and which
stored metadata clashes with a batch (:meth:`~RemoteEmbeddingStore._held_metadata`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from typing import Any, ClassVar, NamedTuple, Self, TypeVar

import numpy as np
import numpy.typing as npt

from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding
from ragloom.core.errors import EmbeddingStoreError, RagloomError
from ragloom.core.filters import Filter
from ragloom.core.kit.async_add import AsyncAddMixin
from ragloom.core.kit.steps import ClientCall, Steps, arun_steps, run_steps
from ragloom.core.metadata import MetadataValue
from ragloom.core.stores.arguments import get_ids, removal_target
from ragloom.core.stores.base import (
    EmbeddingMatch,
    EmbeddingSearchRequest,
    EmbeddingSearchResult,
    EmbeddingStore,
    StoredEmbedding,
)
from ragloom.core.stores.metadata_types import (
    BatchKinds,
    batch_kinds,
    check_held_row,
    conflicting_kinds,
)
from ragloom.core.stores.metadata_types import metadata_schema as metadata_schema_kinds
from ragloom.core.stores.scores import exact_cosines, relevance_score
from ragloom.core.stores.validation import (
    generate_ids,
    split_segments,
    validate_embeddings,
    validate_ids,
)

__all__ = [
    "PAUSE",
    "Candidates",
    "Compiled",
    "Matrix",
    "NewEntries",
    "RemoteEmbeddingStore",
    "new_entries",
    "positive_int",
    "renamed_option",
]

T = TypeVar("T")
Matrix = npt.NDArray[np.float32]
"""Vectors, one a row (float32)."""
Cosines = npt.NDArray[np.float64]

PAUSE = "<pause>"
"""The method of a step that waits ``args[0]`` seconds instead of calling the client
(``ClientCall.of("waiting", PAUSE, 0.05)``): a retry loop written as steps backs off
without blocking an event loop. Not an identifier, so no client method has this name."""


def positive_int(value: object, what: str, upper: int | None = None) -> int:
    """``value`` if it is an int in ``1 .. upper``; else an EmbeddingStoreError naming it."""
    if type(value) is not int or value < 1 or (upper is not None and value > upper):
        limit = f" <= {upper}" if upper is not None else ""
        raise EmbeddingStoreError(f"{what} must be an int >= 1{limit}, got {value!r}")
    return value


def renamed_option(value: T | None, name: str, old_value: T | None, old_name: str) -> T | None:
    """The option ``name``, or its deprecated former name ``old_name`` (kept one release,
    with a DeprecationWarning); giving both raises."""
    if old_value is None:
        return value
    warnings.warn(
        f"the option {old_name} is deprecated; use {name}", DeprecationWarning, stacklevel=3
    )
    if value is not None:
        raise EmbeddingStoreError(f"give {name} or {old_name} (deprecated), not both")
    return old_value


class NewEntries(NamedTuple):
    """A checked ``add_all`` batch: nothing is written before all of it is valid."""

    ids: list[str]
    vectors: Matrix
    texts: list[str | None]
    metadata: list[dict[str, MetadataValue]] | None
    kinds: BatchKinds
    generated: bool
    """The ids were generated here (new UUID4s: nothing to replace)."""


def new_entries(
    embeddings: Sequence[Embedding] | npt.NDArray[np.floating[Any]],
    segments: Sequence[TextSegment] | None,
    ids: Sequence[str] | None,
    dimension: int | None,
    declared: Mapping[str, str] | None = None,
) -> NewEntries | None:
    """The ``add_all`` prologue of every store: the batch's ids (generated when not given),
    vectors, texts, metadata and metadata kinds, all checked (None: nothing to add)."""
    count = len(embeddings)
    texts, metadata = split_segments(segments, count)
    id_list = generate_ids(count) if ids is None else validate_ids(ids, count)
    if count == 0:
        return None
    vectors = validate_embeddings(embeddings, dimension)
    kinds = batch_kinds(metadata, declared)
    return NewEntries(id_list, vectors, texts, metadata, kinds, ids is None)


class Candidates(NamedTuple):
    """One answer of the server's nearest-neighbour search (see ``_nearest``)."""

    rows: list[Any]
    """The candidates, nearest first, as the store reads them back."""
    vectors: Matrix
    """Their vectors as added, one row each."""
    last_score: float
    """The server's cosine of the last (lowest) candidate."""


class Compiled(NamedTuple):
    """A filter as the server takes it (what a store's ``_compile`` returns)."""

    native: Any
    """The server's form of the filter (None: every entry)."""
    exact: bool = True
    """Whether ``native`` selects exactly the filter's entries (else a superset: the filter
    is finished in Python on what it selects)."""
    empty: bool = False
    """No entry can pass."""


class RemoteEmbeddingStore(EmbeddingStore, AsyncAddMixin):
    """The base of a store on a remote (or local-mode) vector database client.

    See the module docstring for what it holds and what a subclass supplies. The subclass
    sets ``_client`` and calls ``super().__init__`` before its first client call.
    """

    _label: ClassVar[str] = "collection"
    """What error messages call the collection, e.g. ``"Milvus collection"``."""
    _ann_slack: ClassVar[float] = 1e-4
    """A bound on the difference between the server's cosine and the exact one."""
    _ann_limit: ClassVar[int | None] = None
    """The largest ``limit`` one server search takes (None: no limit)."""
    _server_ranks: ClassVar[bool] = False
    """The server's ranking picks the ``k`` (a store keeping no insertion order, whose
    ties the server breaks): :meth:`_nearest` asks once for ``k`` and only rescores them."""

    _client: Any

    def __init__(
        self,
        collection: str,
        *,
        metadata_schema: Mapping[str, type] | None = None,
        async_client: object | None = None,
        async_concurrency: int | None = None,
    ) -> None:
        self._collection = collection
        self._declared = metadata_schema_kinds(metadata_schema)
        self._dimension: int | None = None
        self._lock = threading.RLock()
        self._last_seq = 0
        self._async_client: Any = async_client
        self._async_loop: asyncio.AbstractEventLoop | None = None
        self._owns_async = False
        self._async_concurrency = async_concurrency
        self._async_slots: asyncio.Semaphore | None = None

    @property
    def collection(self) -> str:
        """The name of the collection (table, index) the store writes."""
        return self._collection

    @property
    def dimension(self) -> int | None:
        """The vector dimension (None until the collection exists)."""
        return self._dimension

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Close the client, if the store created it."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Close the async client the store opened in the running event loop, then the
        sync client as :meth:`close` does; use it (or ``async with``) after async calls."""
        await self._close_async()
        self.close()

    async def _close_async(self) -> None:
        """Close the async client the store opened (the next async call opens another)."""
        if self._owns_async and self._async_client is not None:
            client, self._async_client, self._async_loop = self._async_client, None, None
            self._owns_async = False
            await self._aclose_client(client)

    async def _aclose_client(self, client: Any) -> None:
        """Close an async client the store opened."""
        await client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ client calls

    def _message(self, exc: Exception) -> str:
        """The text of a client error, for :meth:`_error`."""
        return str(exc)

    def _error(self, what: str, exc: Exception) -> RagloomError:
        """A client error as an EmbeddingStoreError naming the collection and the call
        (ragloom's own errors pass unchanged)."""
        if isinstance(exc, RagloomError):
            return exc
        return EmbeddingStoreError(
            f"{self._label} {self._collection!r}: {what} failed: {self._message(exc)}"
        )

    def _call(self, what: str, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``method(*args, **kwargs)``; a client error raised as :meth:`_error`."""
        try:
            return method(*args, **kwargs)
        except Exception as exc:
            error = self._error(what, exc)
            if error is exc:
                raise
            raise error from exc

    def _guard(self) -> contextlib.AbstractContextManager[Any]:
        """Held around each sync operation (a client that serves one call at a time)."""
        return nullcontext()

    def _perform(self, step: ClientCall) -> Any:
        """One step on the sync client."""
        return self._call(step.what, getattr(self._client, step.method), *step.args, **step.kwargs)

    async def _aperform(self, client: Any, step: ClientCall) -> Any:
        """One step on an async client (errors are wrapped by the caller)."""
        return await getattr(client, step.method)(*step.args, **step.kwargs)

    def _run(self, steps: Steps[T]) -> T:
        """An operation on the sync client."""

        def perform(step: ClientCall) -> Any:
            if step.method == PAUSE:
                time.sleep(step.args[0])
                return None
            return self._perform(step)

        with self._guard():
            return run_steps(steps, perform)

    async def _arun(self, steps: Steps[T]) -> T:
        """An operation on this event loop's async client; without one, on the sync client
        in a worker thread."""
        client = self._current_async_client()
        if client is None:
            return await asyncio.to_thread(self._run, steps)
        slots = self._async_slots

        async def perform(step: ClientCall) -> Any:
            if step.method == PAUSE:
                await asyncio.sleep(step.args[0])
                return None
            try:
                async with slots or nullcontext():
                    return await self._aperform(client, step)
            except Exception as exc:
                error = self._error(step.what, exc)
                if error is exc:
                    raise
                raise error from exc

        return await arun_steps(steps, perform)

    def _new_async_client(self) -> Any | None:
        """A new async client for the running loop, or None when the store cannot open one
        (a given sync client, local mode): then operations run in a worker thread."""
        return None

    def _current_async_client(self) -> Any | None:
        """The async client of the running loop: a given one, or the store's own, opened
        on the first async call in each loop."""
        loop = asyncio.get_running_loop()
        if self._async_loop is not loop and self._async_concurrency is not None:
            self._async_slots = asyncio.Semaphore(self._async_concurrency)
        if self._async_client is not None and (not self._owns_async or self._async_loop is loop):
            self._async_loop = loop
            return self._async_client
        client = self._new_async_client()
        if client is not None:
            self._async_client, self._owns_async = client, True
        self._async_loop = loop
        return client

    # ------------------------------------------------------------------ operations

    def add_all(
        self,
        embeddings: Sequence[Embedding] | npt.NDArray[np.floating[Any]],
        segments: Sequence[TextSegment] | None = None,
        *,
        ids: Sequence[str] | None = None,
    ) -> list[str]:
        """Add (or replace, by id: a replaced entry keeps its insertion position) a batch;
        everything is checked before anything is written."""
        entries = new_entries(embeddings, segments, ids, self._dimension, self._declared)
        if entries is None:
            return []
        batch = self._prepare(entries)
        self._ensure_collection(int(entries.vectors.shape[1]))
        self._run(self._write(entries, batch))
        return entries.ids

    async def aadd_all(
        self,
        embeddings: Sequence[Embedding] | npt.NDArray[np.floating[Any]],
        segments: Sequence[TextSegment] | None = None,
        *,
        ids: Sequence[str] | None = None,
    ) -> list[str]:
        """:meth:`add_all` on the async client (same checks, same writes)."""
        entries = new_entries(embeddings, segments, ids, self._dimension, self._declared)
        if entries is None:
            return []
        batch = self._prepare(entries)
        if self._dimension is None:  # creating the collection: the sync client does it
            await asyncio.to_thread(self._ensure_collection, int(entries.vectors.shape[1]))
        await self._arun(self._write(entries, batch))
        return entries.ids

    def search(self, request: EmbeddingSearchRequest) -> EmbeddingSearchResult:
        """The best ``max_results`` entries passing the filter, scored ``(cos + 1) / 2``."""
        return self._run(self._search(request))

    async def asearch(self, request: EmbeddingSearchRequest) -> EmbeddingSearchResult:
        """:meth:`search` on the async client."""
        return await self._arun(self._search(request))

    def remove_all(
        self, ids: Iterable[str] | Filter | None = None, *, filter: Filter | None = None
    ) -> None:
        """Remove the given ids, the entries matching ``filter`` (also when passed as
        ``ids``), or (neither) everything."""
        self._run(self._remove(ids, filter))

    async def aremove_all(
        self, ids: Iterable[str] | Filter | None = None, *, filter: Filter | None = None
    ) -> None:
        """:meth:`remove_all` on the async client."""
        await self._arun(self._remove(ids, filter))

    def get(self, ids: Iterable[str], *, embeddings: bool = False) -> list[StoredEmbedding]:
        """The stored entries of ``ids`` in the order asked (unknown ids omitted, each id
        once), with their vectors as added when ``embeddings``."""
        return self._run(self._get(ids, embeddings))

    async def aget(self, ids: Iterable[str], *, embeddings: bool = False) -> list[StoredEmbedding]:
        """:meth:`get` on the async client."""
        return await self._arun(self._get(ids, embeddings))

    def _prepare(self, entries: NewEntries) -> Any:
        """The store's form of a checked batch (raise here for what it cannot hold)."""
        raise NotImplementedError

    def _ensure_collection(self, dimension: int) -> None:
        """Create the collection on the first write (or adopt one made meanwhile)."""
        raise NotImplementedError

    def _write(self, entries: NewEntries, batch: Any) -> Steps[None]:
        """Write a checked batch (``batch``: what :meth:`_prepare` made of it); start with
        :meth:`_check_kinds`."""
        raise NotImplementedError
        yield  # pragma: no cover - makes this a generator

    # ------------------------------------------------------------------ writes

    def _next_seqs(self, count: int) -> range:
        """``count`` increasing insertion sequence numbers, after any this store handed
        out; from the nanosecond clock, so stores in other processes writing the same
        collection keep their batches in time order too."""
        with self._lock:
            start = max(time.time_ns(), self._last_seq + 1)
            self._last_seq = start + count - 1
        return range(start, start + count)

    def _check_kinds(self, kinds: BatchKinds) -> Steps[None]:
        """Refuse the batch if the collection holds one of its keys with another type
        (core's ``metadata_types``)."""
        conflicts = conflicting_kinds(kinds)
        if conflicts:
            for metadata in (yield from self._held_metadata(conflicts)):
                check_held_row(kinds, metadata)

    def _held_metadata(
        self, conflicts: Mapping[str, list[str]]
    ) -> Steps[list[dict[str, MetadataValue]]]:
        """The metadata of stored entries holding a key with one of its ``conflicts``
        (key -> filter kinds); one such entry is enough."""
        raise NotImplementedError
        yield  # pragma: no cover - makes this a generator

    # ------------------------------------------------------------------ search

    def _search(self, request: EmbeddingSearchRequest) -> Steps[EmbeddingSearchResult]:
        """The best ``max_results`` entries passing the filter: from the server's index
        (:meth:`_nearest`) when it can answer exactly, else from a scan; exact scores."""
        query = self._checked_query(request)
        condition = request.filter
        compiled = Compiled(None) if condition is None else (yield from self._compile(condition))
        if self._dimension is None or compiled.empty:
            return EmbeddingSearchResult([])
        k, cap = request.max_results, self._ann_limit
        if np.any(query) and (cap is None or (compiled.exact and k <= cap // 4)):
            fetch = self._fetch(query, compiled, request.min_score)
            unfinished = None if compiled.exact else condition
            rows, cosines = yield from self._nearest(query, k, request.min_score, fetch, unfinished)
        else:  # a zero query (all ties), a filter finished in Python, or a huge k
            rows = yield from self._scan(compiled.native)
            if condition is not None and not compiled.exact:
                rows = [row for row in rows if self._passes(condition, row)]
            cosines = self._cosines(self._vectors(rows) if rows else None, query)
        seqs = [self._seq(row) for row in rows]
        ranked = self._ranked(cosines, seqs, k, request.min_score)
        return EmbeddingSearchResult([self._match(rows[i], score) for i, score in ranked])

    def _checked_query(self, request: EmbeddingSearchRequest) -> Matrix:
        """The query vector, checked against the collection's dimension."""
        if not isinstance(request, EmbeddingSearchRequest):
            raise EmbeddingStoreError(
                f"search takes an EmbeddingSearchRequest, got {type(request).__name__}"
            )
        query = np.asarray(request.query_embedding.vector, dtype=np.float32)
        if self._dimension is not None and query.shape != (self._dimension,):
            raise EmbeddingStoreError(
                f"query embedding has dimension {query.size}, but {self._label} "
                f"{self._collection!r} holds vectors of dimension {self._dimension}"
            )
        if not np.all(np.isfinite(query)):
            raise EmbeddingStoreError("query embedding has non-finite values")
        return query

    def _nearest(
        self,
        query: Matrix,
        k: int,
        min_score: float,
        fetch: Callable[[int], Steps[Candidates]],
        condition: Filter | None = None,
    ) -> Steps[tuple[list[Any], Cosines]]:
        """Candidates from the server's index (those passing ``condition`` when given) and
        their exact cosines: enough that none left out could tie or beat the k-th after
        exact rescoring (or pass ``min_score``).

        ``fetch(limit)`` asks the server for the ``limit`` nearest; while the k-th exact
        cosine does not beat the server's last score (plus :attr:`_ann_slack`), the limit
        grows fourfold (up to :attr:`_ann_limit`).
        """
        min_cosine = 2.0 * min_score - 1.0
        cap = self._ann_limit
        limit = k if self._server_ranks else k + max(k, 10)
        while True:
            if cap is not None:
                limit = min(cap, limit)
            found = yield from fetch(limit)
            rows, vectors = found.rows, found.vectors
            if condition is not None:
                kept = [i for i, row in enumerate(rows) if self._passes(condition, row)]
                rows, vectors = [rows[i] for i in kept], vectors[kept]
            cosines = self._cosines(vectors if rows else None, query)
            if len(found.rows) < limit or limit == cap or self._server_ranks:  # all seen
                return rows, cosines
            reachable = found.last_score + self._ann_slack  # no unseen entry scores above
            best = np.sort(cosines)[::-1]
            if (len(best) >= k and best[k - 1] > reachable) or min_cosine > reachable:
                return rows, cosines
            limit *= 4

    @staticmethod
    def _cosines(vectors: Matrix | None, query: Matrix) -> Cosines:
        """The exact cosines of ``vectors`` (None: no rows) with the query."""
        return np.zeros(0, dtype=np.float64) if vectors is None else exact_cosines(vectors, query)

    @staticmethod
    def _ranked(
        cosines: Cosines, seqs: Sequence[int], k: int, min_score: float
    ) -> Iterator[tuple[int, float]]:
        """The positions and relevance scores of the best ``k`` at or above ``min_score``,
        ordered by (score desc, insertion sequence)."""
        scores = relevance_score(np.asarray(cosines, dtype=np.float64))
        order = np.lexsort((np.asarray(seqs, dtype=np.int64), -scores))[:k]
        for i in order.tolist():
            if scores[i] < min_score:
                return
            yield i, float(scores[i])

    # ------------------------------------------------------------------ lookup by id

    def _get(self, ids: Iterable[str], embeddings: bool) -> Steps[list[StoredEmbedding]]:
        """The shared part of ``get``: the ids checked and each taken once, the server asked
        for the rows of their keys (:meth:`_rows_of`), the answer put in the order asked."""
        wanted = get_ids(ids)
        keys = self._keys(wanted) if wanted and self._dimension is not None else []
        if not keys:
            return []
        rows = yield from self._rows_of(keys, embeddings)
        vectors: list[Embedding | None] = [None] * len(rows)
        if embeddings and rows:
            vectors = list(Embedding._trusted_rows(self._vectors(rows)))
        found: dict[str, StoredEmbedding] = {}
        for row, vector in zip(rows, vectors, strict=True):
            entry_id, segment = self._stored(row)
            found[entry_id] = StoredEmbedding(entry_id, segment, vector)
        return [found[id] for id in wanted if id in found]

    def _rows_of(self, keys: list[Any], embeddings: bool) -> Steps[list[Any]]:
        """The stored rows of these server keys, in any order: what :meth:`_stored` reads,
        and the vectors (for :meth:`_vectors`) when ``embeddings``."""
        raise NotImplementedError
        yield  # pragma: no cover - makes this a generator

    def _stored(self, row: Any) -> tuple[str, TextSegment | None]:
        """The id and segment of a row read back without its vector."""
        raise NotImplementedError

    # ------------------------------------------------------------------ removal

    def _remove(self, ids: Iterable[str] | Filter | None, filter: Filter | None) -> Steps[None]:
        """Remove ``ids``, the entries passing ``filter`` (also when passed as ``ids``) or
        (neither) every entry."""
        id_list, filter = removal_target(ids, filter)
        if id_list is not None:
            keys = self._keys(id_list)
            if keys and self._dimension is not None:
                yield from self._delete_keys(keys)
            return
        compiled = None if filter is None else (yield from self._compile(filter))
        if self._dimension is None or (compiled is not None and compiled.empty):
            return
        if compiled is None or compiled.exact:
            yield from self._delete_where(None if compiled is None else compiled.native)
            return
        assert filter is not None
        rows = yield from self._scan(compiled.native)
        keys = [self._key(row) for row in rows if self._passes(filter, row)]
        if keys:
            yield from self._delete_keys(keys)

    # ------------------------------------------------------------------ the client's part

    def _compile(self, condition: Filter) -> Steps[Compiled]:
        """``condition`` in the server's terms; raises InvalidFilterError (as in memory)
        if the collection holds a value of a type the filter cannot compare."""
        raise NotImplementedError
        yield  # pragma: no cover - makes this a generator

    def _fetch(
        self, query: Matrix, compiled: Compiled, min_score: float
    ) -> Callable[[int], Steps[Candidates]]:
        """How to ask the server for the ``limit`` nearest entries passing ``compiled``."""
        raise NotImplementedError

    def _scan(self, native: Any) -> Steps[list[Any]]:
        """Every entry the server's filter ``native`` selects (None: every entry)."""
        raise NotImplementedError
        yield  # pragma: no cover - makes this a generator

    def _passes(self, condition: Filter, row: Any) -> bool:
        """Whether a row read back passes ``condition`` (a filter finished in Python)."""
        return condition.test(self._row_metadata(row))

    def _row_metadata(self, row: Any) -> dict[str, MetadataValue]:
        """The metadata of a row read back."""
        raise NotImplementedError

    def _vectors(self, rows: list[Any]) -> Matrix:
        """The vectors as added of rows read back, one row each."""
        raise NotImplementedError

    def _seq(self, row: Any) -> int:
        """The insertion sequence of a row read back."""
        raise NotImplementedError

    def _match(self, row: Any, score: float) -> EmbeddingMatch:
        """A search result of a row read back."""
        raise NotImplementedError

    def _keys(self, ids: list[str]) -> list[Any]:
        """The server's keys of entry ids (that could be stored)."""
        return list(ids)

    def _key(self, row: Any) -> Any:
        """The server's key of a row read back."""
        raise NotImplementedError

    def _delete_keys(self, keys: list[Any]) -> Steps[None]:
        """Delete the entries with these keys."""
        raise NotImplementedError
        yield  # pragma: no cover - makes this a generator

    def _delete_where(self, native: Any) -> Steps[None]:
        """Delete the entries the server's filter ``native`` selects (None: every entry)."""
        raise NotImplementedError
        yield  # pragma: no cover - makes this a generator
