"""QdrantEmbeddingStore: the EmbeddingStore contract on a Qdrant collection.

One collection per store (one unnamed dense vector, cosine), created on first use or
validated if it exists. Points: id ``uuid5(<ragloom id>)`` (Qdrant takes only UUIDs and
unsigned ints), payload as described in ``_payload`` (the original id, an insertion
sequence, the text, typed metadata and the vector as added).

Search asks Qdrant for the nearest points (filter applied inside the query), rescores
each one from the stored vector in float64 with core's :func:`exact_cosines`, and sorts
by (score desc, insertion sequence): the in-memory store's scores and tie order. Qdrant's
own scores (float32, on normalized vectors) only pick the candidates: the store asks for
more until the k-th exact score is beyond what any point not yet seen could reach
(Qdrant's score of the last candidate plus a slack), so ties at the cut are resolved by
insertion order too. A filter part Qdrant cannot express exactly (str ordering) is sent
as an exact superset and each candidate is checked with :meth:`Filter.test`.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt
from qdrant_client import AsyncQdrantClient, QdrantClient, models
from qdrant_client.local.qdrant_local import QdrantLocal

from ragloom.core.aio import AsyncAddMixin, ClientCall, Steps, arun_steps, run_steps
from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding
from ragloom.core.errors import EmbeddingStoreError, RagloomError
from ragloom.core.filter_values import BOOL, NUMBER, STR, UUID
from ragloom.core.filters import Filter
from ragloom.core.stores import (
    EmbeddingMatch,
    EmbeddingSearchRequest,
    EmbeddingSearchResult,
    EmbeddingStore,
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
    check_filter,
    generate_ids,
    split_segments,
    validate_embeddings,
    validate_ids,
)
from ragloom.stores.qdrant import _journal
from ragloom.stores.qdrant._filters import (
    CompiledFilter,
    Native,
    check_types,
    compile_filter,
)
from ragloom.stores.qdrant._payload import (
    decode_meta,
    decode_vector,
    field,
    point_id,
    point_payload,
)

__all__ = ["QdrantEmbeddingStore"]

T = TypeVar("T")
Matrix = npt.NDArray[np.float32]

_MAX_DIMENSION = 65536  # Qdrant's limit for a dense vector
_SLACK = 1e-4  # Qdrant's float32 cosine vs the exact one: bound on the difference
_RESULT_FIELDS = ["rid", "seq", "text", "meta", "vec"]
_PAGE = 1000  # points per scroll page


class _Batch(NamedTuple):
    """A validated ``add_all`` batch, ready to write."""

    ids: list[str]
    pids: list[str]
    vectors: Matrix
    payloads: list[dict[str, Any]]
    kinds: BatchKinds


class _Row(NamedTuple):
    """A candidate point, read back."""

    pid: str
    seq: int
    payload: dict[str, Any]


def _positive_int(value: object, what: str, upper: int | None = None) -> int:
    if type(value) is not int or value < 1 or (upper is not None and value > upper):
        limit = f" <= {upper}" if upper is not None else ""
        raise EmbeddingStoreError(f"{what} must be an int >= 1{limit}, got {value!r}")
    return value


def _collection_name(name: object) -> str:
    if not isinstance(name, str) or not name or len(name) > 255:
        raise EmbeddingStoreError(f"collection must be a non-empty str (<= 255), got {name!r}")
    if any(char in name for char in "/\\\x00") or name in (".", ".."):
        raise EmbeddingStoreError(f"collection name {name!r} may not contain '/', '\\' or NUL")
    return name


def _connect(
    client: QdrantClient | None,
    url: str | None,
    path: str | os.PathLike[str] | None,
    location: str | None,
    api_key: str | None,
    timeout: int | None,
) -> tuple[QdrantClient, bool, dict[str, Any] | None]:
    """The client, whether the store owns it, and for a server, the settings an
    ``AsyncQdrantClient`` of the same server takes (exactly one connection setting)."""
    given = [
        name
        for name, value in (
            ("client", client),
            ("url", url),
            ("path", path),
            ("location", location),
        )
        if value is not None
    ]
    if len(given) != 1:
        raise EmbeddingStoreError(
            "give exactly one of client, url, path or location "
            f"(got {', '.join(given) if given else 'none'})"
        )
    if api_key is not None and (not isinstance(api_key, str) or not api_key):
        raise EmbeddingStoreError("api_key must be a non-empty str")
    if api_key is not None and url is None and (location is None or location == ":memory:"):
        raise EmbeddingStoreError("api_key is only used with a server url")
    if timeout is not None and (type(timeout) is not int or timeout < 1):
        raise EmbeddingStoreError(f"timeout must be an int >= 1 (seconds), got {timeout!r}")
    if client is not None:
        if not isinstance(client, QdrantClient):
            raise EmbeddingStoreError(f"client must be a QdrantClient, got {type(client).__name__}")
        return client, False, None
    try:
        if url is not None:
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise EmbeddingStoreError(f"url must be an http(s):// URL, got {url!r}")
            server: dict[str, Any] = {
                "url": url,
                "api_key": api_key,
                "timeout": timeout,
                "check_compatibility": False,
            }
            return QdrantClient(**server), True, server
        if path is not None:
            if not isinstance(path, str | os.PathLike) or not str(path):
                raise EmbeddingStoreError(f"path must be a directory path, got {path!r}")
            if Path(path).exists() and not Path(path).is_dir():
                raise EmbeddingStoreError(f"path {str(path)!r} exists and is not a directory")
            # The store serializes every call to a local client itself (see _guard).
            return QdrantClient(path=str(path), force_disable_check_same_thread=True), True, None
        if not isinstance(location, str) or not location:
            raise EmbeddingStoreError(
                f"location must be ':memory:' or a server URL, got {location!r}"
            )
        sync = QdrantClient(
            location=location,
            api_key=api_key,
            timeout=timeout,
            force_disable_check_same_thread=True,
        )
        local = isinstance(sync._client, QdrantLocal)
        server = {"location": location, "api_key": api_key, "timeout": timeout}  # a URL
        return sync, True, None if local else server
    except RagloomError:
        raise
    except Exception as exc:
        where = url or path or location
        raise EmbeddingStoreError(f"cannot open Qdrant at {str(where)!r}: {exc}") from exc


class QdrantEmbeddingStore(EmbeddingStore, AsyncAddMixin):
    """An :class:`~ragloom.core.EmbeddingStore` in a Qdrant collection.

    Connect with exactly one of ``url`` (a Qdrant server or cluster, with ``api_key``),
    ``path`` (local mode, persisted in that directory), ``location`` (``":memory:"`` or a
    URL) or ``client`` (a :class:`QdrantClient` you own). ``dimension`` fixes the vector
    size of a new collection (omitted: taken from the first batch added); for an existing
    collection it is checked. ``exact=True`` makes a server scan instead of using its
    HNSW index (exact top-k); ``hnsw_ef`` trades speed for recall otherwise. Writes go in
    requests of at most ``batch_size`` points.

    Thread-safe: calls to a local-mode client (which is not) are serialized by the store.

    Async: ``asearch``, ``aadd_all``, ``aadd`` and ``aremove_all`` run the same operations
    on an ``AsyncQdrantClient``: with ``url`` (or a server ``location``) the store opens
    one per event loop (close it with ``await store.aclose()`` or ``async with``); with
    ``client``, pass ``async_client`` for the same Qdrant. In local mode (``path`` or
    ``":memory:"``) they run the sync operation in a worker thread: the local engine is
    in-process Python (an async local client computes on the event loop's thread), and a
    second client cannot share its data (a path is locked by its first client; each
    ``":memory:"`` client is a database of its own).
    """

    def __init__(
        self,
        collection: str = "ragloom_embeddings",
        *,
        dimension: int | None = None,
        url: str | None = None,
        path: str | os.PathLike[str] | None = None,
        location: str | None = None,
        api_key: str | None = None,
        client: QdrantClient | None = None,
        async_client: AsyncQdrantClient | None = None,
        timeout: int | None = None,
        create_collection: bool = True,
        exact: bool = False,
        hnsw_ef: int | None = None,
        batch_size: int = 256,
        metadata_schema: Mapping[str, type] | None = None,
    ) -> None:
        self._collection = _collection_name(collection)
        self._declared = metadata_schema_kinds(metadata_schema)
        if dimension is not None:
            _positive_int(dimension, "dimension", _MAX_DIMENSION)
        self._batch_size = _positive_int(batch_size, "batch_size")
        if not isinstance(exact, bool):
            raise EmbeddingStoreError(f"exact must be a bool, got {exact!r}")
        self._search_params = models.SearchParams(
            exact=exact, hnsw_ef=None if hnsw_ef is None else _positive_int(hnsw_ef, "hnsw_ef")
        )
        self._create = bool(create_collection)
        if async_client is not None:
            if client is None:
                raise EmbeddingStoreError("async_client goes with client, not with url or path")
            if not isinstance(async_client, AsyncQdrantClient):
                raise EmbeddingStoreError(
                    f"async_client must be an AsyncQdrantClient, got {type(async_client).__name__}"
                )
        self._async_client = async_client
        self._async_loop: asyncio.AbstractEventLoop | None = None
        self._client, self._owns_client, self._server = _connect(
            client, url, path, location, api_key, timeout
        )
        # Local mode is plain Python over a dict (and SQLite): one call at a time.
        self._local = isinstance(getattr(self._client, "_client", None), QdrantLocal)
        # Local mode on disk: add_all is all-or-nothing through an undo journal.
        self._journal = None if path is None else _journal.journal_path(path, self._collection)
        self._lock = threading.RLock()
        self._seq = 0
        self._dimension: int | None = None
        try:
            self._open(dimension)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ properties

    @property
    def dimension(self) -> int | None:
        """The vector size of the collection (None until it exists)."""
        return self._dimension

    @property
    def collection(self) -> str:
        """The collection's name."""
        return self._collection

    @property
    def client(self) -> QdrantClient:
        """The Qdrant client the store uses."""
        return self._client

    def __repr__(self) -> str:
        return f"QdrantEmbeddingStore(collection={self._collection!r}, dimension={self._dimension})"

    def __len__(self) -> int:
        if self._dimension is None:
            return 0
        with self._guard():
            result = self._call(
                "counting points", lambda: self._client.count(self._collection, exact=True)
            )
        return int(result.count)

    def close(self) -> None:
        """Close the client, if the store created it (see :meth:`aclose`)."""
        if self._owns_client:
            self._client.close()

    async def aclose(self) -> None:
        """Close the async client the store opened in the running event loop, then the
        sync client as :meth:`close` does; use it (or ``async with``) after async calls."""
        await self._close_async()
        self.close()

    async def _close_async(self) -> None:
        """Close the async client the store opened (the next async call opens another)."""
        if self._server is not None and self._async_client is not None:
            client, self._async_client, self._async_loop = self._async_client, None, None
            await client.close()

    def __enter__(self) -> QdrantEmbeddingStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> QdrantEmbeddingStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ plumbing

    def _guard(self) -> threading.RLock | nullcontext[None]:
        """The lock for calls to a local-mode client; nothing for a server."""
        return self._lock if self._local else nullcontext()

    def _call(self, what: str, action: Callable[[], T]) -> T:
        """Run a client call; its errors become EmbeddingStoreError naming the collection."""
        try:
            return action()
        except RagloomError:
            raise
        except Exception as exc:
            raise self._error(what, exc) from exc

    def _error(self, what: str, exc: Exception) -> EmbeddingStoreError:
        return EmbeddingStoreError(f"Qdrant collection {self._collection!r}: {what} failed: {exc}")

    def _perform(self, step: ClientCall) -> Any:
        """One step of an operation on the sync client."""
        method = getattr(self._client, step.method)
        return self._call(step.what, lambda: method(*step.args, **step.kwargs))

    def _run(self, steps: Steps[T]) -> T:
        """An operation on the sync client (a local one serves one operation at a time)."""
        with self._guard():
            return run_steps(steps, self._perform)

    async def _arun(self, steps: Steps[T]) -> T:
        """An operation on this event loop's async client; without one (local mode, or a
        given sync ``client`` without ``async_client``), in a worker thread."""
        client = self._current_async_client()
        if client is None:
            return await asyncio.to_thread(self._run, steps)

        async def perform(step: ClientCall) -> Any:
            try:
                return await getattr(client, step.method)(*step.args, **step.kwargs)
            except RagloomError:
                raise
            except Exception as exc:
                raise self._error(step.what, exc) from exc

        return await arun_steps(steps, perform)

    def _current_async_client(self) -> AsyncQdrantClient | None:
        """The async client of the running loop, opened on first use (for a server): its
        connections belong to the loop that opened them."""
        if self._server is None:
            return self._async_client  # given with ``client``, or None
        loop = asyncio.get_running_loop()
        if self._async_client is None or self._async_loop is not loop:
            self._async_client = self._call(
                "connecting (async)", lambda: AsyncQdrantClient(**self._server or {})
            )
            self._async_loop = loop
        return self._async_client

    # ------------------------------------------------------------------ collection

    def _open(self, dimension: int | None) -> None:
        with self._guard():
            exists = self._call(
                "checking the collection", lambda: self._client.collection_exists(self._collection)
            )
            if exists:
                self._dimension = self._check_collection(dimension)
                if self._journal is not None:
                    run_steps(self._roll_back(), self._perform)
                self._seq = self._last_seq()
            elif not self._create:
                raise EmbeddingStoreError(
                    f"Qdrant collection {self._collection!r} does not exist "
                    "(and create_collection=False)"
                )
            elif dimension is not None:
                self._create_collection(dimension)

    def _check_collection(self, dimension: int | None) -> int:
        info = self._call(
            "reading the collection", lambda: self._client.get_collection(self._collection)
        )
        vectors = info.config.params.vectors
        if not isinstance(vectors, models.VectorParams):
            raise EmbeddingStoreError(
                f"Qdrant collection {self._collection!r} has named vectors ({vectors!r}); "
                "the store needs one unnamed cosine vector: use another collection"
            )
        if vectors.distance != models.Distance.COSINE:
            raise EmbeddingStoreError(
                f"Qdrant collection {self._collection!r} uses {vectors.distance.value} distance; "
                "the store needs Cosine: use another collection"
            )
        if dimension is not None and vectors.size != dimension:
            raise EmbeddingStoreError(
                f"Qdrant collection {self._collection!r} holds vectors of dimension "
                f"{vectors.size}, not {dimension}"
            )
        return int(vectors.size)

    def _create_collection(self, dimension: int) -> None:
        def create() -> None:
            try:
                self._client.create_collection(
                    self._collection,
                    vectors_config=models.VectorParams(
                        size=dimension, distance=models.Distance.COSINE
                    ),
                )
            except Exception:
                # Another process may have created it meanwhile: then validate it.
                if not self._client.collection_exists(self._collection):
                    raise
                self._check_collection(dimension)
                return
            if not self._local:  # local mode has no payload indexes
                for name, schema in (
                    ("rid", models.PayloadSchemaType.KEYWORD),
                    ("kinds", models.PayloadSchemaType.KEYWORD),
                    ("seq", models.PayloadSchemaType.INTEGER),
                ):
                    self._client.create_payload_index(self._collection, name, schema)

        self._call("creating the collection", create)
        self._dimension = dimension

    def _last_seq(self) -> int:
        """The highest insertion sequence stored (0 when empty)."""
        points, _ = self._call(
            "reading the last sequence",
            lambda: self._client.scroll(
                self._collection,
                limit=1,
                order_by=models.OrderBy(key="seq", direction=models.Direction.DESC),
                with_payload=["seq"],
            ),
        )
        return int(points[0].payload["seq"]) if points and points[0].payload else 0

    def _next_seqs(self, count: int) -> list[int]:
        """``count`` increasing sequence numbers, after any this store handed out.

        Based on the clock (nanoseconds), so that stores in other processes writing the
        same collection keep their batches in time order too.
        """
        with self._lock:
            start = max(self._seq + 1, time.time_ns())
            self._seq = start + count - 1
        return list(range(start, start + count))

    # ------------------------------------------------------------------ adding

    def add_all(
        self,
        embeddings: Sequence[Embedding],
        segments: Sequence[TextSegment] | None = None,
        *,
        ids: Sequence[str] | None = None,
    ) -> list[str]:
        """Validate the whole batch first, then write it in requests of ``batch_size``.

        An existing id is replaced in place: it keeps its insertion position, like in
        memory. A server error in the middle of a large batch leaves the requests before
        it written (re-adding the batch is idempotent).
        """
        batch = self._prepare(embeddings, segments, ids)
        if batch is None:
            return []
        self._ensure_collection(batch.vectors)
        self._run(self._write(batch))
        return batch.ids

    async def aadd_all(
        self,
        embeddings: Sequence[Embedding],
        segments: Sequence[TextSegment] | None = None,
        *,
        ids: Sequence[str] | None = None,
    ) -> list[str]:
        """:meth:`add_all` on the async client (same checks, same writes)."""
        batch = self._prepare(embeddings, segments, ids)
        if batch is None:
            return []
        if self._dimension is None:  # creating the collection: the sync client does it
            await asyncio.to_thread(self._ensure_collection, batch.vectors)
        await self._arun(self._write(batch))
        return batch.ids

    def _prepare(
        self,
        embeddings: Sequence[Embedding],
        segments: Sequence[TextSegment] | None,
        ids: Sequence[str] | None,
    ) -> _Batch | None:
        """The checked points of an ``add_all`` call (None: nothing to add)."""
        count = len(embeddings)
        texts, metadata = split_segments(segments, count)
        id_list = generate_ids(count) if ids is None else validate_ids(ids, count)
        if count == 0:
            return None
        vectors = validate_embeddings(embeddings, self._dimension)
        pids = [point_id(entry_id) for entry_id in id_list]
        payloads = [
            point_payload(
                entry_id, 0, vectors[i], texts[i], None if metadata is None else metadata[i]
            )
            for i, entry_id in enumerate(id_list)
        ]
        return _Batch(id_list, pids, vectors, payloads, batch_kinds(metadata, self._declared))

    def _ensure_collection(self, vectors: Matrix) -> None:
        with self._guard():
            if self._dimension is None:
                self._create_collection(int(vectors.shape[1]))

    def _write(self, batch: _Batch) -> Steps[None]:
        yield from self._check_kinds(batch.kinds)
        if self._journal is None:
            existing = yield from self._existing_seqs(batch.pids)
            yield from self._upsert(batch, existing)
            return
        prior = yield from self._prior_points(batch.pids)
        _journal.write(self._journal, self._collection, batch.pids, prior)
        try:
            seqs = {p["id"]: int(p["payload"]["seq"]) for p in prior if "seq" in p["payload"]}
            yield from self._upsert(batch, seqs)
        except Exception:
            yield from self._roll_back()  # a failed write: none of the batch either
            raise
        _journal.clear(self._journal)

    def _upsert(self, batch: _Batch, existing: Mapping[str, int]) -> Steps[None]:
        """Write the batch; ``existing`` ids keep their sequence numbers."""
        pids, payloads = batch.pids, batch.payloads
        fresh = iter(self._next_seqs(len(pids) - len(existing)))
        for pid, payload in zip(pids, payloads, strict=True):
            payload["seq"] = existing[pid] if pid in existing else next(fresh)
        for start in range(0, len(pids), self._batch_size):
            stop = start + self._batch_size
            points = [
                models.PointStruct(id=pid, vector=vector.tolist(), payload=payload)
                for pid, vector, payload in zip(
                    pids[start:stop], batch.vectors[start:stop], payloads[start:stop], strict=True
                )
            ]
            yield ClientCall.of(
                f"writing {len(points)} points",
                "upsert",
                self._collection,
                points=points,
                wait=True,
            )

    def _check_kinds(self, kinds: BatchKinds) -> Steps[None]:
        """Refuse the batch if the collection holds one of its keys with another type (core's
        ``metadata_types``): one scroll on the indexed ``kinds`` field."""
        other = [
            field(kind, key)
            for key, kinds_to_avoid in conflicting_kinds(kinds).items()
            for kind in kinds_to_avoid
        ]
        if not other:
            return
        condition = models.Filter(
            must=[models.FieldCondition(key="kinds", match=models.MatchAny(any=other))]
        )
        records, _ = yield ClientCall.of(
            "checking metadata types",
            "scroll",
            self._collection,
            scroll_filter=condition,
            limit=1,
            with_payload=["kinds", "meta"],
        )
        if records and records[0].payload is not None:
            check_held_row(kinds, decode_meta(records[0].payload))

    def _prior_points(self, pids: list[str]) -> Steps[list[_journal.PriorPoint]]:
        """Those of ``pids`` already stored, whole (what a rollback writes back)."""
        prior: list[_journal.PriorPoint] = []
        for start in range(0, len(pids), _PAGE):
            records = yield ClientCall.of(
                "reading existing points",
                "retrieve",
                self._collection,
                ids=pids[start : start + _PAGE],
                with_payload=True,
                with_vectors=True,
            )
            prior += [
                {"id": str(r.id), "vector": r.vector, "payload": r.payload or {}} for r in records
            ]
        return prior

    def _roll_back(self) -> Steps[None]:
        """Undo the unfinished batch the journal records (see ``_journal``)."""
        assert self._journal is not None  # local mode with a path
        pending = _journal.read(self._journal, self._collection)
        if pending is None:
            return
        pids, prior = pending
        yield from self._delete_points(pids)
        for start in range(0, len(prior), self._batch_size):
            points = [
                models.PointStruct(**point) for point in prior[start : start + self._batch_size]
            ]
            yield ClientCall.of(
                f"restoring {len(points)} points",
                "upsert",
                self._collection,
                points=points,
                wait=True,
            )
        _journal.clear(self._journal)

    def _existing_seqs(self, pids: list[str]) -> Steps[dict[str, int]]:
        """The sequence numbers of those of ``pids`` already stored."""
        found: dict[str, int] = {}
        for start in range(0, len(pids), _PAGE):
            records = yield ClientCall.of(
                "reading existing points",
                "retrieve",
                self._collection,
                ids=pids[start : start + _PAGE],
                with_payload=["seq"],
                with_vectors=False,
            )
            for record in records:
                if record.payload and "seq" in record.payload:
                    found[str(record.id)] = int(record.payload["seq"])
        return found

    # ------------------------------------------------------------------ searching

    def search(self, request: EmbeddingSearchRequest) -> EmbeddingSearchResult:
        """The best ``max_results`` entries passing the filter, scored ``(cos + 1) / 2``."""
        return self._run(self._search(request))

    async def asearch(self, request: EmbeddingSearchRequest) -> EmbeddingSearchResult:
        """:meth:`search` on the async client."""
        return await self._arun(self._search(request))

    def _search(self, request: EmbeddingSearchRequest) -> Steps[EmbeddingSearchResult]:
        compiled = None if request.filter is None else compile_filter(request.filter)
        query = np.asarray(request.query_embedding.vector, dtype=np.float32)
        if self._dimension is None:
            return EmbeddingSearchResult([])
        if query.shape != (self._dimension,):
            raise EmbeddingStoreError(
                f"query embedding has dimension {query.size}, but collection "
                f"{self._collection!r} holds vectors of dimension {self._dimension}"
            )
        if not np.all(np.isfinite(query)):
            raise EmbeddingStoreError("query embedding has non-finite values")
        native = Native(None, exact=True)
        if compiled is not None:
            yield from self._probe(compiled)
            native = compiled.native
        if not np.any(query):  # cosine 0 with everything: insertion order decides
            rows = yield from self._scan(native, request.filter)
            cosines = np.zeros(len(rows), dtype=np.float64)
        else:
            rows, cosines = yield from self._nearest(
                query, request.max_results, request.min_score, native, request.filter
            )
        order = np.lexsort((np.array([row.seq for row in rows], dtype=np.int64), -cosines))
        order = order[: request.max_results]
        scores = relevance_score(cosines[order])
        return EmbeddingSearchResult(
            [
                self._match(rows[i], float(score))
                for i, score in zip(order.tolist(), scores.tolist(), strict=True)
                if score >= request.min_score
            ]
        )

    def _nearest(
        self,
        query: Matrix,
        k: int,
        min_score: float,
        native: Native,
        condition: Filter | None,
    ) -> Steps[tuple[list[_Row], npt.NDArray[np.float64]]]:
        """Candidates and their exact cosines: enough to hold the exact top ``k``."""
        min_cosine = 2.0 * min_score - 1.0
        threshold = min_cosine - _SLACK if min_score > 0 else None
        limit = k + max(k, 10)
        vector = query.tolist()
        while True:
            result = yield ClientCall.of(
                "searching",
                "query_points",
                self._collection,
                query=vector,
                limit=limit,
                query_filter=native.filter,
                search_params=None if self._local else self._search_params,
                score_threshold=threshold,
                with_payload=_RESULT_FIELDS,
                with_vectors=False,
            )
            points = result.points
            rows = [
                _Row(str(p.id), int(p.payload["seq"]), p.payload)
                for p in points
                if p.payload is not None
                and (native.exact or condition is None or condition.test(decode_meta(p.payload)))
            ]
            cosines = self._cosines(query, rows)
            if len(points) < limit:  # every candidate seen
                return rows, cosines
            reachable = points[-1].score + _SLACK  # no unseen point scores above this
            best = np.sort(cosines)[::-1]
            if (len(best) >= k and best[k - 1] > reachable) or min_cosine > reachable:
                return rows, cosines
            limit *= 4

    def _cosines(self, query: Matrix, rows: list[_Row]) -> npt.NDArray[np.float64]:
        assert self._dimension is not None
        if not rows:
            return np.zeros(0, dtype=np.float64)
        vectors = np.stack([decode_vector(row.payload, self._dimension) for row in rows])
        return exact_cosines(vectors, query)

    def _scan(self, native: Native, condition: Filter | None) -> Steps[list[_Row]]:
        """Every point passing the filter (a zero query scores all alike)."""
        records = yield from self._scroll(native.filter, _RESULT_FIELDS)
        return [
            _Row(str(record.id), int(record.payload["seq"]), record.payload)
            for record in records
            if record.payload is not None
            and (native.exact or condition is None or condition.test(decode_meta(record.payload)))
        ]

    def _scroll(
        self, condition: models.Filter | None, fields: list[str]
    ) -> Steps[list[models.Record]]:
        """Every point passing ``condition``, read page by page."""
        found: list[models.Record] = []
        offset: models.ExtendedPointId | None = None
        while True:
            records, offset = yield ClientCall.of(
                "reading points",
                "scroll",
                self._collection,
                scroll_filter=condition,
                limit=_PAGE,
                offset=offset,
                with_payload=fields,
                with_vectors=False,
            )
            found += records
            if offset is None:
                return found

    def _match(self, row: _Row, score: float) -> EmbeddingMatch:
        assert self._dimension is not None
        payload = row.payload
        text = payload.get("text")
        segment = None if text is None else TextSegment(text, decode_meta(payload))
        vector = decode_vector(payload, self._dimension)
        return EmbeddingMatch(score, str(payload["rid"]), Embedding(vector), segment)

    def _probe(self, compiled: CompiledFilter) -> Steps[None]:
        """Raise InvalidFilterError if a stored value's type cannot meet the filter's."""
        if self._dimension is not None:
            yield from check_types(compiled, self._collection)

    # ------------------------------------------------------------------ removing

    def remove_all(self, ids: Iterable[str] | None = None, *, filter: Filter | None = None) -> None:
        """Remove the given ids, the entries matching ``filter``, or (neither) everything."""
        self._run(self._remove(ids, filter))

    async def aremove_all(
        self, ids: Iterable[str] | None = None, *, filter: Filter | None = None
    ) -> None:
        """:meth:`remove_all` on the async client."""
        await self._arun(self._remove(ids, filter))

    def _remove(self, ids: Iterable[str] | None, filter: Filter | None) -> Steps[None]:
        if ids is not None and filter is not None:
            raise EmbeddingStoreError("remove_all takes ids or a filter, not both")
        if ids is not None:
            id_list = validate_ids(ids, unique=False)
            if id_list and self._dimension is not None:
                yield from self._delete_points([point_id(entry_id) for entry_id in id_list])
            return
        compiled = None if filter is None else compile_filter(check_filter(filter))
        if self._dimension is None:
            return
        if compiled is None:
            yield self._delete_matching(models.Filter())
            return
        yield from self._probe(compiled)
        native = compiled.native
        if native.exact:
            yield self._delete_matching(native.filter or models.Filter())
            return
        assert filter is not None
        records = yield from self._scroll(native.filter, ["meta"])
        yield from self._delete_points(
            [str(r.id) for r in records if filter.test(decode_meta(r.payload or {}))]
        )

    def _delete_points(self, pids: list[str]) -> Steps[None]:
        for start in range(0, len(pids), self._batch_size):
            chunk: list[models.ExtendedPointId] = list(pids[start : start + self._batch_size])
            yield ClientCall.of(
                f"deleting {len(chunk)} points",
                "delete",
                self._collection,
                points_selector=models.PointIdsList(points=chunk),
                wait=True,
            )

    def _delete_matching(self, condition: models.Filter) -> ClientCall:
        return ClientCall.of(
            "deleting points",
            "delete",
            self._collection,
            points_selector=models.FilterSelector(filter=condition),
            wait=True,
        )

    # ------------------------------------------------------------------ indexes

    def create_metadata_index(self, key: str, kind: type) -> None:
        """A Qdrant payload index on metadata ``key`` holding ``kind`` values (server only).

        ``kind`` is ``str``, ``int`` or ``float`` (numbers share one field), ``bool`` or
        ``uuid.UUID``. Filters on an indexed key (e.g. a tenant id) run faster on a server;
        local mode has no indexes and ignores this.
        """
        kinds = {
            str: (STR, models.PayloadSchemaType.KEYWORD),
            int: (NUMBER, models.PayloadSchemaType.FLOAT),
            float: (NUMBER, models.PayloadSchemaType.FLOAT),
            bool: (BOOL, models.PayloadSchemaType.BOOL),
            uuid.UUID: (UUID, models.PayloadSchemaType.KEYWORD),
        }
        if kind not in kinds:
            raise EmbeddingStoreError(
                f"kind must be str, int, float, bool or uuid.UUID, got {kind!r}"
            )
        if self._local or self._dimension is None:
            return
        value_kind, schema = kinds[kind]
        self._call(
            f"indexing metadata key {key!r}",
            lambda: self._client.create_payload_index(
                self._collection, field(value_kind, key), schema
            ),
        )
