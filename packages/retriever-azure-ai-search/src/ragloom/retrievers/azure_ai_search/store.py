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
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from azure.core.credentials import AzureKeyCredential
from azure.core.exceptions import AzureError, ResourceNotFoundError
from azure.search.documents import SearchClient
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
from ragloom.core.kit.metadata_codec import KIND_LETTERS
from ragloom.core.kit.remote_store import new_entries
from ragloom.core.metadata import MetadataValue
from ragloom.core.stores.base import (
    EmbeddingMatch,
    EmbeddingSearchRequest,
    EmbeddingSearchResult,
    EmbeddingStore,
)
from ragloom.core.stores.metadata_types import (
    BatchKinds,
    check_held_row,
    conflicting_kinds,
)
from ragloom.core.stores.metadata_types import metadata_schema as metadata_schema_kinds
from ragloom.core.stores.scores import relevance_score
from ragloom.core.stores.validation import (
    validate_ids,
)
from ragloom.retrievers.azure_ai_search.odata import (
    ODATA_ORDERINGS,
    ODataFilterCompiler,
    odata_literal,
)
from ragloom.retrievers.azure_ai_search.retriever import cosine_from_azure

__all__ = ["AzureAiSearchEmbeddingStore", "MetadataFilterCompiler"]

_PROFILE = "ragloom-vector-profile"
_ALGORITHM = "ragloom-hnsw"
_MAX_KEY = 1024  # Azure's limit on a document key, in bytes
_SELECT = ["id", "content", "content_vector", "metadata"]
_TYPED_FIELDS = ("s", "n", "i", "b", "u")


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


