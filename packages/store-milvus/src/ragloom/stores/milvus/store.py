"""MilvusEmbeddingStore: the EmbeddingStore contract on Milvus (Lite, server or cluster).

Collection (created on first use with a ``COSINE`` index, or checked if it exists)::

    id        VARCHAR primary key   caller's id, or a generated UUID4 string
    seq       INT64                 insertion order (ties), kept when an id is replaced
    vector    FLOAT_VECTOR(dim)     the vector as added
    text      VARCHAR               the segment's text ("" without a segment)
    has_text  BOOL                  whether the entry has a segment
    metadata  JSON                  values to filter on   } see ``_metadata``
    kinds     JSON                  key -> stored kind    }
    exact     JSON                  ints beyond int64     }
    sparse    SPARSE_FLOAT_VECTOR   with ``full_text=True``: BM25 of ``text`` (a Milvus
                                    BM25 function; ``text`` then has an analyzer)

Search asks Milvus for the nearest candidates by cosine (a few more than asked for), then
rescores them in float64 from the stored vectors with core's ``exact_cosines`` and sorts by
(score, seq): the scores are the in-memory store's for the same vectors. If the candidates
could hide a tie at the cut, more are fetched. Filters compile to Milvus expressions
(``_filters``); a filter Milvus cannot state exactly is finished in Python.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt
from pymilvus import (  # type: ignore[import-untyped]
    AsyncMilvusClient,
    Collection,
    DataType,
    Function,
    FunctionType,
    MilvusClient,
    MilvusException,
)

from ragloom.core.aio import AsyncAddMixin, ClientCall, Steps, arun_steps, run_steps
from ragloom.core.bm25.analyzer import ENGLISH_STOPWORDS
from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding
from ragloom.core.errors import EmbeddingStoreError
from ragloom.core.filters import Filter
from ragloom.core.metadata import Metadata, MetadataValue
from ragloom.core.stores.base import (
    EmbeddingMatch,
    EmbeddingSearchRequest,
    EmbeddingSearchResult,
    EmbeddingStore,
)
from ragloom.core.stores.metadata_types import (
    BatchKinds,
    batch_kinds,
    check_held_row,
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
from ragloom.stores.milvus import _lite
from ragloom.stores.milvus._columns import Columns
from ragloom.stores.milvus._expr import (
    Expr,
    Param,
    expressible,
    key_expressible,
    path,
    render_literal,
    render_template,
)
from ragloom.stores.milvus._filters import CompiledFilter, Cond, _cmp, _or, compile_filter, matches
from ragloom.stores.milvus._metadata import (
    ALL_STORED_KINDS,
    KINDS_OF,
    decode_metadata,
    encode_metadata,
)
from ragloom.stores.milvus._registry import KindRegistry

__all__ = ["MilvusEmbeddingStore"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")
_MAX_VARCHAR = 65535  # bytes, Milvus's limit
_MAX_DIMENSION = 32768
_TOP_K_LIMIT = 16384  # Milvus: limit (+ offset) of one search or query
_PAGE = 1000
_FIELDS = ["id", "seq", "vector", "text", "has_text", "metadata", "kinds", "exact"]
_SCHEMA = {
    "id": DataType.VARCHAR,
    "seq": DataType.INT64,
    "vector": DataType.FLOAT_VECTOR,
    "text": DataType.VARCHAR,
    "has_text": DataType.BOOL,
    "metadata": DataType.JSON,
    "kinds": DataType.JSON,
    "exact": DataType.JSON,
}
SPARSE_FIELD = "sparse"
DEFAULT_ANALYZER: dict[str, Any] = {
    "tokenizer": "standard",
    "filter": [
        "lowercase",
        {"type": "stop", "stop_words": sorted(ENGLISH_STOPWORDS)},
        {"type": "stemmer", "language": "english"},
    ],
}
"""Milvus analyzer settings close to core's StandardAnalyzer: lowercase, the Snowball
English stopwords, English Snowball stemming (the best measured in docs/evaluation.md)."""
_SETTLE_ATTEMPTS = 8
_TIE_MARGIN = 1e-5  # float32 cosine error of the server's scores, generously

T = TypeVar("T")
Row = dict[str, Any]


class _Batch(NamedTuple):
    """A validated ``add_all`` batch, ready to write."""

    ids: list[str]
    columns: Columns
    kinds: BatchKinds
    generated: bool  # ids generated here (new UUID4s: nothing to replace)
    dimension: int


def _positive_int(value: object, what: str, upper: int | None = None) -> int:
    if type(value) is not int or value < 1 or (upper is not None and value > upper):
        limit = f" <= {upper}" if upper is not None else ""
        raise EmbeddingStoreError(f"{what} must be an int >= 1{limit}, got {value!r}")
    return value


def _optional_str(value: object, what: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise EmbeddingStoreError(f"{what} must be a str, got {type(value).__name__}")
    return value


def _check_id(id: str) -> None:
    if not expressible(id) or len(id.encode("utf-8")) > _MAX_VARCHAR:
        raise EmbeddingStoreError(
            f"id {id!r} cannot be stored in Milvus: ids must be valid Unicode without control "
            f"characters (U+0000-U+001F, U+007F), at most {_MAX_VARCHAR} bytes in UTF-8"
        )


class MilvusEmbeddingStore(EmbeddingStore, AsyncAddMixin):
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

    Async: ``asearch``, ``aadd_all``, ``aadd`` and ``aremove_all`` run the same operations
    on a pymilvus ``AsyncMilvusClient``: with ``uri``, the store opens one per event loop
    (on its first async call there; close it with ``await store.aclose()`` or
    ``async with``); with ``client``, pass ``async_client`` for the same Milvus, or the
    async methods run each client call in a worker thread. At most ``async_concurrency``
    calls are in flight per event loop (Milvus Lite 2.5.1 drops requests beyond about 160
    concurrent ones on a connection); the others wait their turn.
    """

    def __init__(
        self,
        uri: str | None = None,
        collection_name: str = "ragloom_embeddings",
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
    ) -> None:
        if (uri is None) == (client is None):
            raise EmbeddingStoreError("give either uri (a Milvus URI or a .db path) or client")
        if not isinstance(collection_name, str) or not _NAME.fullmatch(collection_name):
            raise EmbeddingStoreError(
                f"collection_name must match [A-Za-z_][A-Za-z0-9_]* (at most 255 characters), "
                f"got {collection_name!r}"
            )
        if dimension is not None:
            _positive_int(dimension, "dimension", _MAX_DIMENSION)
        self._declared = metadata_schema_kinds(metadata_schema)
        if not isinstance(index_type, str) or not index_type:
            raise EmbeddingStoreError(f"index_type must be a non-empty str, got {index_type!r}")
        for name, params in (
            ("index_params", index_params),
            ("search_params", search_params),
            ("analyzer_params", analyzer_params),
        ):
            if params is not None and not isinstance(params, dict):
                raise EmbeddingStoreError(f"{name} must be a dict, got {type(params).__name__}")
        if expression_templates is not None and not isinstance(expression_templates, bool):
            raise EmbeddingStoreError(
                f"expression_templates must be a bool or None, got {expression_templates!r}"
            )
        if not isinstance(type_checks, bool):
            raise EmbeddingStoreError(f"type_checks must be a bool, got {type_checks!r}")
        if not isinstance(full_text, bool):
            raise EmbeddingStoreError(f"full_text must be a bool, got {full_text!r}")
        self._type_checks = type_checks
        self._full_text = full_text
        self._analyzer_params = analyzer_params
        self._batch_size = _positive_int(batch_size, "batch_size")
        self._timeout = _positive_int(timeout, "timeout")
        self._collection = collection_name
        self._index_type = index_type
        self._index_params = dict(index_params or {})
        self._search_params = dict(search_params or {})
        self._lock = threading.Lock()
        self._last_seq = 0
        self._connect_kwargs: dict[str, Any] | None = None  # for the async client (uri)
        self._orm: Collection | None = None
        self._async_client: AsyncMilvusClient | None = None
        self._async_loop: asyncio.AbstractEventLoop | None = None
        self._owns_async = False
        self._async_concurrency = _positive_int(async_concurrency, "async_concurrency")
        self._async_slots: asyncio.Semaphore | None = None
        self._lite_lease: str | None = None  # see _lite: the Milvus Lite server's lease
        if async_client is not None:
            if client is None:
                raise EmbeddingStoreError("async_client goes with client, not with uri")
            if not isinstance(async_client, AsyncMilvusClient):
                raise EmbeddingStoreError(
                    "async_client must be a pymilvus.AsyncMilvusClient, "
                    f"got {type(async_client).__name__}"
                )
            self._async_client = async_client
        if client is not None:
            if not isinstance(client, MilvusClient):
                raise EmbeddingStoreError(
                    f"client must be a pymilvus.MilvusClient, got {type(client).__name__}"
                )
            if token is not None or db_name is not None:
                raise EmbeddingStoreError("token and db_name go with uri, not with client")
            self._client, self._owns_client = client, False
            self._uri = "<client>"
            templates = bool(expression_templates)  # a given client may be Milvus Lite
        else:
            self._uri = self._check_uri(uri)
            kwargs: dict[str, Any] = {"uri": self._uri, "timeout": self._timeout}
            if _optional_str(token, "token"):
                kwargs["token"] = token
            if _optional_str(db_name, "db_name"):
                kwargs["db_name"] = db_name
            lite = self._uri.endswith(".db")
            templates = (not lite) if expression_templates is None else expression_templates
            self._lite_lease = _lite.acquire(self._uri) if lite else None
            try:
                # Its own connection alias: pymilvus shares one connection per URI otherwise,
                # and closing this store would close it under every other client of the URI.
                self._client = self._call(
                    f"connecting to Milvus at {self._uri}",
                    MilvusClient,
                    alias=f"ragloom-{uuid.uuid4().hex}",
                    **kwargs,
                )
            except BaseException:
                self._release_lite()
                raise
            self._owns_client = True
            self._connect_kwargs = kwargs
        self._templates = templates
        self._registry = KindRegistry(self._client, self._collection, self._call, self._render)
        self._registered = False  # whether the collection has a kinds registry
        try:
            self._dimension: int | None = self._open(dimension)
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _check_uri(uri: object) -> str:
        if not isinstance(uri, str) or not uri.strip():
            raise EmbeddingStoreError(f"uri must be a non-empty str, got {uri!r}")
        if not (uri.endswith(".db") or re.match(r"(https?|tcp|unix)://", uri)):
            raise EmbeddingStoreError(
                f"uri {uri!r} is neither a local Milvus Lite file (ending in .db) nor a "
                "Milvus server address (http://, https://, tcp:// or unix://)"
            )
        return uri

    # ------------------------------------------------------------------ properties

    @property
    def dimension(self) -> int | None:
        """The vector dimension (None until the collection exists)."""
        return self._dimension

    @property
    def collection_name(self) -> str:
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
            f"MilvusEmbeddingStore(uri={self._uri!r}, collection_name={self._collection!r}, "
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
            with contextlib.suppress(MilvusException):
                await client.close()

    def __enter__(self) -> MilvusEmbeddingStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> MilvusEmbeddingStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ server calls

    def _error(self, what: str, exc: Exception) -> EmbeddingStoreError:
        """A client error as EmbeddingStoreError naming the collection and the call."""
        if isinstance(exc, EmbeddingStoreError):
            return exc
        message = exc.message if isinstance(exc, MilvusException) else str(exc)
        return EmbeddingStoreError(
            f"Milvus collection {self._collection!r}: {what} failed: {message}"
        )

    def _call(self, what: str, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``method(*args, **kwargs)`` with the timeout; client errors as EmbeddingStoreError."""
        if method not in (MilvusClient, AsyncMilvusClient, Collection):
            kwargs.setdefault("timeout", self._timeout)
        try:
            return method(*args, **kwargs)
        except Exception as exc:  # Milvus, grpc and connection errors of the client
            error = self._error(what, exc)
            if error is exc:
                raise
            raise error from exc

    def _perform(self, step: ClientCall) -> Any:
        """One step of an operation on the sync client (a batch of new entries goes in
        one columnar insert)."""
        if step.method == "insert":
            columns: Columns = step.args[1]
            return self._call(step.what, self._orm_collection().insert, columns.values())
        args = _with_rows(step.args)
        return self._call(step.what, getattr(self._client, step.method), *args, **step.kwargs)

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

    def _run(self, steps: Steps[T]) -> T:
        """An operation on the sync client."""
        return run_steps(steps, self._perform)

    async def _arun(self, steps: Steps[T]) -> T:
        """An operation on this event loop's async client (each call in a worker thread
        when the store has none: a given sync ``client`` without ``async_client``)."""
        client = self._current_async_client()
        if client is None:
            return await arun_steps(steps, lambda step: asyncio.to_thread(self._perform, step))
        slots = self._async_slots
        assert slots is not None

        async def perform(step: ClientCall) -> Any:
            try:
                async with slots:
                    return await getattr(client, step.method)(
                        *_with_rows(step.args), **{"timeout": self._timeout, **step.kwargs}
                    )
            except Exception as exc:
                error = self._error(step.what, exc)
                if error is exc:
                    raise
                raise error from exc

        return await arun_steps(steps, perform)

    def _current_async_client(self) -> AsyncMilvusClient | None:
        """The async client of the running loop, opened on first use (with ``uri``): a
        pymilvus async connection belongs to the loop it was opened in."""
        loop = asyncio.get_running_loop()
        if self._async_loop is not loop:
            self._async_slots = asyncio.Semaphore(self._async_concurrency)
        if self._connect_kwargs is None:
            self._async_loop = loop
            return self._async_client  # given with ``client``, or None
        if self._async_client is None or self._async_loop is not loop:
            # Its own alias too: a connection opened in another loop cannot serve here.
            self._async_client = self._call(
                f"connecting to Milvus at {self._uri} (async)",
                AsyncMilvusClient,
                alias=f"ragloom-async-{uuid.uuid4().hex}",
                **self._connect_kwargs,
            )
            self._async_loop, self._owns_async = loop, True
        return self._async_client

    def _render(self, expr: Expr) -> dict[str, Any]:
        """The ``filter`` (and ``filter_params``) arguments of an expression."""
        if self._templates:
            text, params = render_template(expr)
            return {"filter": text, "filter_params": params} if params else {"filter": text}
        return {"filter": render_literal(expr)}

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
        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=_MAX_VARCHAR)
        schema.add_field("seq", DataType.INT64)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dimension)
        analyzer: dict[str, Any] = {}
        if self._full_text:
            analyzer["enable_analyzer"] = True
            analyzer["analyzer_params"] = self._analyzer_params or DEFAULT_ANALYZER
        schema.add_field("text", DataType.VARCHAR, max_length=_MAX_VARCHAR, **analyzer)
        schema.add_field("has_text", DataType.BOOL)
        schema.add_field("metadata", DataType.JSON)
        schema.add_field("kinds", DataType.JSON)
        schema.add_field("exact", DataType.JSON)
        index = self._client.prepare_index_params()
        index.add_index(
            "vector", index_type=self._index_type, metric_type="COSINE", params=self._index_params
        )
        if self._full_text:
            schema.add_field(SPARSE_FIELD, DataType.SPARSE_FLOAT_VECTOR)
            schema.add_function(
                Function(
                    name="text_bm25",
                    function_type=FunctionType.BM25,
                    input_field_names=["text"],
                    output_field_names=[SPARSE_FIELD],
                )
            )
            index.add_index(SPARSE_FIELD, index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
        try:
            self._call(
                f"creating the collection (dimension {dimension})",
                self._client.create_collection,
                self._collection,
                schema=schema,
                index_params=index,
                consistency_level="Strong",
            )
        except EmbeddingStoreError:
            # Another store created it at the same time: use it if it fits.
            if not self._client.has_collection(self._collection, timeout=self._timeout):
                raise
            self._check_collection(dimension)

    def _check_collection(self, dimension: int | None) -> int:
        info = self._call(
            "describing the collection", self._client.describe_collection, self._collection
        )
        fields = {f["name"]: f for f in info.get("fields", [])}
        wrong = [
            name
            for name, kind in _SCHEMA.items()
            if name not in fields or fields[name].get("type") != kind
        ]
        if wrong or not fields["id"].get("is_primary"):
            raise EmbeddingStoreError(
                f"Milvus collection {self._collection!r} exists but is not a ragloom collection "
                f"(missing or mistyped fields: {', '.join(wrong) or 'id primary key'}); "
                "use another collection_name"
            )
        sparse = fields.get(SPARSE_FIELD, {})
        has_bm25 = sparse.get("type") == DataType.SPARSE_FLOAT_VECTOR and bool(
            sparse.get("is_function_output")
        )
        if self._full_text and not has_bm25:
            raise EmbeddingStoreError(
                f"Milvus collection {self._collection!r} was created without the BM25 function "
                f"(no {SPARSE_FIELD!r} field computed from 'text'), so it has no keyword index "
                "for hybrid search; Milvus cannot add one to an existing collection: use a new "
                "collection_name with full_text=True and add the segments again"
            )
        self._full_text = has_bm25
        stored = int(fields["vector"].get("params", {}).get("dim", 0))
        if dimension is not None and dimension != stored:
            raise EmbeddingStoreError(
                f"Milvus collection {self._collection!r} has dimension {stored}, "
                f"but the store was given dimension {dimension}"
            )
        return stored

    # ------------------------------------------------------------------ writes

    def add_all(
        self,
        embeddings: Sequence[Embedding] | npt.NDArray[np.floating[Any]],
        segments: Sequence[TextSegment] | None = None,
        *,
        ids: Sequence[str] | None = None,
    ) -> list[str]:
        """Add (or replace, by id) a batch; everything is checked before anything is written.

        Written in batches of ``batch_size`` rows; a server failure in the middle of a large
        call can leave the earlier batches written (Milvus has no multi-batch transaction).
        """
        batch = self._prepare(embeddings, segments, ids)
        if batch is None:
            return []
        self._ensure_collection(batch.dimension)
        self._run(self._write(batch))
        return batch.ids

    async def aadd_all(
        self,
        embeddings: Sequence[Embedding] | npt.NDArray[np.floating[Any]],
        segments: Sequence[TextSegment] | None = None,
        *,
        ids: Sequence[str] | None = None,
    ) -> list[str]:
        """:meth:`add_all` on the async client (same checks, same writes)."""
        batch = self._prepare(embeddings, segments, ids)
        if batch is None:
            return []
        if self._dimension is None:  # creating the collection: sync-only client calls
            await asyncio.to_thread(self._ensure_collection, batch.dimension)
        await self._arun(self._write(batch))
        return batch.ids

    def _prepare(
        self,
        embeddings: Sequence[Embedding] | npt.NDArray[np.floating[Any]],
        segments: Sequence[TextSegment] | None,
        ids: Sequence[str] | None,
    ) -> _Batch | None:
        """The checked rows of an ``add_all`` call (None: nothing to add)."""
        count = len(embeddings)
        texts, metadata = split_segments(segments, count)
        id_list = generate_ids(count) if ids is None else validate_ids(ids, count)
        if count == 0:
            return None
        vectors = validate_embeddings(embeddings, self._dimension)
        for id in id_list:
            _check_id(id)
        columns = self._columns(id_list, vectors, texts, metadata)
        kinds = batch_kinds(metadata, self._declared)
        return _Batch(id_list, columns, kinds, ids is None, int(vectors.shape[1]))

    def _ensure_collection(self, dimension: int) -> None:
        """Create the collection on the first write (or adopt one made meanwhile)."""
        with self._lock:
            if self._dimension is None:
                if not self._client.has_collection(self._collection, timeout=self._timeout):
                    self._create(dimension)
                    self._dimension = dimension
                else:
                    self._registered = self._registry.exists()
                    self._dimension = self._check_collection(dimension)

    def _write(self, batch: _Batch) -> Steps[None]:
        columns = batch.columns
        yield from self._check_kinds(batch.kinds)
        if self._registered:
            yield from self._registry.register(columns.kinds)
        for start in range(0, len(columns), self._batch_size):
            chunk = columns.take(slice(start, start + self._batch_size))
            if batch.generated:  # new UUID4s: nothing to replace or keep
                yield ClientCall.of(
                    f"writing {len(chunk)} entries", "insert", self._collection, chunk
                )
                continue
            # An insert costs a third of an upsert at 100k entries (an upsert deletes by
            # primary key first): only the ids already stored are upserted.
            existing = yield from self._keep_positions(chunk)
            if existing:
                positions = range(len(chunk))
                replaced = chunk.take([i for i in positions if chunk.ids[i] in existing])
                yield ClientCall.of(
                    f"replacing {len(replaced)} entries", "upsert", self._collection, replaced
                )
                new = chunk.take([i for i in positions if chunk.ids[i] not in existing])
            else:
                new = chunk
            if len(new):
                yield ClientCall.of(f"writing {len(new)} entries", "insert", self._collection, new)
            yield from self._settle(chunk)

    def _check_kinds(self, kinds: BatchKinds) -> Steps[None]:
        """Refuse the batch if the collection holds one of its keys with another type (core's
        ``metadata_types``). The kinds registry answers first (it may over-report, never
        under-report); only if it names a clash, one query on the ``kinds`` field decides
        (a scan for keys an expression cannot name)."""
        incompatible = {
            key: sorted(set(ALL_STORED_KINDS) - set(KINDS_OF[kind]))
            for key, (kind, _) in kinds.items()
        }
        if not kinds:
            return
        if self._registered and not (yield from self._registry.may_hold(incompatible)):
            return
        checks = [
            _cmp(path("kinds", key), "in", tuple(incompatible[key]))
            for key in kinds
            if key_expressible(key)
        ]
        found: list[Row] = []
        probe = _or(checks).expr if checks else None
        if probe is not None:
            found = yield ClientCall.of(
                "checking metadata types",
                "query",
                self._collection,
                output_fields=["metadata", "kinds", "exact"],
                limit=1,
                consistency_level="Strong",
                **self._render(probe),
            )
        if len(checks) < len(kinds):
            found += yield from self._scan(None, ["metadata", "kinds", "exact"])
        for row in found:
            check_held_row(kinds, self._metadata(row))

    def _settle(self, rows: Columns) -> Steps[None]:
        """Make each id of ``rows`` (just written) one row. Another writer may have written
        one of these ids meanwhile, and Milvus then keeps both rows (two inserts, and even
        two upserts racing in Milvus Lite), so the ids are counted after the write and a
        duplicate is healed with an upsert of the batch (which deletes every row of those
        ids first), counted again. Of racing writers, the last to write counts after every
        write, so the collection ends with one row per id."""
        ids = ("id in ", Param(tuple(rows.ids)))
        for _ in range(_SETTLE_ATTEMPTS):
            counted = yield ClientCall.of(
                "checking for concurrently written ids",
                "query",
                self._collection,
                output_fields=["count(*)"],
                consistency_level="Strong",
                **self._render(ids),
            )
            if int(counted[0]["count(*)"]) <= len(rows):
                return
            yield ClientCall.of(f"rewriting {len(rows)} entries", "upsert", self._collection, rows)
        raise EmbeddingStoreError(
            f"Milvus collection {self._collection!r}: {len(rows)} entries still have "
            f"duplicate rows after {_SETTLE_ATTEMPTS} rewrites (other writers keep writing "
            "the same ids); add the batch again"
        )

    def _columns(
        self,
        ids: list[str],
        vectors: npt.NDArray[np.float32],
        texts: list[str | None],
        metadata: list[dict[str, MetadataValue]] | None,
    ) -> Columns:
        for position, text in enumerate(texts):
            if text is not None and not (text.isascii() and len(text) <= _MAX_VARCHAR):
                id = ids[position]
                try:
                    size = len(text.encode("utf-8"))
                except UnicodeEncodeError as exc:
                    raise EmbeddingStoreError(
                        f"entry {id!r}: text is not valid Unicode ({exc})"
                    ) from exc
                if size > _MAX_VARCHAR:
                    raise EmbeddingStoreError(
                        f"entry {id!r}: text of {size} bytes exceeds Milvus's VARCHAR limit "
                        f"of {_MAX_VARCHAR} bytes; split the document into smaller segments"
                    )
        encoded = [encode_metadata(entry) for entry in metadata] if metadata else []
        empty: dict[str, Any] = {}
        first = self._next_seqs(len(ids))
        return Columns(
            ids=ids,
            seqs=list(range(first, first + len(ids))),
            vectors=vectors.tolist(),
            texts=[text or "" for text in texts],
            has_text=[text is not None for text in texts],
            metadata=[values for values, _, _ in encoded] or [empty] * len(ids),
            kinds=[kinds for _, kinds, _ in encoded] or [empty] * len(ids),
            exact=[exact for _, _, exact in encoded] or [empty] * len(ids),
        )

    def _next_seqs(self, count: int) -> int:
        """The first of ``count`` increasing sequence numbers (nanosecond clock, so stores
        in other processes writing the same collection interleave in time order)."""
        with self._lock:
            start = max(time.time_ns(), self._last_seq + 1)
            self._last_seq = start + count - 1
        return start

    def _keep_positions(self, batch: Columns) -> Steps[set[str]]:
        """Replaced ids keep their insertion position (their old ``seq``), as in memory;
        the ids of ``batch`` already stored."""
        found = yield ClientCall.of(
            "reading existing ids",
            "query",
            self._collection,
            output_fields=["id", "seq"],
            consistency_level="Strong",
            **self._render(("id in ", Param(tuple(batch.ids)))),
        )
        old = {row["id"]: row["seq"] for row in found}
        if old:
            batch.seqs = [old.get(id, seq) for id, seq in zip(batch.ids, batch.seqs, strict=True)]
        return set(old)

    # ------------------------------------------------------------------ search

    def search(self, request: EmbeddingSearchRequest) -> EmbeddingSearchResult:
        """The best ``max_results`` entries passing the filter, scored ``(cos + 1) / 2``."""
        return self._run(self._search(request))

    async def asearch(self, request: EmbeddingSearchRequest) -> EmbeddingSearchResult:
        """:meth:`search` on the async client."""
        return await self._arun(self._search(request))

    def _search(self, request: EmbeddingSearchRequest) -> Steps[EmbeddingSearchResult]:
        if not isinstance(request, EmbeddingSearchRequest):
            raise EmbeddingStoreError(
                f"search takes an EmbeddingSearchRequest, got {type(request).__name__}"
            )
        query = request.query_embedding.vector
        if self._dimension is not None and query.shape[0] != self._dimension:
            raise EmbeddingStoreError(
                f"query embedding dimension {query.shape[0]} does not match the store's "
                f"{self._dimension}"
            )
        compiled = None if request.filter is None else (yield from self._compiled(request.filter))
        if self._dimension is None:
            return EmbeddingSearchResult([])
        condition = Cond(None) if compiled is None else compiled.condition
        if condition.expr is None and not condition.value:
            return EmbeddingSearchResult([])
        k = request.max_results
        if condition.exact and k <= _TOP_K_LIMIT // 4 and np.any(query != 0):
            rows = yield from self._nearest(query, k, condition.expr)
        else:  # a filter finished in Python, a zero query (all ties), or a huge k
            rows = yield from self._scan(condition.expr)
            if request.filter is not None and not condition.exact:
                lenient = not self._type_checks
                rows = [
                    row
                    for row in rows
                    if matches(request.filter, self._metadata(row), lenient=lenient)
                ]
        return EmbeddingSearchResult(self._best(rows, query, k, request.min_score))

    def _compiled(self, condition: Filter) -> Steps[CompiledFilter]:
        compiled = compile_filter(check_filter(condition), lenient=not self._type_checks)
        if self._dimension is None or not self._type_checks:
            return compiled
        if self._registered and not (yield from self._registry.may_hold(compiled.incompatible)):
            return compiled  # no clashing kind was ever written under these keys
        if compiled.probe is not None:
            found = yield ClientCall.of(
                "checking filter value types",
                "query",
                self._collection,
                output_fields=["metadata", "kinds", "exact"],
                limit=1,
                consistency_level="Strong",
                **self._render(compiled.probe),
            )
            for row in found:
                condition.test(self._metadata(row))  # raises core's InvalidFilterError
        if not compiled.probe_complete:
            # A key no expression can name: check every entry's kinds in Python.
            for row in (yield from self._scan(None, ["metadata", "kinds", "exact"])):
                condition.test(self._metadata(row))
        return compiled

    def _nearest(
        self, query: npt.NDArray[np.float32], k: int, expr: Expr | None
    ) -> Steps[list[Row]]:
        """Candidates from the server's index: enough that none left out could tie or beat
        the k-th after exact rescoring."""
        limit = min(_TOP_K_LIMIT, k + max(8, k // 4))
        filter_args = {} if expr is None else self._render(expr)
        while True:
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
            if len(rows) < limit or limit >= _TOP_K_LIMIT:
                return rows
            cosines = exact_cosines(_matrix(rows), query)
            kth = np.sort(cosines)[::-1][k - 1]
            lowest_returned = float(hits[-1]["distance"])
            if kth > lowest_returned + _TIE_MARGIN:
                return rows
            limit = min(_TOP_K_LIMIT, limit * 4)

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

    def _best(
        self, rows: list[Row], query: npt.NDArray[np.float32], k: int, min_score: float
    ) -> list[EmbeddingMatch]:
        if not rows:
            return []
        matrix = _matrix(rows)
        scores = relevance_score(exact_cosines(matrix, query))
        order = sorted(range(len(rows)), key=lambda i: (-scores[i], rows[i]["seq"]))[:k]
        matches: list[EmbeddingMatch] = []
        for i in order:
            if scores[i] < min_score:
                break
            row = rows[i]
            segment = (
                TextSegment(row["text"], Metadata(self._metadata(row))) if row["has_text"] else None
            )
            matches.append(
                EmbeddingMatch(float(scores[i]), row["id"], Embedding(matrix[i]), segment)
            )
        return matches

    @staticmethod
    def _metadata(row: Row) -> dict[str, MetadataValue]:
        return decode_metadata(row.get("metadata"), row.get("kinds"), row.get("exact"))

    # ------------------------------------------------------------------ removal

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
            id_list = [
                id for id in dict.fromkeys(validate_ids(ids, unique=False)) if expressible(id)
            ]
            if self._dimension is not None:
                yield from self._delete_ids(id_list)
            return
        compiled = None if filter is None else (yield from self._compiled(filter))
        if self._dimension is None:
            return
        if compiled is None:
            yield ClientCall.of(
                "removing all entries", "delete", self._collection, filter='id != ""'
            )
            return
        condition = compiled.condition
        if condition.expr is None and not condition.value:
            return
        if condition.exact and condition.expr is not None:
            yield ClientCall.of(
                "removing entries by filter",
                "delete",
                self._collection,
                **self._render(condition.expr),
            )
            return
        assert filter is not None
        yield from self._delete_ids((yield from self._matching_ids(condition.expr, filter)))

    def _matching_ids(self, superset: Expr | None, condition: Filter) -> Steps[list[str]]:
        """The ids of the entries in ``superset`` that pass ``condition`` (checked here)."""
        lenient = not self._type_checks
        rows = yield from self._scan(superset, ["id", "metadata", "kinds", "exact"])
        return [
            row["id"] for row in rows if matches(condition, self._metadata(row), lenient=lenient)
        ]

    def _filter_expr(self, condition: Filter | None) -> Steps[Expr | Literal[False] | None]:
        """``condition`` as one exact expression (None: every entry, False: none), after
        the type check; what Milvus cannot state exactly becomes the matching ids."""
        if condition is None:
            return None
        compiled = (yield from self._compiled(condition)).condition
        if compiled.expr is None and not compiled.value:
            return False
        if compiled.exact:
            return compiled.expr
        ids = tuple((yield from self._matching_ids(compiled.expr, condition)))
        return ("id in ", Param(ids)) if ids else False

    def _delete_ids(self, ids: list[str]) -> Steps[None]:
        for start in range(0, len(ids), self._batch_size):
            batch = tuple(ids[start : start + self._batch_size])
            yield ClientCall.of(
                f"removing {len(batch)} entries",
                "delete",
                self._collection,
                **self._render(("id in ", Param(batch))),
            )


def _with_rows(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """Call arguments with a batch of columns turned into rows."""
    return tuple(arg.rows() if isinstance(arg, Columns) else arg for arg in args)


def _matrix(rows: list[Row]) -> npt.NDArray[np.float32]:
    return np.asarray([row["vector"] for row in rows], dtype=np.float32).reshape(len(rows), -1)
