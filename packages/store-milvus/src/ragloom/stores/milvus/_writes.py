"""Writing caller-chosen ids: Milvus does not keep one row per primary key by itself.

Two inserts of one id (and, in Milvus Lite, even two racing upserts) leave two rows. So a
batch of given ids is written in three steps: the ids already stored are upserted keeping
their insertion position (their old ``seq``), as in memory; the others are inserted (an
insert costs a third of an upsert at 100k entries: an upsert deletes by primary key
first); then the batch is *settled*: its ids are counted and a duplicate, written by
another writer meanwhile, is healed by rewriting the batch after a random back-off.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from ragloom.core.errors import EmbeddingStoreError
from ragloom.core.kit.remote_store import PAUSE
from ragloom.core.kit.steps import ClientCall, Steps
from ragloom.stores.milvus._columns import Columns
from ragloom.stores.milvus._expr import Expr, Param

__all__ = ["Render", "keep_positions", "settle", "write_given_ids"]

_SETTLE_ATTEMPTS = 8
_SETTLE_BACKOFF = 0.005  # seconds: the first rewrite's back-off is up to twice this

Render = Callable[[Expr], dict[str, Any]]
"""An expression as the ``filter`` arguments of a client call (the store's renderer)."""


def write_given_ids(collection: str, chunk: Columns, render: Render) -> Steps[None]:
    """Write ``chunk`` (ids the caller chose, maybe stored): upsert the stored ones in
    place, insert the new ones, settle."""
    existing = yield from keep_positions(collection, chunk, render)
    if existing:
        positions = range(len(chunk))
        replaced = chunk.take([i for i in positions if chunk.ids[i] in existing])
        yield ClientCall.of(f"replacing {len(replaced)} entries", "upsert", collection, replaced)
        new = chunk.take([i for i in positions if chunk.ids[i] not in existing])
    else:
        new = chunk
    if len(new):
        yield ClientCall.of(f"writing {len(new)} entries", "insert", collection, new)
    yield from settle(collection, chunk, render)


def keep_positions(collection: str, batch: Columns, render: Render) -> Steps[set[str]]:
    """Replaced ids keep their insertion position (their old ``seq``, set in ``batch``);
    the ids of ``batch`` already stored."""
    found = yield ClientCall.of(
        "reading existing ids",
        "query",
        collection,
        output_fields=["id", "seq"],
        consistency_level="Strong",
        **render(("id in ", Param(tuple(batch.ids)))),
    )
    old = {row["id"]: row["seq"] for row in found}
    if old:
        batch.seqs = [old.get(id, seq) for id, seq in zip(batch.ids, batch.seqs, strict=True)]
    return set(old)


def settle(collection: str, rows: Columns, render: Render) -> Steps[None]:
    """Make each id of ``rows`` (just written) one row. Another writer may have written
    one of these ids meanwhile, and Milvus then keeps both rows, so the ids are counted
    after the write and a duplicate is healed with an upsert of the batch (which deletes
    every row of those ids first), counted again. Of racing writers, the last to write
    counts after every write, so the collection ends with one row per id. Writers that
    keep meeting each other wait a random, doubling time before each rewrite (as Ethernet
    backs off), so that one of them soon rewrites alone."""
    ids = ("id in ", Param(tuple(rows.ids)))
    for attempt in range(1, _SETTLE_ATTEMPTS + 1):
        counted = yield ClientCall.of(
            "checking for concurrently written ids",
            "query",
            collection,
            output_fields=["count(*)"],
            consistency_level="Strong",
            **render(ids),
        )
        if int(counted[0]["count(*)"]) <= len(rows):
            return
        pause = random.uniform(0, _SETTLE_BACKOFF * 2**attempt)
        yield ClientCall.of("waiting before a rewrite", PAUSE, pause)
        yield ClientCall.of(f"rewriting {len(rows)} entries", "upsert", collection, rows)
    raise EmbeddingStoreError(
        f"Milvus collection {collection!r}: {len(rows)} entries still have "
        f"duplicate rows after {_SETTLE_ATTEMPTS} rewrites (other writers keep writing "
        "the same ids); add the batch again"
    )
