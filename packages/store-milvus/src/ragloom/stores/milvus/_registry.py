"""The kinds registry: which (metadata key, stored kind) pairs a collection may hold.

A filter comparing a key with a value of another type raises, as in memory; finding such
a stored value takes a scan of every entry's ``kinds`` JSON (Milvus Lite has no JSON
index: ~50 ms at 100k entries). The registry, a small side collection next to the
store's, makes that a lookup: every writer registers the pairs of a batch *before*
writing the batch, so the registry holds a superset of the pairs stored (a removal leaves
its pairs behind; nothing is ever unregistered). A filtered call reads the pairs of its
keys (one query on a few rows): no incompatible pair means no mismatch can be stored and
the scan is skipped; an incompatible pair (maybe stale) lets the scan decide.

Rows: ``pair`` (primary key: a hash of key and kind), ``key_hash`` (a hash of the key,
so any key, whatever its characters or length, can be looked up) and ``kind``. Milvus
requires a vector field: ``unused``, two zeros.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pymilvus import DataType, MilvusClient  # type: ignore[import-untyped]

from ragloom.core.kit.steps import ClientCall, Steps
from ragloom.stores.milvus._expr import Param

__all__ = ["KindRegistry", "registry_name"]

_SUFFIX = "__ragloom_kinds"
_MAX_NAME = 255


def registry_name(collection: str) -> str:
    """The side collection of ``collection`` (a valid Milvus name, at most 255 characters)."""
    if len(collection) + len(_SUFFIX) <= _MAX_NAME:
        return collection + _SUFFIX
    digest = hashlib.blake2b(collection.encode("utf-8"), digest_size=8).hexdigest()
    return f"{collection[: _MAX_NAME - len(_SUFFIX) - 17]}_{digest}{_SUFFIX}"


def _hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class KindRegistry:
    """The registry of one collection; ``call`` runs a client method with the store's
    error handling, ``render`` turns an expression into ``filter`` arguments."""

    def __init__(
        self,
        client: MilvusClient,
        collection: str,
        call: Callable[..., Any],
        render: Callable[[Any], dict[str, Any]],
    ) -> None:
        self.name = registry_name(collection)
        self._client = client
        self._call = call
        self._render = render
        self._known: set[tuple[str, str]] = set()  # pairs this store registered

    def exists(self) -> bool:
        return bool(
            self._call("checking the kinds registry", self._client.has_collection, self.name)
        )

    def create(self) -> None:
        """Create the side collection (if another store has not)."""
        if self.exists():
            return
        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("pair", DataType.VARCHAR, is_primary=True, max_length=64)
        schema.add_field("key_hash", DataType.VARCHAR, max_length=32)
        schema.add_field("kind", DataType.VARCHAR, max_length=1)
        schema.add_field("unused", DataType.FLOAT_VECTOR, dim=2)
        index = self._client.prepare_index_params()
        index.add_index("unused", index_type="FLAT", metric_type="L2")
        try:
            self._call(
                "creating the kinds registry",
                self._client.create_collection,
                self.name,
                schema=schema,
                index_params=index,
                consistency_level="Strong",
            )
        except Exception:
            if not self.exists():  # not a concurrent creation: a real failure
                raise

    def register(self, kinds: Iterable[Mapping[str, str]]) -> Steps[None]:
        """Record the (key, kind) pairs of a batch's ``kinds`` maps, before it is written."""
        pairs = {pair for entry in kinds for pair in entry.items()} - self._known
        if not pairs:
            return
        rows = [
            {
                "pair": _hash(f"{kind}:{key}"),
                "key_hash": _hash(key),
                "kind": kind,
                "unused": [0.0, 0.0],
            }
            for key, kind in pairs
        ]
        yield ClientCall.of("registering metadata kinds", "upsert", self.name, rows)
        self._known |= pairs

    def may_hold(self, incompatible: Mapping[str, Iterable[str]]) -> Steps[bool]:
        """Whether some key of ``incompatible`` may hold one of its listed kinds."""
        by_hash = {_hash(key): set(kinds) for key, kinds in incompatible.items()}
        if not by_hash:
            return False
        rows = yield ClientCall.of(
            "reading the kinds registry",
            "query",
            self.name,
            output_fields=["key_hash", "kind"],
            consistency_level="Strong",
            **self._render(("key_hash in ", Param(tuple(by_hash)))),
        )
        return any(row["kind"] in by_hash[row["key_hash"]] for row in rows)
