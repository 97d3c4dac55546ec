"""The kinds registry: which typed payload fields (metadata key and kind) a collection may hold.

A filter comparing a key with a value of another type raises, as in memory, and a batch
storing a key with another type than stored points is refused. Finding such a stored
value is a scroll on the ``kinds`` payload field: on a server an indexed lookup, but in
local mode a Python scan of every point (the whole cost of a filtered search, most of an
``add_all``). The registry, a small side collection next to the store's, makes that a
lookup by id: every writer registers the typed fields of a batch (``s_<h>``, ``n_<h>``,
...) *before* writing it, so the registry holds a superset of the fields stored (a
removal leaves its fields behind; nothing is ever unregistered). A check reads the
fields it fears (a retrieve of a few ids): none registered means none stored and the
scroll is skipped; one registered (maybe stale) lets the scroll decide.

A collection written before the registry existed gets one when a store first opens it:
one scroll of every point's ``kinds``, then a ``complete`` marker point. A registry
without the marker (a store killed while filling it) is filled again; until then the
checks scroll, as before. Points: id ``uuid5(<field>)``, payload ``{"field": <field>}``,
a one-dimensional vector (Qdrant needs one).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable
from typing import Any

from qdrant_client import models

from ragloom.core.kit.steps import ClientCall, Steps

__all__ = ["KindRegistry", "registry_name"]

_SUFFIX = "__ragloom_kinds"
_MAX_NAME = 255
_NAMESPACE = uuid.UUID("6b1d3c0e-7a55-5f0e-8c4e-2d9a4f7b1e33")
_COMPLETE = ""  # the marker's "field": no typed field is empty
_PAGE = 1000


def registry_name(collection: str) -> str:
    """The side collection of ``collection`` (at most 255 characters)."""
    if len(collection) + len(_SUFFIX) <= _MAX_NAME:
        return collection + _SUFFIX
    digest = hashlib.blake2b(collection.encode("utf-8"), digest_size=8).hexdigest()
    return f"{collection[: _MAX_NAME - len(_SUFFIX) - 17]}_{digest}{_SUFFIX}"


def _id(name: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, name))


def _points(names: Iterable[str]) -> list[models.PointStruct]:
    return [
        models.PointStruct(id=_id(name), vector=[1.0], payload={"field": name}) for name in names
    ]


class KindRegistry:
    """The registry of one collection, its operations as client steps."""

    def __init__(self, collection: str) -> None:
        self.collection = collection
        self.name = registry_name(collection)
        self.available = True  # False: the client may not create or write it
        self.complete = False
        self._known: set[str] = set()  # fields registered: never unregistered

    def open(self) -> Steps[None]:
        """Create the registry if missing and, without its marker, fill it from the
        collection's points."""
        found = yield ClientCall.of("checking the kinds registry", "collection_exists", self.name)
        if not found:
            try:
                yield ClientCall.of(
                    "creating the kinds registry",
                    "create_collection",
                    self.name,
                    vectors_config=models.VectorParams(size=1, distance=models.Distance.DOT),
                )
            except Exception:
                # Another store may have created it meanwhile.
                again = yield ClientCall.of(
                    "checking the kinds registry", "collection_exists", self.name
                )
                if not again:
                    raise
        marker = yield ClientCall.of(
            "reading the kinds registry", "retrieve", self.name, ids=[_id(_COMPLETE)]
        )
        if marker:
            self.complete = True
            return
        held: set[str] = set()
        offset: Any = None
        while True:
            records, offset = yield ClientCall.of(
                "reading metadata kinds",
                "scroll",
                self.collection,
                limit=_PAGE,
                offset=offset,
                with_payload=["kinds"],
                with_vectors=False,
            )
            for record in records:
                held.update((record.payload or {}).get("kinds", ()))
            if offset is None:
                break
        yield from self.register(held)
        yield from self._upsert([_COMPLETE], "completing the kinds registry")
        self.complete = True

    def register(self, names: Iterable[str]) -> Steps[None]:
        """Record the typed fields of a batch, before the batch is written."""
        missing = set(names) - self._known
        if missing and self.available:
            yield from self._upsert(sorted(missing), "registering metadata kinds")
            self._known |= missing

    def may_hold(self, names: list[str]) -> Steps[bool]:
        """Whether the collection may hold one of these typed fields."""
        if not (self.available and self.complete) or any(name in self._known for name in names):
            return True
        if not names:
            return False
        records = yield ClientCall.of(
            "reading the kinds registry",
            "retrieve",
            self.name,
            ids=[_id(name) for name in names],
            with_payload=["field"],
        )
        self._known.update(r.payload["field"] for r in records if r.payload)
        return bool(records)

    def _upsert(self, names: list[str], what: str) -> Steps[None]:
        for start in range(0, len(names), _PAGE):
            yield ClientCall.of(
                what, "upsert", self.name, points=_points(names[start : start + _PAGE]), wait=True
            )
