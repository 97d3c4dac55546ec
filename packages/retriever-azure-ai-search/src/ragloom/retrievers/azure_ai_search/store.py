"""AzureAiSearchEmbeddingStore: a ragloom EmbeddingStore on an Azure AI Search index.

The index (created when missing) has a fixed schema, so that any ragloom metadata fits:

- ``id``: the key, the ragloom id in URL-safe base64 (Azure keys allow only letters,
  digits, ``_``, ``-`` and ``=``); ``content``: the segment text (searchable; null when
  the entry has no segment); ``content_vector``: ``Collection(Edm.Single)`` of the
  store's dimension with an HNSW cosine profile;
- ``metadata``: a collection of complex ``{key, type, s, n, i, b, u}``, one per metadata
  entry, the value in the field of its type (``n`` holds every number as a double for
  comparisons, ``i`` an int exactly, ``u`` a UUID), so values come back with their type
  and filters compare like ragloom's (:class:`MetadataFilterCompiler`).

Scores: Azure's cosine ``@search.score`` is ``1 / (2 - cos)``; it is turned back into
``cos`` and then into ragloom's ``(cos + 1) / 2``. ``min_score`` is applied to the top
``max_results`` Azure returns (the best ones, so nothing better is lost).

Clients: the store's own clients send through core's bounded HTTP client
(:mod:`~ragloom.retrievers.azure_ai_search.transport`): each client call (a search with
its pages, a batch, the index definition) ends within ``timeout`` seconds, retries
included, and no answer body may pass ``max_response_bytes``. Its async methods run on
``azure.search.documents.aio`` clients, one pair per event loop (the remote-store base's
``_arun``), the same steps as the sync path; ``aclose`` closes them.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from azure.core.credentials import AzureKeyCredential
from azure.core.exceptions import AzureError, ResourceNotFoundError
from azure.search.documents import SearchClient
from azure.search.documents.aio import SearchClient as AsyncSearchClient
from azure.search.documents.indexes import SearchIndexClient
from azure.search.documents.indexes.models import (
    ComplexField,
    HnswAlgorithmConfiguration,
    HnswParameters,
    SearchableField,
    SearchField,
    SearchFieldDataType,
    SearchIndex,
    SimpleField,
    VectorSearch,
    VectorSearchProfile,
)
from azure.search.documents.models import VectorizedQuery

from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding
from ragloom.core.errors import EmbeddingStoreError
from ragloom.core.filter_values import BOOL, NUMBER, STR, FilterValue, value_kind
from ragloom.core.filters import (
    Filter,
    IsEqualTo,
    IsIn,
    IsNotEqualTo,
    IsNotIn,
)
from ragloom.core.kit.http import DEFAULT_MAX_RESPONSE_BYTES
from ragloom.core.kit.metadata_codec import KIND_LETTERS
from ragloom.core.kit.remote_store import (
    Candidates,
    Compiled,
    Matrix,
    NewEntries,
    RemoteEmbeddingStore,
    positive_int,
)
from ragloom.core.kit.steps import ClientCall, Steps
from ragloom.core.metadata import MetadataValue
from ragloom.core.stores.base import EmbeddingMatch
from ragloom.retrievers.azure_ai_search.odata import (
    ODATA_ORDERINGS,
    ODataFilterCompiler,
    odata_literal,
)
from ragloom.retrievers.azure_ai_search.retriever import cosine_from_azure
from ragloom.retrievers.azure_ai_search.transport import DEFAULT_TIMEOUT, Bounds, has_async_form

__all__ = ["AzureAiSearchEmbeddingStore", "MetadataFilterCompiler"]

_PROFILE = "ragloom-vector-profile"
_ALGORITHM = "ragloom-hnsw"
_MAX_KEY = 1024  # Azure's limit on a document key, in bytes
_SELECT = ["id", "content", "content_vector", "metadata"]
_TYPED_FIELDS = ("s", "n", "i", "b", "u")
_MAX_BATCH = 1000  # documents in one index request, Azure's limit
_PAGE = 1000  # documents in one search answer (top), Azure's limit


def _key(embedding_id: str) -> str:
    return base64.urlsafe_b64encode(embedding_id.encode()).decode("ascii")


def _id(key: str) -> str:
    """The ragloom id of a key (a key the store did not write is its own id)."""
    try:
        return base64.urlsafe_b64decode(key.encode("ascii")).decode()
    except (ValueError, UnicodeError):  # binascii.Error is a ValueError
        return key


#: The typed field an entry of each metadata kind sets (ints set ``n`` too): the kit's
#: metadata-codec letters.
_FIELD_OF_KIND = KIND_LETTERS


def _encode_value(key: str, value: MetadataValue) -> dict[str, Any]:
    """One metadata entry as an element of the ``metadata`` collection."""
    element: dict[str, Any] = dict.fromkeys(_TYPED_FIELDS)
    element["key"] = key
    if isinstance(value, bool):
        element.update(type="bool", b=value)
    elif isinstance(value, int):
        element.update(type="int", i=value, n=float(value))
    elif isinstance(value, float):
        element.update(type="float", n=value)
    elif isinstance(value, uuid.UUID):
        element.update(type="uuid", u=str(value))
    else:
        element.update(type="str", s=str(value))
    return element


def _decode_value(element: dict[str, Any]) -> MetadataValue:
    kind = element["type"]
    if kind == "bool":
        return bool(element["b"])
    if kind == "int":
        return int(element["i"])
    if kind == "float":
        return float(element["n"])
    if kind == "uuid":
        return uuid.UUID(element["u"])
    return str(element["s"])


class MetadataFilterCompiler(ODataFilterCompiler):
    """ragloom Filters -> OData over the store's ``metadata`` collection.

    ``key == v`` is ``metadata/any(m: m/key eq 'key' and m/<typed field> eq v)``: a value of
    another type is in another field, so it never matches (no error: Azure cannot check
    types). ``key != v`` also holds when the key is missing. A UUID matches a stored UUID
    or its canonical string. ``contains_string`` has no exact OData form (``search.ismatch``
    is analyzed full text) and is refused; ``and``/``or``/``not`` are the retriever's.
    """

    backend = "the Azure AI Search store"

    @staticmethod
    def _has(key: str, condition: str | None = None) -> str:
        body = f"m/key eq {odata_literal(key)}"
        return (
            f"metadata/any(m: {body} and {condition})" if condition else f"metadata/any(m: {body})"
        )

    @staticmethod
    def _field(value: FilterValue) -> str:
        kind = value_kind(value)
        return {STR: "m/s", NUMBER: "m/n", BOOL: "m/b"}.get(kind, "m/u")

    def _eq(self, value: FilterValue) -> str:
        literal = odata_literal(value)
        if isinstance(value, uuid.UUID):
            return f"(m/u eq {literal} or m/s eq {literal})"
        return f"{self._field(value)} eq {literal}"

    def _ne(self, value: FilterValue) -> str:
        literal = odata_literal(value)
        if isinstance(value, uuid.UUID):
            return f"((m/u ne null and m/u ne {literal}) or (m/s ne null and m/s ne {literal}))"
        field = self._field(value)
        return f"({field} ne null and {field} ne {literal})"

    def _none_of(self, key: str, conditions: list[str]) -> str:
        """True when ``key`` is missing or its (right-typed) value meets every condition."""
        return f"(not {self._has(key)} or {self._has(key, ' and '.join(conditions))})"

    def is_equal_to(self, filter: IsEqualTo) -> str:
        return self._has(filter.key, self._eq(filter.value))

    def is_not_equal_to(self, filter: IsNotEqualTo) -> str:
        return self._none_of(filter.key, [self._ne(filter.value)])

    def order(self, key: str, operator: str, value: FilterValue) -> str:
        condition = f"{self._field(value)} {ODATA_ORDERINGS[operator]} {odata_literal(value)}"
        return self._has(key, condition)

    def is_in(self, filter: IsIn) -> str:
        values = filter.values
        if value_kind(values[0]) == STR:
            return self._has(filter.key, _search_in(values))
        return self._has(filter.key, "(" + " or ".join(self._eq(v) for v in values) + ")")

    def is_not_in(self, filter: IsNotIn) -> str:
        values = filter.values
        if value_kind(values[0]) == STR:
            return self._none_of(filter.key, ["m/s ne null", f"not {_search_in(values)}"])
        return self._none_of(filter.key, [self._ne(v) for v in values])


def _search_in(values: Sequence[FilterValue]) -> str:
    """``search.in(m/s, '<values>', '<delimiter>')``, with a delimiter no value contains
    (exact string equality, cheaper than a chain of ``eq`` for long lists)."""
    texts = [str(v) for v in values]
    delimiter = next((d for d in ",|;~^#" if not any(d in t for t in texts)), None)
    if delimiter is None:
        return "(" + " or ".join(f"m/s eq {odata_literal(t)}" for t in texts) + ")"
    return f"search.in(m/s, {odata_literal(delimiter.join(texts))}, {odata_literal(delimiter)})"


def _sender(client: SearchClient | AsyncSearchClient, action: str) -> Any:
    """The client's method for a document batch of ``action`` (``upload``, ``delete``)."""
    return client.upload_documents if action == "upload" else client.delete_documents