class AzureAiSearchEmbeddingStore(EmbeddingStore):
    """Stores embeddings in the index ``index_name`` at ``endpoint``.

    The index is created with the store's schema when it does not exist (``dimension``
    is then needed, here or from the first ``add_all``); an existing index must have
    that schema (its vector dimension is read from it). ``exhaustive=True`` makes
    searches exact (Azure's ``exhaustive`` vector query) instead of HNSW's approximate
    neighbours. Writes go in batches of ``batch_size`` documents (Azure takes at most
    1000 a request).
    """

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
    ) -> None:
        self._declared = metadata_schema_kinds(metadata_schema)
        if dimension is not None and (
            isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1
        ):
            raise EmbeddingStoreError(f"dimension must be an int >= 1, got {dimension!r}")
        if (
            isinstance(batch_size, bool)
            or not isinstance(batch_size, int)
            or not (1 <= batch_size <= 1000)
        ):
            raise EmbeddingStoreError(f"batch_size must be an int in [1, 1000], got {batch_size!r}")
        self.index_name = index_name
        self.exhaustive = exhaustive
        self.batch_size = batch_size
        self._client = search_client or SearchClient(endpoint, index_name, credential)
        self._indexes = index_client or SearchIndexClient(endpoint, credential)
        self._dimension = self._existing_dimension()
        if self._dimension is None and dimension is not None:
            self._create_index(dimension)
        elif dimension is not None and dimension != self._dimension:
            raise EmbeddingStoreError(
                f"index {index_name!r} has vectors of dimension {self._dimension}, not {dimension}"
            )

    # ------------------------------------------------------------------ index

    def _azure(self, what: str, exc: AzureError) -> EmbeddingStoreError:
        return EmbeddingStoreError(f"Azure AI Search index {self.index_name!r}: {what}: {exc}")

    def _existing_dimension(self) -> int | None:
        """The vector dimension of the existing index, or None when there is no index."""
        try:
            index = self._indexes.get_index(self.index_name)
        except ResourceNotFoundError:
            return None
        except AzureError as exc:
            raise self._azure("reading the index definition failed", exc) from exc
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
        string = SearchFieldDataType.STRING
        index = SearchIndex(
            name=self.index_name,
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
                profiles=[
                    VectorSearchProfile(name=_PROFILE, algorithm_configuration_name=_ALGORITHM)
                ],
            ),
        )
        try:
            self._indexes.create_index(index)
        except AzureError as exc:
            raise self._azure(f"creating the index (dimension {dimension}) failed", exc) from exc
        self._dimension = dimension

    # ------------------------------------------------------------------ writing

    def add_all(
        self,
        embeddings: Sequence[Embedding] | npt.NDArray[np.floating[Any]],
        segments: Sequence[TextSegment] | None = None,
        *,
        ids: Sequence[str] | None = None,
    ) -> list[str]:
        """Upload a batch (``upload`` replaces an existing id's document); validated first."""
        entries = new_entries(embeddings, segments, ids, self._dimension, self._declared)
        if entries is None:
            return []
        id_list, matrix, texts, metadata = entries[:4]
        keys = [_key(i) for i in id_list]
        too_long = next((i for i, k in zip(id_list, keys, strict=True) if len(k) > _MAX_KEY), None)
        if too_long is not None:
            raise EmbeddingStoreError(
                f"id {too_long[:40]!r}... is too long for an Azure AI Search key (base64 of "
                f"the id must fit {_MAX_KEY} bytes)"
            )
        documents = [
            {
                "id": key,
                "content": text,
                "content_vector": vector,
                "metadata": [
                    _encode_value(k, v) for k, v in (metadata[n] if metadata else {}).items()
                ],
            }
            for n, (key, text, vector) in enumerate(zip(keys, texts, matrix.tolist(), strict=True))
        ]
        if self._dimension is None:
            self._create_index(matrix.shape[1])
        else:
            self._check_kinds(entries.kinds)
        self._index(documents, "upload")
        return id_list

    def _check_kinds(self, kinds: BatchKinds) -> None:
        """Refuse the batch if the index holds one of its keys with another type: one
        filtered query for an entry whose typed field of another kind is set. (A probe, not
        a lock: two writers of a new key with two types at once can both pass.)"""
        conflicts = conflicting_kinds(kinds)
        if not conflicts:
            return
        odata = " or ".join(
            f"metadata/any(m: m/key eq {odata_literal(key)} and ("
            + " or ".join(f"m/{_FIELD_OF_KIND[kind]} ne null" for kind in others)
            + "))"
            for key, others in conflicts.items()
        )
        try:
            hits = list(
                self._client.search(search_text="*", filter=odata, select=["metadata"], top=1)
            )
        except AzureError as exc:
            raise self._azure("checking metadata types failed", exc) from exc
        for hit in hits:
            check_held_row(kinds, {e["key"]: _decode_value(e) for e in hit.get("metadata") or []})

    def _index(self, documents: list[dict[str, Any]], action: str) -> None:
        """Send ``documents`` with ``action`` in batches; a rejected document raises."""
        for start in range(0, len(documents), self.batch_size):
            batch = documents[start : start + self.batch_size]
            send = (
                self._client.upload_documents
                if action == "upload"
                else self._client.delete_documents
            )
            try:
                results = send(batch)
            except AzureError as exc:
                raise self._azure(f"{action} of {len(batch)} documents failed", exc) from exc
            failed = [r for r in results if not r.succeeded]
            if failed:
                details = "; ".join(
                    f"{_id(r.key)!r}: {r.status_code} {r.error_message}" for r in failed[:5]
                )
                raise EmbeddingStoreError(
                    f"Azure AI Search index {self.index_name!r} rejected {len(failed)} of "
                    f"{len(batch)} documents ({action}): {details}"
                )

    def remove_all(self, ids: Iterable[str] | None = None, *, filter: Filter | None = None) -> None:
        """Delete the ids, or the entries matching ``filter`` (found by a search), or all."""
        if ids is not None and filter is not None:
            raise EmbeddingStoreError("remove_all takes ids or a filter, not both")
        if ids is not None:
            keys = [_key(i) for i in validate_ids(ids, unique=False)]
        else:
            odata = None if filter is None else MetadataFilterCompiler().compile(filter)
            if self._dimension is None:
                return
            keys = list(self._keys(odata))
        if keys and self._dimension is not None:
            self._index([{"id": key} for key in dict.fromkeys(keys)], "delete")

    def _keys(self, odata: str | None) -> Iterator[str]:
        """The keys of the documents matching ``odata``, by key order (keyset paging: no
        ``$skip`` limit)."""
        last: str | None = None
        while True:
            conditions = [
                c for c in (odata, None if last is None else f"id gt {odata_literal(last)}") if c
            ]
            try:
                page = [
                    str(hit["id"])
                    for hit in self._client.search(
                        search_text="*",
                        filter=" and ".join(f"({c})" for c in conditions) or None,
                        select=["id"],
                        order_by=["id asc"],
                        top=1000,
                    )
                ]
            except AzureError as exc:
                raise self._azure(f"listing documents (filter {odata!r}) failed", exc) from exc
            yield from page
            if len(page) < 1000:
                return
            last = page[-1]

    # ------------------------------------------------------------------ searching

    def search(self, request: EmbeddingSearchRequest) -> EmbeddingSearchResult:
        """The best ``max_results`` entries by cosine, passing the filter (pre-filtered)."""
        query = request.query_embedding
        odata = None if request.filter is None else MetadataFilterCompiler().compile(request.filter)
        if self._dimension is None:
            return EmbeddingSearchResult([])
        if query.dimension != self._dimension:
            raise EmbeddingStoreError(
                f"query dimension {query.dimension} does not match the store's {self._dimension}"
            )
        vector_query = VectorizedQuery(
            vector=np.asarray(query.vector, dtype=np.float32).tolist(),
            k_nearest_neighbors=request.max_results,
            fields="content_vector",
            exhaustive=self.exhaustive or None,
        )
        try:
            hits = list(
                self._client.search(
                    search_text=None,
                    vector_queries=[vector_query],
                    filter=odata,
                    select=_SELECT,
                    top=request.max_results,
                )
            )
        except AzureError as exc:
            raise self._azure("vector search failed", exc) from exc
        matches = [self._match(hit) for hit in hits]
        matches.sort(key=lambda m: -m.score)
        return EmbeddingSearchResult([m for m in matches if m.score >= request.min_score])

    @staticmethod
    def _match(hit: dict[str, Any]) -> EmbeddingMatch:
        cosine = cosine_from_azure(float(hit["@search.score"]))
        text = hit.get("content")
        segment = None
        if text is not None:
            metadata = {e["key"]: _decode_value(e) for e in hit.get("metadata") or []}
            segment = TextSegment(text, metadata)
        return EmbeddingMatch(
            score=float(relevance_score(cosine)),
            embedding_id=_id(str(hit["id"])),
            embedding=Embedding(hit["content_vector"]),
            embedded=segment,
        )
