"""MilvusEmbeddingStore: the EmbeddingStore contract on Milvus (Lite, server or cluster).

One collection per store (schema in ``_schema``, metadata encoding in ``_metadata``;
writes of caller-chosen ids, which Milvus would let duplicate, in ``_writes``).
Search asks Milvus for the nearest candidates by cosine; the remote-store base
(:mod:`ragloom.core.kit.remote_store`) rescores them in float64 from the stored vectors and
sorts by (score, seq): the scores are the in-memory store's for the same vectors. If the
candidates could hide a tie at the cut, more are fetched. Filters compile to Milvus
expressions (``_filters``); a filter Milvus cannot state exactly is finished in Python.
"""

from __future__ import annotations

import contextlib
import uuid
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, TypeVar

import numpy as np
import numpy.typing as npt
from pymilvus import (  # type: ignore[import-untyped]
    AsyncMilvusClient,
    Collection,
    MilvusClient,
    MilvusException,
)

from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding
from ragloom.core.errors import EmbeddingStoreError
from ragloom.core.filters import Filter
from ragloom.core.kit.remote_store import (
    Candidates,
    Compiled,
    NewEntries,
    RemoteEmbeddingStore,
    positive_int,
    renamed_option,
)
from ragloom.core.kit.steps import ClientCall, Steps
from ragloom.core.metadata import Metadata, MetadataValue
from ragloom.core.stores.base import (
    EmbeddingMatch,
)
from ragloom.core.stores.validation import check_filter
from ragloom.stores.milvus import _lite
from ragloom.stores.milvus._columns import Columns, with_rows
from ragloom.stores.milvus._connect import connect
from ragloom.stores.milvus._expr import (
    Expr,
    Param,
    expressible,
    filter_arguments,
    key_expressible,
    path,
)
from ragloom.stores.milvus._filters import CompiledFilter, _cmp, _or, compile_filter, matches
from ragloom.stores.milvus._metadata import KINDS_OF, decode_metadata
from ragloom.stores.milvus._registry import KindRegistry
from ragloom.stores.milvus._schema import (
    DEFAULT_ANALYZER,
    SPARSE_FIELD,
    check_collection,
    check_name,
    create_collection,
    index_options,
)
from ragloom.stores.milvus._writes import write_given_ids

__all__ = ["DEFAULT_ANALYZER", "SPARSE_FIELD", "MilvusEmbeddingStore"]

_MAX_DIMENSION = 32768
_TOP_K_LIMIT = 16384  # Milvus: limit (+ offset) of one search or query
_PAGE = 1000
_FIELDS = ["id", "seq", "vector", "text", "has_text", "metadata", "kinds", "exact"]
_ENTRY_FIELDS = ["id", "text", "has_text", "metadata", "kinds", "exact"]  # all but vector, seq
_KIND_FIELDS = ["metadata", "kinds", "exact"]
_TIE_MARGIN = 1e-5  # float32 cosine error of the server's scores, generously

T = TypeVar("T")
Row = dict[str, Any]