class _Service:
    """The store's two Azure clients, each call answered in full (a search's pages read
    while the call is made, so its errors surface inside it): the ``_client`` the
    remote-store base drives with steps."""

    def __init__(self, search: SearchClient, indexes: SearchIndexClient) -> None:
        self.search_client = search
        self.indexes = indexes

    def search(self, **kwargs: Any) -> list[dict[str, Any]]:
        return list(self.search_client.search(**kwargs))

    def index(self, action: str, documents: list[dict[str, Any]]) -> list[Any]:
        return list(_sender(self.search_client, action)(documents))


class _AsyncService:
    """:class:`_Service`'s document calls on an ``azure.search.documents.aio`` client of
    one event loop, awaited (the index is read and created by the sync index client)."""

    def __init__(self, search: AsyncSearchClient) -> None:
        self.search_client = search

    async def search(self, **kwargs: Any) -> list[dict[str, Any]]:
        return [hit async for hit in await self.search_client.search(**kwargs)]

    async def index(self, action: str, documents: list[dict[str, Any]]) -> list[Any]:
        return list(await _sender(self.search_client, action)(documents))

    async def close(self) -> None:
        await self.search_client.close()


class AzureAiSearchEmbeddingStore(RemoteEmbeddingStore):
    """Stores embeddings in the index ``index_name`` at ``endpoint``.

    The index is created with the store's schema when it does not exist (``dimension``
    is then needed, here or from the first ``add_all``); an existing index must have
    that schema (its vector dimension is read from it). ``exhaustive=True`` makes
    searches exact (Azure's ``exhaustive`` vector query) instead of HNSW's approximate
    neighbours. Writes go in batches of ``batch_size`` documents (Azure takes at most
    1000 a request). On the remote-store base: Azure's ranking picks the ``k`` nearest
    (no insertion order to break ties), their scores are recomputed exactly.

    ``timeout`` (seconds) bounds each client call as a whole, retries and pages included;
    ``max_response_bytes`` caps each answer's body (the store's own clients; given
    ``search_client``/``index_client`` keep their transport, and the async methods then
    run them in worker threads, as they do with a credential that has no async form). At
    most ``async_concurrency`` async calls are in flight per event loop (None: no limit).
    """

    _label = "Azure AI Search index"
    _server_ranks = True

    def __init__(
        self,
        endpoint: str,
        index_name: str,
        credential: AzureKeyCredential | Any,
        *,
        dimension: int | None = None,
        exhaustive: bool = False,
        batch_size: int = 1000,
        search_client: SearchClient | None = None,
        index_client: SearchIndexClient | None = None,
        metadata_schema: Mapping[str, type] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        async_concurrency: int | None = None,
    ) -> None:
        if async_concurrency is not None:
            positive_int(async_concurrency, "async_concurrency")
        super().__init__(
            index_name, metadata_schema=metadata_schema, async_concurrency=async_concurrency
        )
        if dimension is not None:
            positive_int(dimension, "dimension")
        self.batch_size = positive_int(batch_size, "batch_size", _MAX_BATCH)
        self.index_name = index_name
        self.exhaustive = exhaustive
        self.bounds = Bounds(timeout, max_response_bytes)
        self._endpoint, self._credential = endpoint, credential
        self._own_search_client = search_client is None
        self._own_index_client = index_client is None
        self._client = _Service(
            search_client
            or SearchClient(endpoint, index_name, credential, transport=self.bounds.transport()),
            index_client
            or SearchIndexClient(endpoint, credential, transport=self.bounds.transport()),
        )
        self._dimension = self._existing_dimension()
        if self._dimension is None and dimension is not None:
            self._create_index(dimension)
        elif dimension is not None and dimension != self._dimension:
            raise EmbeddingStoreError(
                f"index {index_name!r} has vectors of dimension {self._dimension}, not {dimension}"
            )

    def close(self) -> None:
        """Close the clients the store created (given ones stay open)."""
        if self._own_search_client:
            self._client.search_client.close()
        if self._own_index_client:
            self._client.indexes.close()

    # ------------------------------------------------------------------ clients

    def _new_async_client(self) -> _AsyncService | None:
        """An async document client for the running loop, when the store made its own
        search client and its credential has an async form (a key, or an async token
        credential); else None (the base runs the sync client in a worker thread)."""
        if not (self._own_search_client and has_async_form(self._credential)):
            return None
        client = AsyncSearchClient(
            self._endpoint,
            self.index_name,
            self._credential,
            transport=self.bounds.async_transport(),
        )
        return _AsyncService(client)

    def _perform(self, step: ClientCall) -> Any:
        """One step on the sync client, within the store's ``timeout``."""
        with self.bounds.call():
            return super()._perform(step)

    async def _aperform(self, client: Any, step: ClientCall) -> Any:
        """One step on the async client, within the store's ``timeout`` (the transport's
        deadline; ``asyncio.timeout`` also ends a wait outside it)."""
        async with self.bounds.acall():
            return await super()._aperform(client, step)

    def _message(self, exc: Exception) -> str:
        return self.bounds.reason(exc)

    # ------------------------------------------------------------------ index

    def _existing_dimension(self) -> int | None:
        """The vector dimension of the existing index, or None when there is no index."""
        try:
            with self.bounds.call():
                index = self._client.indexes.get_index(self.index_name)
        except ResourceNotFoundError:
            return None
        except AzureError as exc:
            raise self._error("reading the index definition", exc) from exc
        fields = {field.name: field for field in index.fields or []}
        missing = [name for name in _SELECT if name not in fields]
        vector = fields.get("content_vector")
        if missing or vector is None or not vector.vector_search_dimensions:
            raise EmbeddingStoreError(
                f"index {self.index_name!r} exists without the store's schema "
                f"(missing {missing or ['content_vector dimensions']}); use another index"
            )
        return int(vector.vector_search_dimensions)

    def _create_index(self, dimension: int) -> None:
        what = f"creating the index (dimension {dimension})"
        with self.bounds.call():
            self._call(
                what,
                self._client.indexes.create_index,
                _index_definition(self.index_name, dimension),
            )
        self._dimension = dimension

    def _ensure_collection(self, dimension: int) -> None:
        if self._dimension is None:
            self._create_index(dimension)

    # ------------------------------------------------------------------ writing

    def _prepare(self, entries: NewEntries) -> list[dict[str, Any]]:
        """The batch as Azure documents; an id whose key Azure cannot hold is refused."""
        keys = [_key(i) for i in entries.ids]
        too_long = next(
            (i for i, k in zip(entries.ids, keys, strict=True) if len(k) > _MAX_KEY), None
        )
        if too_long is not None:
            raise EmbeddingStoreError(
                f"id {too_long[:40]!r}... is too long for an Azure AI Search key (base64 of "
                f"the id must fit {_MAX_KEY} bytes)"
            )
        metadata = entries.metadata
        return [
            {
                "id": key,
                "content": text,
                "content_vector": vector,
                "metadata": [
                    _encode_value(k, v) for k, v in (metadata[n] if metadata else {}).items()
                ],
            }
            for n, (key, text, vector) in enumerate(
                zip(keys, entries.texts, entries.vectors.tolist(), strict=True)
            )
        ]

    def _write(self, entries: NewEntries, batch: list[dict[str, Any]]) -> Steps[None]:
        """Upload the documents (``upload`` replaces an existing id's document)."""
        yield from self._check_kinds(entries.kinds)
        yield from self._send(batch, "upload")

    def _held_metadata(
        self, conflicts: Mapping[str, list[str]]
    ) -> Steps[list[dict[str, MetadataValue]]]:
        """One filtered query for an entry whose typed field of another kind is set (a
        probe, not a lock: two writers of a new key with two types at once can both pass)."""
        odata = " or ".join(
            f"metadata/any(m: m/key eq {odata_literal(key)} and ("
            + " or ".join(f"m/{_FIELD_OF_KIND[kind]} ne null" for kind in others)
            + "))"
            for key, others in conflicts.items()
        )
        hits = yield ClientCall.of(
            "checking metadata types",
            "search",
            search_text="*",
            filter=odata,
            select=["metadata"],
            top=1,
        )
        return [_metadata(hit) for hit in hits]

    def _index(self, documents: list[dict[str, Any]], action: str) -> None:
        """Send ``documents`` with ``action`` (``upload``, ``delete``) in batches."""
        self._run(self._send(documents, action))

    def _send(self, documents: list[dict[str, Any]], action: str) -> Steps[None]:
        """Send ``documents`` in batches; a document the service rejects (its status in a
        207 answer) raises, naming it (earlier batches stay written)."""
        for start in range(0, len(documents), self.batch_size):
            batch = documents[start : start + self.batch_size]
            what = f"{action} of {len(batch)} documents"
            results = yield ClientCall.of(what, "index", action, batch)
            failed = [r for r in results if not r.succeeded]
            if failed:
                details = "; ".join(
                    f"{_id(r.key)!r}: {r.status_code} {r.error_message}" for r in failed[:5]
                )
                raise EmbeddingStoreError(
                    f"Azure AI Search index {self.index_name!r} rejected {len(failed)} of "
                    f"{len(batch)} documents ({action}): {details}"
                )

    # ------------------------------------------------------------------ reading

    def _compile(self, condition: Filter) -> Steps[Compiled]:
        return Compiled(MetadataFilterCompiler().compile(condition))
        yield  # pragma: no cover - makes this a generator

    def _fetch(
        self, query: Matrix, compiled: Compiled, min_score: float
    ) -> Callable[[int], Steps[Candidates]]:
        vector = query.tolist()

        def fetch(limit: int) -> Steps[Candidates]:
            vector_query = VectorizedQuery(
                vector=vector,
                k_nearest_neighbors=limit,
                fields="content_vector",
                exhaustive=self.exhaustive or None,
            )
            hits = yield ClientCall.of(
                "vector search",
                "search",
                search_text=None,
                vector_queries=[vector_query],
                filter=compiled.native,
                select=_SELECT,
                top=limit,
            )
            last = cosine_from_azure(float(hits[-1]["@search.score"])) if hits else 0.0
            return Candidates(hits, self._vectors(hits), last)

        return fetch

    def _scan(self, native: str | None) -> Steps[list[dict[str, Any]]]:
        return (yield from self._listed(native, _SELECT))

    def _listed(self, odata: str | None, select: list[str]) -> Steps[list[dict[str, Any]]]:
        """The documents matching ``odata``, by key order (keyset paging: no ``$skip``
        limit)."""
        found: list[dict[str, Any]] = []
        last: str | None = None
        while True:
            conditions = [
                c for c in (odata, None if last is None else f"id gt {odata_literal(last)}") if c
            ]
            page = yield ClientCall.of(
                f"listing documents (filter {odata!r})",
                "search",
                search_text="*",
                filter=" and ".join(f"({c})" for c in conditions) or None,
                select=select,
                order_by=["id asc"],
                top=_PAGE,
            )
            found += page
            if len(page) < _PAGE:
                return found
            last = str(page[-1]["id"])

    def _rows_of(self, keys: list[str], embeddings: bool) -> Steps[list[dict[str, Any]]]:
        """The documents of these keys: a ``search.in`` filter on the key field (a key
        holds no comma), up to a page of keys a request."""
        select = _SELECT if embeddings else _SELECT[:2] + _SELECT[3:]
        rows: list[dict[str, Any]] = []
        for start in range(0, len(keys), _PAGE):
            chunk = [k for k in keys[start : start + _PAGE] if len(k) <= _MAX_KEY]
            if chunk:
                rows += yield ClientCall.of(
                    f"looking up {len(chunk)} documents",
                    "search",
                    search_text="*",
                    filter=f"search.in(id, {odata_literal(','.join(chunk))}, ',')",
                    select=select,
                    top=len(chunk),
                )
        return rows

    def _stored(self, row: dict[str, Any]) -> tuple[str, TextSegment | None]:
        text = row.get("content")
        return _id(str(row["id"])), None if text is None else TextSegment(text, _metadata(row))

    def _row_metadata(self, row: dict[str, Any]) -> dict[str, MetadataValue]:
        return _metadata(row)

    def _vectors(self, rows: list[dict[str, Any]]) -> Matrix:
        return np.asarray([row["content_vector"] for row in rows], dtype=np.float32)

    def _seq(self, row: dict[str, Any]) -> int:
        return 0  # no insertion order: ties stay in the order Azure ranked them

    def _match(self, row: dict[str, Any], score: float) -> EmbeddingMatch:
        entry_id, segment = self._stored(row)
        return EmbeddingMatch(
            score=score,
            embedding_id=entry_id,
            embedding=Embedding(row["content_vector"]),
            embedded=segment,
        )

    # ------------------------------------------------------------------ removal

    def _keys(self, ids: list[str]) -> list[str]:
        return [_key(i) for i in ids]

    def _key(self, row: dict[str, Any]) -> str:
        return str(row["id"])

    def _delete_keys(self, keys: list[str]) -> Steps[None]:
        yield from self._send([{"id": key} for key in dict.fromkeys(keys)], "delete")

    def _delete_where(self, native: str | None) -> Steps[None]:
        """Delete the documents ``native`` selects, listed by a search first (not atomic
        against concurrent writers)."""
        rows = yield from self._listed(native, ["id"])
        if rows:
            yield from self._delete_keys([self._key(row) for row in rows])


