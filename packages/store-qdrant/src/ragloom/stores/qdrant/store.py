"""QdrantEmbeddingStore: the EmbeddingStore contract on a Qdrant collection.

One collection per store (one unnamed dense vector, cosine), created on first use or
validated if it exists. Points: id ``uuid5(<ragloom id>)`` (Qdrant takes only UUIDs and
unsigned ints), payload as described in ``_payload`` (the original id, an insertion
sequence, the text, typed metadata and the vector as added).

Search asks Qdrant for the nearest points (filter applied inside the query); the
remote-store base (:mod:`ragloom.core.kit.remote_store`) rescores each one from the stored
vector in float64 and sorts by (score desc, insertion sequence): the in-memory store's
scores and tie order. Qdrant's own scores (float32, on normalized vectors) only pick the
candidates: the store asks for more until the k-th exact score is beyond what any point
not yet seen could reach. A filter part Qdrant cannot express exactly (str ordering) is
sent as an exact superset and each candidate is checked with :meth:`Filter.test`.

Metadata type checks (a filter or a batch meeting a stored value of another type) ask the
kinds registry (``_registry``, a side collection ``<collection>__ragloom_kinds``) first:
only a field it may hold costs a scroll of the collection.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
from qdrant_client import AsyncQdrantClient, QdrantClient, models
from qdrant_client.local.qdrant_local import QdrantLocal

from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding
from ragloom.core.errors import EmbeddingStoreError
from ragloom.core.filter_values import BOOL, NUMBER, STR, UUID
from ragloom.core.filters import Filter
from ragloom.core.kit.remote_store import (
    Candidates,
    Compiled,
    NewEntries,
    RemoteEmbeddingStore,
    positive_int,
)
from ragloom.core.kit.steps import ClientCall, Steps, run_steps
from ragloom.core.metadata import MetadataValue
from ragloom.core.stores import EmbeddingMatch
from ragloom.stores.qdrant import _journal
from ragloom.stores.qdrant._connect import collection_name, connect
from ragloom.stores.qdrant._filters import (
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
from ragloom.stores.qdrant._registry import KindRegistry

__all__ = ["QdrantEmbeddingStore"]

Matrix = npt.NDArray[np.float32]

_MAX_DIMENSION = 65536  # Qdrant's limit for a dense vector
_SLACK = 1e-4  # Qdrant's float32 cosine vs the exact one: bound on the difference
_RESULT_FIELDS = ["rid", "seq", "text", "meta", "vec"]
_ENTRY_FIELDS = ["rid", "seq", "text", "meta"]  # all but the vector
_PAGE = 1000  # points per scroll page


class _Batch(NamedTuple):
    """The points of a checked ``add_all`` batch."""

    pids: list[str]
    vectors: Matrix
    payloads: list[dict[str, Any]]
    fields: set[str]
    """The typed metadata fields the batch writes (for the kinds registry)."""


class _Row(NamedTuple):
    """A candidate point, read back."""

    pid: str
    seq: int
    payload: dict[str, Any]


class QdrantEmbeddingStore(RemoteEmbeddingStore):
    """An :class:`~ragloom.core.EmbeddingStore` in a Qdrant collection.

    Connect with exactly one of ``url`` (a Qdrant server or cluster, with ``api_key``),
    ``path`` (local mode, persisted in that directory), ``location`` (``":memory:"`` or a
    URL) or ``client`` (a :class:`QdrantClient` you own). ``dimension`` fixes the vector
    size of a new collection (omitted: taken from the first batch added); for an existing
    collection it is checked. ``exact=True`` makes a server scan instead of using its
    HNSW index (exact top-k); ``hnsw_ef`` trades speed for recall otherwise. Writes go in
    requests of at most ``batch_size`` points. An existing id is replaced in place: it
    keeps its insertion position, like in memory. A server error in the middle of a large
    batch leaves the requests before it written (re-adding the batch is idempotent); in
    local mode on disk a batch is all-or-nothing (an undo journal, see ``_journal``).

    Thread-safe: calls to a local-mode client (which is not) are serialized by the store.

    Async: ``asearch``, ``aadd_all``, ``aadd``, ``aremove_all`` and ``aget`` run the same
    operations on an ``AsyncQdrantClient``: with ``url`` (or a server ``location``) the store opens
    one per event loop (close it with ``await store.aclose()`` or ``async with``); with
    ``client``, pass ``async_client`` for the same Qdrant. In local mode (``path`` or
    ``":memory:"``) they run the sync operation in a worker thread: the local engine is
    in-process Python (an async local client computes on the event loop's thread), and a
    second client cannot share its data (a path is locked by its first client; each
    ``":memory:"`` client is a database of its own).
    """

    _label = "Qdrant collection"
    _client: QdrantClient
    _ann_slack = _SLACK

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
        super().__init__(
            collection_name(collection), metadata_schema=metadata_schema, async_client=async_client
        )
        if dimension is not None:
            positive_int(dimension, "dimension", _MAX_DIMENSION)
        self._batch_size = positive_int(batch_size, "batch_size")
        if not isinstance(exact, bool):
            raise EmbeddingStoreError(f"exact must be a bool, got {exact!r}")
        self._search_params = models.SearchParams(
            exact=exact, hnsw_ef=None if hnsw_ef is None else positive_int(hnsw_ef, "hnsw_ef")
        )
        self._create = bool(create_collection)
        if async_client is not None:
            if client is None:
                raise EmbeddingStoreError("async_client goes with client, not with url or path")
            if not isinstance(async_client, AsyncQdrantClient):
                raise EmbeddingStoreError(
                    f"async_client must be an AsyncQdrantClient, got {type(async_client).__name__}"
                )
        self._client, self._owns_client, self._server = connect(
            client, url, path, location, api_key, timeout
        )
        # Local mode is plain Python over a dict (and SQLite): one call at a time.
        self._local = isinstance(getattr(self._client, "_client", None), QdrantLocal)
        # Local mode on disk: add_all is all-or-nothing through an undo journal.
        self._journal = None if path is None else _journal.journal_path(path, self._collection)
        self._registry = KindRegistry(self._collection)
        try:
            self._open(dimension)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ properties

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
            result = self._call("counting points", self._client.count, self._collection, exact=True)
        return int(result.count)

    def close(self) -> None:
        """Close the client, if the store created it (see :meth:`aclose`)."""
        if self._owns_client:
            self._client.close()

    def _guard(self) -> Any:
        """The lock for calls to a local-mode client; nothing for a server."""
        return self._lock if self._local else super()._guard()

    def _new_async_client(self) -> AsyncQdrantClient | None:
        """An async client of the server for this loop (none in local mode)."""
        if self._server is None:
            return None
        return self._call("connecting (async)", AsyncQdrantClient, **self._server)

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
                self._last_seq = self._stored_last_seq()
                self._open_registry()
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
        self._open_registry()
        self._dimension = dimension

    def _open_registry(self) -> None:
        """Open (create, fill) the kinds registry; where the client may not (e.g. a
        read-only key), type checks scroll the collection instead."""
        try:
            run_steps(self._registry.open(), self._perform)
        except EmbeddingStoreError:
            self._registry.available = False

    def _stored_last_seq(self) -> int:
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

    # ------------------------------------------------------------------ adding

    def _prepare(self, entries: NewEntries) -> _Batch:
        """The points of a checked batch (raises for what a payload cannot hold)."""
        texts, metadata = entries.texts, entries.metadata
        payloads = [
            point_payload(
                entry_id, 0, entries.vectors[i], texts[i], None if metadata is None else metadata[i]
            )
            for i, entry_id in enumerate(entries.ids)
        ]
        pids = [point_id(entry_id) for entry_id in entries.ids]
        fields = {name for payload in payloads for name in payload["kinds"]}
        return _Batch(pids, entries.vectors, payloads, fields)

    def _ensure_collection(self, dimension: int) -> None:
        with self._guard():
            if self._dimension is None:
                self._create_collection(dimension)

    def _write(self, entries: NewEntries, batch: _Batch) -> Steps[None]:
        yield from self._check_kinds(entries.kinds)
        yield from self._registry.register(batch.fields)
        if self._journal is None:
            existing = {} if entries.generated else (yield from self._existing_seqs(batch.pids))
            yield from self._upsert(batch, existing)
            return
        # Generated ids are new UUIDs: nothing stored to keep or to restore.
        prior = [] if entries.generated else (yield from self._prior_points(batch.pids))
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
        vectors = batch.vectors.tolist()  # one conversion for the batch
        for start in range(0, len(pids), self._batch_size):
            stop = start + self._batch_size
            # Built unvalidated: the ids, vectors and payloads are checked already.
            points = [
                models.PointStruct.model_construct(id=pid, vector=vector, payload=payload)
                for pid, vector, payload in zip(
                    pids[start:stop], vectors[start:stop], payloads[start:stop], strict=True
                )
            ]
            yield ClientCall.of(
                f"writing {len(points)} points",
                "upsert",
                self._collection,
                points=points,
                wait=True,
            )

    def _held_metadata(
        self, conflicts: Mapping[str, list[str]]
    ) -> Steps[list[dict[str, MetadataValue]]]:
        """One point holding a key with a conflicting kind: none if the kinds registry
        holds none of them, else one scroll on the indexed ``kinds`` field."""
        other = [field(kind, key) for key, kinds in conflicts.items() for kind in kinds]
        if not (yield from self._registry.may_hold(other)):
            return []
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
        return [decode_meta(r.payload) for r in records if r.payload is not None]

    def _prior_points(self, pids: list[str]) -> Steps[list[_journal.PriorPoint]]:
        """Those of ``pids`` already stored, whole (what a rollback writes back)."""
        records = yield from self._retrieve(pids, True, vectors=True)
        return [{"id": str(r.id), "vector": r.vector, "payload": r.payload or {}} for r in records]

    def _retrieve(
        self, pids: list[str], payload: bool | list[str], *, vectors: bool = False
    ) -> Steps[list[models.Record]]:
        """Those of ``pids`` already stored, read page by page."""
        records: list[models.Record] = []
        for start in range(0, len(pids), _PAGE):
            records += yield ClientCall.of(
                "reading existing points",
                "retrieve",
                self._collection,
                ids=pids[start : start + _PAGE],
                with_payload=payload,
                with_vectors=vectors,
            )
        return records

    def _roll_back(self) -> Steps[None]:
        """Undo the unfinished batch the journal records (see ``_journal``)."""
        assert self._journal is not None  # local mode with a path
        pending = _journal.read(self._journal, self._collection)
        if pending is None:
            return
        pids, prior = pending
        yield from self._delete_keys(pids)
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
        records = yield from self._retrieve(pids, ["seq"])
        return {
            str(r.id): int(r.payload["seq"]) for r in records if r.payload and "seq" in r.payload
        }

    # ------------------------------------------------------------------ searching

    def _compile(self, condition: Filter) -> Steps[Compiled]:
        compiled = compile_filter(condition)
        if self._dimension is not None and (
            yield from self._registry.may_hold(list(compiled.mismatch))
        ):
            yield from check_types(compiled, self._collection)  # raises on a clashing stored type
        return Compiled(compiled.native.filter, compiled.native.exact)

    def _fetch(
        self, query: Matrix, compiled: Compiled, min_score: float
    ) -> Callable[[int], Steps[Candidates]]:
        threshold = 2.0 * min_score - 1.0 - self._ann_slack if min_score > 0 else None

        def fetch(limit: int) -> Steps[Candidates]:
            result = yield ClientCall.of(
                "searching",
                "query_points",
                self._collection,
                query=query.tolist(),
                limit=limit,
                query_filter=compiled.native,
                search_params=None if self._local else self._search_params,
                score_threshold=threshold,
                with_payload=_RESULT_FIELDS,
                with_vectors=False,
            )
            points = result.points
            rows = self._rows(points)
            return Candidates(rows, self._vectors(rows), points[-1].score if points else 0.0)

        return fetch

    def _scan(self, native: models.Filter | None) -> Steps[list[_Row]]:
        return self._rows((yield from self._scroll(native, _RESULT_FIELDS)))

    @staticmethod
    def _rows(points: Iterable[models.ScoredPoint | models.Record]) -> list[_Row]:
        return [_Row(str(p.id), int(p.payload["seq"]), p.payload) for p in points if p.payload]

    def _vectors(self, rows: list[_Row]) -> Matrix:
        assert self._dimension is not None
        if not rows:
            return np.zeros((0, self._dimension), dtype=np.float32)
        return np.stack([decode_vector(row.payload, self._dimension) for row in rows])

    def _row_metadata(self, row: _Row) -> dict[str, MetadataValue]:
        return decode_meta(row.payload)

    def _seq(self, row: _Row) -> int:
        return row.seq

    def _match(self, row: _Row, score: float) -> EmbeddingMatch:
        assert self._dimension is not None
        vector = decode_vector(row.payload, self._dimension)
        entry_id, segment = self._stored(row)
        return EmbeddingMatch(score, entry_id, Embedding(vector), segment)

    def _stored(self, row: _Row) -> tuple[str, TextSegment | None]:
        payload = row.payload
        text = payload.get("text")
        return str(payload["rid"]), None if text is None else TextSegment(
            text, decode_meta(payload)
        )

    def _rows_of(self, pids: list[str], embeddings: bool) -> Steps[list[_Row]]:
        """The points of ``pids`` (retrieved by point id), with the vector as added only
        when asked for."""
        fields = _RESULT_FIELDS if embeddings else _ENTRY_FIELDS
        return self._rows((yield from self._retrieve(pids, fields)))

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

    # ------------------------------------------------------------------ removing

    def _keys(self, ids: list[str]) -> list[str]:
        return [point_id(entry_id) for entry_id in ids]

    def _key(self, row: _Row) -> str:
        return row.pid

    def _delete_keys(self, pids: list[str]) -> Steps[None]:
        for start in range(0, len(pids), self._batch_size):
            chunk: list[models.ExtendedPointId] = list(pids[start : start + self._batch_size])
            yield ClientCall.of(
                f"deleting {len(chunk)} points",
                "delete",
                self._collection,
                points_selector=models.PointIdsList(points=chunk),
                wait=True,
            )

    def _delete_where(self, native: models.Filter | None) -> Steps[None]:
        yield ClientCall.of(
            "deleting points",
            "delete",
            self._collection,
            points_selector=models.FilterSelector(filter=native or models.Filter()),
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
