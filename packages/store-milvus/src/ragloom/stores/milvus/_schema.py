"""The Milvus collection's schema: creating it, and checking an existing one is the store's.

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
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple

from pymilvus import DataType, Function, FunctionType, MilvusClient  # type: ignore[import-untyped]

from ragloom.core.bm25.analyzer import ENGLISH_STOPWORDS
from ragloom.core.errors import EmbeddingStoreError

__all__ = [
    "DEFAULT_ANALYZER",
    "MAX_VARCHAR",
    "SPARSE_FIELD",
    "Existing",
    "IndexOptions",
    "check_collection",
    "check_name",
    "check_uri",
    "create_collection",
    "index_options",
]

MAX_VARCHAR = 65535  # bytes, Milvus's limit
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

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")
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
Call = Callable[..., Any]


class IndexOptions(NamedTuple):
    """How a new collection is indexed (see :func:`index_options`)."""

    index_type: str
    index_params: dict[str, Any]
    analyzer_params: dict[str, Any] | None


def index_options(
    index_type: str, index_params: dict[str, Any] | None, analyzer_params: dict[str, Any] | None
) -> IndexOptions:
    """The store's index options, checked."""
    if not isinstance(index_type, str) or not index_type:
        raise EmbeddingStoreError(f"index_type must be a non-empty str, got {index_type!r}")
    for option, params in (("index_params", index_params), ("analyzer_params", analyzer_params)):
        if params is not None and not isinstance(params, dict):
            raise EmbeddingStoreError(f"{option} must be a dict, got {type(params).__name__}")
    analyzer = None if analyzer_params is None else dict(analyzer_params)
    return IndexOptions(index_type, dict(index_params or {}), analyzer)


class Existing(NamedTuple):
    """What an existing ragloom collection holds."""

    dimension: int
    full_text: bool


def check_name(collection: object, option: str = "collection") -> str:
    """A valid Milvus collection name."""
    if not isinstance(collection, str) or not _NAME.fullmatch(collection):
        raise EmbeddingStoreError(
            f"{option} must match [A-Za-z_][A-Za-z0-9_]* (at most 255 characters), "
            f"got {collection!r}"
        )
    return collection


def check_uri(uri: object) -> str:
    """A Milvus Lite file (``.db``) or a server address."""
    if not isinstance(uri, str) or not uri.strip():
        raise EmbeddingStoreError(f"uri must be a non-empty str, got {uri!r}")
    if not (uri.endswith(".db") or re.match(r"(https?|tcp|unix)://", uri)):
        raise EmbeddingStoreError(
            f"uri {uri!r} is neither a local Milvus Lite file (ending in .db) nor a "
            "Milvus server address (http://, https://, tcp:// or unix://)"
        )
    return uri


def create_collection(
    client: MilvusClient,
    call: Call,
    collection: str,
    dimension: int,
    options: IndexOptions,
    full_text: bool,
) -> None:
    """Create the collection (``call`` runs the client method with the store's errors)."""
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=MAX_VARCHAR)
    schema.add_field("seq", DataType.INT64)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dimension)
    analyzer: dict[str, Any] = {}
    if full_text:
        analyzer["enable_analyzer"] = True
        analyzer["analyzer_params"] = options.analyzer_params or DEFAULT_ANALYZER
    schema.add_field("text", DataType.VARCHAR, max_length=MAX_VARCHAR, **analyzer)
    schema.add_field("has_text", DataType.BOOL)
    schema.add_field("metadata", DataType.JSON)
    schema.add_field("kinds", DataType.JSON)
    schema.add_field("exact", DataType.JSON)
    index = client.prepare_index_params()
    index.add_index(
        "vector",
        index_type=options.index_type,
        metric_type="COSINE",
        params=options.index_params,
    )
    if full_text:
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
    call(
        f"creating the collection (dimension {dimension})",
        client.create_collection,
        collection,
        schema=schema,
        index_params=index,
        consistency_level="Strong",
    )


def check_collection(
    client: MilvusClient, call: Call, collection: str, dimension: int | None, full_text: bool
) -> Existing:
    """The dimension and BM25 field of an existing collection; raises if it is not a
    ragloom collection, has another ``dimension``, or lacks the BM25 field ``full_text``
    asks for."""
    info = call("describing the collection", client.describe_collection, collection)
    fields = {f["name"]: f for f in info.get("fields", [])}
    wrong = [
        name
        for name, kind in _SCHEMA.items()
        if name not in fields or fields[name].get("type") != kind
    ]
    if wrong or not fields["id"].get("is_primary"):
        raise EmbeddingStoreError(
            f"Milvus collection {collection!r} exists but is not a ragloom collection "
            f"(missing or mistyped fields: {', '.join(wrong) or 'id primary key'}); "
            "use another collection name"
        )
    sparse = fields.get(SPARSE_FIELD, {})
    has_bm25 = sparse.get("type") == DataType.SPARSE_FLOAT_VECTOR and bool(
        sparse.get("is_function_output")
    )
    if full_text and not has_bm25:
        raise EmbeddingStoreError(
            f"Milvus collection {collection!r} was created without the BM25 function "
            f"(no {SPARSE_FIELD!r} field computed from 'text'), so it has no keyword index "
            "for hybrid search; Milvus cannot add one to an existing collection: use a new "
            "collection name with full_text=True and add the segments again"
        )
    stored = int(fields["vector"].get("params", {}).get("dim", 0))
    if dimension is not None and dimension != stored:
        raise EmbeddingStoreError(
            f"Milvus collection {collection!r} has dimension {stored}, "
            f"but the store was given dimension {dimension}"
        )
    return Existing(stored, has_bm25)