def _metadata(hit: Mapping[str, Any]) -> dict[str, MetadataValue]:
    """The metadata of a document read back."""
    return {e["key"]: _decode_value(e) for e in hit.get("metadata") or []}


def _index_definition(name: str, dimension: int) -> SearchIndex:
    """The store's index schema (see the module docstring)."""
    string = SearchFieldDataType.STRING
    return SearchIndex(
        name=name,
        fields=[
            SimpleField(name="id", type=string, key=True, filterable=True, sortable=True),
            SearchableField(name="content", type=string),
            SearchField(
                name="content_vector",
                type="Collection(Edm.Single)",
                searchable=True,
                vector_search_dimensions=dimension,
                vector_search_profile_name=_PROFILE,
            ),
            ComplexField(
                name="metadata",
                collection=True,
                fields=[
                    SimpleField(name="key", type=string, filterable=True),
                    SimpleField(name="type", type=string),
                    SimpleField(name="s", type=string, filterable=True),
                    SimpleField(name="n", type=SearchFieldDataType.DOUBLE, filterable=True),
                    SimpleField(name="i", type=SearchFieldDataType.INT64),
                    SimpleField(name="b", type=SearchFieldDataType.BOOLEAN, filterable=True),
                    SimpleField(name="u", type=string, filterable=True),
                ],
            ),
        ],
        vector_search=VectorSearch(
            algorithms=[
                HnswAlgorithmConfiguration(
                    name=_ALGORITHM, parameters=HnswParameters(metric="cosine")
                )
            ],
            profiles=[VectorSearchProfile(name=_PROFILE, algorithm_configuration_name=_ALGORITHM)],
        ),
    )