class MilvusEmbeddingStore(RemoteEmbeddingStore):
    """An :class:`~ragloom.core.EmbeddingStore` in a Milvus collection.

    Connect with ``uri`` (a local ``.db`` file runs Milvus Lite in-process; ``http://host:19530``
    a Milvus server or cluster) and optionally ``token`` and ``db_name``, or pass a
    ``client`` (a :class:`pymilvus.MilvusClient` you own). ``dimension`` is fixed when the
    collection is created; for an existing collection it may be omitted (read from it) and,
    when given, must match. Without it, the collection is created on the first write.

    ``index_type``/``index_params`` choose the vector index (``FLAT``: exact; ``HNSW`` etc.
    on a server are approximate, tune with ``search_params``). Filter values travel as
    ``filter_params`` (expression templates) when ``expression_templates`` is true (the
    default for a server URI); Milvus Lite 2.5 has no templates, so for a ``.db`` URI they are
    written as literals by one strict encoder. ``type_checks`` (default on) makes a filter
    comparing a key with a value of another type raise ``InvalidFilterError`` as in memory,
    at the cost of one query scanning the filtered keys' kinds; off, such entries simply
    do not match. Writes go in batches of ``batch_size``.
    ``full_text=True`` gives a new collection a BM25 function over ``text`` (analyzed with
    ``analyzer_params``, default :data:`DEFAULT_ANALYZER`) for
    :class:`~ragloom.stores.milvus.MilvusHybridContentRetriever`; an existing collection
    must then have it.
    Thread-safe (one pymilvus client, which is).

    Async: ``asearch``, ``aadd_all``, ``aadd``, ``aremove_all`` and ``aget`` run the same
    operations on a pymilvus ``AsyncMilvusClient``: with ``uri``, the store opens one per event loop
    (on its first async call there; close it with ``await store.aclose()`` or
    ``async with``); with ``client``, pass ``async_client`` for the same Milvus, or the
    async methods run each operation in a worker thread. At most ``async_concurrency``
    calls are in flight per event loop (Milvus Lite 2.5.1 drops requests beyond about 160
    concurrent ones on a connection); the others wait their turn.
    """

    _label = "Milvus collection"
    _ann_slack = _TIE_MARGIN
    _ann_limit = _TOP_K_LIMIT
    _client: MilvusClient

    def __init__(
        self,
        uri: str | None = None,
        collection: str | None = None,
        *,
        dimension: int | None = None,
        token: str | None = None,
        db_name: str | None = None,
        client: MilvusClient | None = None,
        async_client: AsyncMilvusClient | None = None,
        async_concurrency: int = 64,
        index_type: str = "FLAT",
        index_params: dict[str, Any] | None = None,
        search_params: dict[str, Any] | None = None,
        expression_templates: bool | None = None,
        type_checks: bool = True,
        batch_size: int = 500,
        timeout: int = 60,
        metadata_schema: Mapping[str, type] | None = None,
        full_text: bool = False,
        analyzer_params: dict[str, Any] | None = None,
        collection_name: str | None = None,
    ) -> None:
        name = renamed_option(collection, "collection", collection_name, "collection_name")
        super().__init__(
            check_name(
                "ragloom_embeddings" if name is None else name,
                "collection" if collection_name is None else "collection_name",
            ),
            metadata_schema=metadata_schema,
            async_client=async_client,
            async_concurrency=positive_int(async_concurrency, "async_concurrency"),
        )
        if dimension is not None:
            positive_int(dimension, "dimension", _MAX_DIMENSION)
        self._index = index_options(index_type, index_params, analyzer_params)
        if search_params is not None and not isinstance(search_params, dict):
            raise EmbeddingStoreError(
                f"search_params must be a dict, got {type(search_params).__name__}"
            )
        for option, flag in (("type_checks", type_checks), ("full_text", full_text)):
            if not isinstance(flag, bool):
                raise EmbeddingStoreError(f"{option} must be a bool, got {flag!r}")
        self._type_checks = type_checks
        self._full_text = full_text
        self._batch_size = positive_int(batch_size, "batch_size")
        self._timeout = positive_int(timeout, "timeout")
        self._search_params = dict(search_params or {})
        self._orm: Collection | None = None
        connection = connect(
            uri,
            client,
            async_client,
            token=token,
            db_name=db_name,
            timeout=self._timeout,
            expression_templates=expression_templates,
            call=self._call,
        )
        self._client, self._owns_client, self._uri = connection[:3]
        self._connect_kwargs, self._templates, self._lite_lease = connection[3:]
        self._registry = KindRegistry(self._client, self._collection, self._call, self._render)
        self._registered = False  # whether the collection has a kinds registry
        try:
            self._dimension = self._open(dimension)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ properties

    @property
    def collection_name(self) -> str:
        """Deprecated: :attr:`collection`."""
        warnings.warn(
            "MilvusEmbeddingStore.collection_name is deprecated; use .collection",
            DeprecationWarning,
            stacklevel=2,
        )
        return self._collection

    @property
    def full_text(self) -> bool:
        """Whether the collection has (or will be created with) the BM25 ``sparse`` field."""
        return self._full_text

    @property
    def client(self) -> MilvusClient:
        """The pymilvus client the store uses."""
        return self._client

    def __repr__(self) -> str:
        return (
            f"MilvusEmbeddingStore(uri={self._uri!r}, collection={self._collection!r}, "
            f"dimension={self._dimension})"
        )

    def __len__(self) -> int:
        if self._dimension is None:
            return 0
        rows = self._call(
            "counting entries",
            self._client.query,
            self._collection,
            filter="",
            output_fields=["count(*)"],
            consistency_level="Strong",
        )
        return int(rows[0]["count(*)"])

    def close(self) -> None:
        """Close the client, if the store created it (see :meth:`aclose`), and stop the
        Milvus Lite server it started once no other open store uses it."""
        if self._owns_client:
            self._owns_client = False
            with contextlib.suppress(MilvusException):  # a broken connection: nothing to release
                self._client.close()
            self._release_lite()

    def _release_lite(self) -> None:
        if self._lite_lease is not None:
            lease, self._lite_lease = self._lite_lease, None
            _lite.release(lease)

    async def _aclose_client(self, client: AsyncMilvusClient) -> None:
        with contextlib.suppress(MilvusException):
            await client.close()

    # ------------------------------------------------------------------ server calls

    def _message(self, exc: Exception) -> str:
        return str(exc.message) if isinstance(exc, MilvusException) else str(exc)

    def _call(self, what: str, method: Any, *args: Any, **kwargs: Any) -> Any:
        """A client call with the store's timeout (see the base)."""
        if method not in (MilvusClient, AsyncMilvusClient, Collection):
            kwargs.setdefault("timeout", self._timeout)
        return super()._call(what, method, *args, **kwargs)

    def _perform(self, step: ClientCall) -> Any:
        """One step on the sync client (a batch of new entries goes in one columnar insert)."""
        if step.method == "insert":
            columns: Columns = step.args[1]
            return self._call(step.what, self._orm_collection().insert, columns.values())
        args = with_rows(step.args)
        return self._call(step.what, getattr(self._client, step.method), *args, **step.kwargs)

    async def _aperform(self, client: AsyncMilvusClient, step: ClientCall) -> Any:
        method = getattr(client, step.method)
        return await method(*with_rows(step.args), **{"timeout": self._timeout, **step.kwargs})

    def _orm_collection(self) -> Collection:
        """pymilvus's ORM view of the collection, on the sync client's connection (for its
        columnar insert; made once, it reads the schema)."""
        if self._orm is None:
            self._orm = self._call(
                "reading the schema",
                Collection,
                self._collection,
                using=self._client._using,
            )
        return self._orm

    def _new_async_client(self) -> AsyncMilvusClient | None:
        """With ``uri``, an async client for the running loop (its own alias too: a
        connection opened in another loop cannot serve here)."""
        if self._connect_kwargs is None:
            return None
        return self._call(
            f"connecting to Milvus at {self._uri} (async)",
            AsyncMilvusClient,
            alias=f"ragloom-async-{uuid.uuid4().hex}",
            **self._connect_kwargs,
        )

    def _render(self, expr: Expr) -> dict[str, Any]:
        return filter_arguments(expr, self._templates)

    # ------------------------------------------------------------------ schema

    def _open(self, dimension: int | None) -> int | None:
        exists = self._call(
            "checking the collection", self._client.has_collection, self._collection
        )
        if not exists:
            if dimension is not None:
                self._create(dimension)
            return dimension
        # A collection made before the registry existed has none: filters then scan.
        self._registered = self._registry.exists()
        return self._check_collection(dimension)

    def _create(self, dimension: int) -> None:
        # The registry first: wherever the collection exists, so does its registry.
        self._registry.create()
        self._registered = True
        try:
            create_collection(
                self._client, self._call, self._collection, dimension, self._index, self._full_text
            )
        except EmbeddingStoreError:
            # Another store created it at the same time: use it if it fits.
            if not self._client.has_collection(self._collection, timeout=self._timeout):
                raise
            self._check_collection(dimension)

    def _check_collection(self, dimension: int | None) -> int:
        existing = check_collection(
            self._client, self._call, self._collection, dimension, self._full_text
        )
        self._full_text = existing.full_text
        return existing.dimension

    # ------------------------------------------------------------------ writes

    def _prepare(self, entries: NewEntries) -> Columns:
        return self._columns(entries.ids, entries.vectors, entries.texts, entries.metadata)

    def _ensure_collection(self, dimension: int) -> None:
        """Create the collection on the first write (or adopt one made meanwhile)."""
        with self._lock:
            if self._dimension is None:
                self._dimension = self._open(dimension)

    def _write(self, entries: NewEntries, columns: Columns) -> Steps[None]:
        """Written in batches of ``batch_size`` rows; a server failure in the middle of a large
        call can leave the earlier batches written (Milvus has no multi-batch transaction)."""
        yield from self._check_kinds(entries.kinds)
        if self._registered:
            yield from self._registry.register(columns.kinds)
        for start in range(0, len(columns), self._batch_size):
            chunk = columns.take(slice(start, start + self._batch_size))
            if entries.generated:  # new UUID4s: nothing to replace or keep
                yield ClientCall.of(
                    f"writing {len(chunk)} entries", "insert", self._collection, chunk
                )
                continue
            yield from write_given_ids(self._collection, chunk, self._render)

    def _held_metadata(
        self, conflicts: Mapping[str, list[str]]
    ) -> Steps[list[dict[str, MetadataValue]]]:
        incompatible = {
            key: sorted(stored for kind in kinds for stored in KINDS_OF[kind])
            for key, kinds in conflicts.items()
        }
        checks = [
            _cmp(path("kinds", key), "in", tuple(incompatible[key]))
            for key in conflicts
            if key_expressible(key)
        ]
        probe = _or(checks).expr if checks else None
        complete = len(checks) == len(conflicts)
        rows = yield from self._typed_rows(incompatible, probe, complete, "metadata types")
        return [self._metadata(row) for row in rows]

    def _typed_rows(
        self,
        incompatible: Mapping[str, Iterable[str]],
        probe: Expr | None,
        complete: bool,
        what: str,
    ) -> Steps[list[Row]]:
        """Stored rows that may hold a key with one of its ``incompatible`` stored kinds:
        none if the kinds registry rules it out (it may over-report, never under-report);
        else the first row ``probe`` finds, and every row unless the probe names every key
        (``complete``)."""
        if self._registered and not (yield from self._registry.may_hold(incompatible)):
            return []
        found: list[Row] = []
        if probe is not None:
            found = yield ClientCall.of(
                f"checking {what}",
                "query",
                self._collection,
                output_fields=_KIND_FIELDS,
                limit=1,
                consistency_level="Strong",
                **self._render(probe),
            )
        if not complete:
            found += yield from self._scan(None, _KIND_FIELDS)
        return found

    def _columns(
        self,
        ids: list[str],
        vectors: npt.NDArray[np.float32],
        texts: list[str | None],
        metadata: list[dict[str, MetadataValue]] | None,
    ) -> Columns:
        """The columns of new entries, with new insertion sequence numbers."""
        return Columns.of(ids, self._next_seqs(len(ids)), vectors, texts, metadata)

    # ------------------------------------------------------------------ search

    def _compile(self, condition: Filter) -> Steps[Compiled]:
        compiled = (yield from self._compiled(condition)).condition
        empty = compiled.expr is None and not compiled.value
        return Compiled(compiled.expr, compiled.exact, empty)

    def _compiled(self, condition: Filter) -> Steps[CompiledFilter]:
        compiled = compile_filter(check_filter(condition), lenient=not self._type_checks)
        if self._dimension is None or not self._type_checks:
            return compiled
        rows = yield from self._typed_rows(
            compiled.incompatible, compiled.probe, compiled.probe_complete, "filter value types"
        )
        for row in rows:
            condition.test(self._metadata(row))  # raises core's InvalidFilterError
        return compiled

    def _fetch(
        self, query: npt.NDArray[np.float32], compiled: Compiled, min_score: float
    ) -> Callable[[int], Steps[Candidates]]:
        filter_args = {} if compiled.native is None else self._render(compiled.native)

        def fetch(limit: int) -> Steps[Candidates]:
            result = yield ClientCall.of(
                "searching",
                "search",
                self._collection,
                data=[query.tolist()],
                anns_field="vector",
                limit=limit,
                output_fields=_FIELDS,
                search_params={"metric_type": "COSINE", "params": self._search_params},
                consistency_level="Strong",
                **filter_args,
            )
            hits = result[0] if result else []
            rows = [hit["entity"] for hit in hits]
            return Candidates(rows, _matrix(rows), float(hits[-1]["distance"]) if hits else 0.0)

        return fetch

    def _scan(self, expr: Expr | None, fields: list[str] | None = None) -> Steps[list[Row]]:
        """Every entry matching ``expr``, paged by id."""
        rows: list[Row] = []
        last: str | None = None
        while True:
            parts: list[Any] = []
            if expr is not None:
                parts += ["(", *expr, ")"]
            if last is not None:
                parts += [" and " if parts else "", "id > ", Param(last)]
            page = yield ClientCall.of(
                "reading entries",
                "query",
                self._collection,
                output_fields=fields or _FIELDS,
                limit=_PAGE,
                consistency_level="Strong",
                **self._render(tuple(parts)),
            )
            rows += page
            if len(page) < _PAGE:
                return rows
            last = max(row["id"] for row in page)

    def _passes(self, condition: Filter, row: Row) -> bool:
        return matches(condition, self._metadata(row), lenient=not self._type_checks)

    def _vectors(self, rows: list[Row]) -> npt.NDArray[np.float32]:
        return _matrix(rows)

    def _seq(self, row: Row) -> int:
        return int(row["seq"])

    def _match(self, row: Row, score: float) -> EmbeddingMatch:
        vector = np.asarray(row["vector"], dtype=np.float32)
        return EmbeddingMatch(score, row["id"], Embedding(vector), self._segment(row))

    @staticmethod
    def _metadata(row: Row) -> dict[str, MetadataValue]:
        return decode_metadata(row.get("metadata"), row.get("kinds"), row.get("exact"))

    # ------------------------------------------------------------------ lookup by id

    def _rows_of(self, keys: list[str], embeddings: bool) -> Steps[list[Row]]:
        """The rows of ``keys``, a page of ids a query, read with Strong consistency (a get
        right after a write sees it); the vector column only when asked for."""
        fields = _FIELDS if embeddings else _ENTRY_FIELDS
        rows: list[Row] = []
        for start in range(0, len(keys), _PAGE):
            batch = tuple(keys[start : start + _PAGE])
            rows += yield ClientCall.of(
                f"reading {len(batch)} entries by id",
                "query",
                self._collection,
                output_fields=fields,
                consistency_level="Strong",
                **self._render(("id in ", Param(batch))),
            )
        return rows

    def _stored(self, row: Row) -> tuple[str, TextSegment | None]:
        return str(row["id"]), self._segment(row)

    def _segment(self, row: Row) -> TextSegment | None:
        if not row["has_text"]:
            return None
        return TextSegment(row["text"], Metadata(self._metadata(row)))

    # ------------------------------------------------------------------ removal

    def _keys(self, ids: list[str]) -> list[str]:
        return [id for id in dict.fromkeys(ids) if expressible(id)]

    def _key(self, row: Row) -> str:
        return str(row["id"])

    def _delete_where(self, native: Expr | None) -> Steps[None]:
        if native is None:
            yield ClientCall.of(
                "removing all entries", "delete", self._collection, filter='id != ""'
            )
        else:
            yield ClientCall.of(
                "removing entries by filter", "delete", self._collection, **self._render(native)
            )

    def _filter_expr(self, condition: Filter | None) -> Steps[Expr | Literal[False] | None]:
        """``condition`` as one exact expression (None: every entry, False: none), after
        the type check; what Milvus cannot state exactly becomes the matching ids."""
        if condition is None:
            return None
        compiled = yield from self._compile(condition)
        if compiled.empty or compiled.exact:
            return False if compiled.empty else compiled.native
        rows = yield from self._scan(compiled.native, ["id", *_KIND_FIELDS])
        ids = tuple(row["id"] for row in rows if self._passes(condition, row))
        return ("id in ", Param(ids)) if ids else False

    def _delete_keys(self, ids: list[str]) -> Steps[None]:
        for start in range(0, len(ids), self._batch_size):
            batch = tuple(ids[start : start + self._batch_size])
            yield ClientCall.of(
                f"removing {len(batch)} entries",
                "delete",
                self._collection,
                **self._render(("id in ", Param(batch))),
            )


def _matrix(rows: list[Row]) -> npt.NDArray[np.float32]:
    if not rows:
        return np.zeros((0, 0), dtype=np.float32)
    return np.asarray([row["vector"] for row in rows], dtype=np.float32)
