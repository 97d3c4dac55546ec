"""Differential filters: seeded random filters over the same rows give the same ids (or
the same InvalidFilterError) on in-memory, pgvector, Milvus (Lite) and Qdrant (local).

pgvector needs its local server (``bash scripts/services/pgvector.sh start``); Milvus Lite
and Qdrant's local mode run in process.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

from ragloom.core import (
    Embedding,
    EmbeddingSearchRequest,
    EmbeddingStore,
    InMemoryEmbeddingStore,
    InvalidFilterError,
    TextSegment,
    metadata_key,
)
from ragloom.core.filters import Filter
from ragloom.testkit.servers import service_setting

FILTERS = 250
DIMENSION = 4
DSN = service_setting("RAGLOOM_PG_DSN")
U = [uuid.UUID(int=n) for n in (1, 2, 3)]
# One type per key (stores refuse a write of another type); filters may still mismatch.
VALUES: dict[str, list[Any]] = {
    "n": [-1, 0, 2, 2.0, 2.5, 2.0**53, 2**40, -0.0, 1e-300],  # Qdrant: exact float64 only
    "s": ["", "a", "apple", "Banana", "b%_", "é", "x'y", 'q"q', "😀", "a b"],
    "b": [True, False],
    "u": U,
    "t": [str(U[0]), str(U[1]), "plain"],  # str values UUID filters may match
}
FILTER_VALUES: list[Any] = [
    *VALUES["n"][:8], *VALUES["s"], True, False, *U, "2", 1,
]  # fmt: skip


def rows(rng: random.Random) -> list[dict[str, Any]]:
    result = []
    for _ in range(80):
        row = {key: rng.choice(values) for key, values in VALUES.items() if rng.random() < 0.7}
        result.append(row)
    return result


def leaf(rng: random.Random) -> Filter:
    name = rng.choice([*VALUES, "missing"])
    key = metadata_key(name)
    comparable = {"u": U, "t": [*U, "plain"]}.get(name, VALUES.get(name, FILTER_VALUES))
    value = rng.choice(FILTER_VALUES if rng.random() < 0.1 else comparable)
    options = [key.is_equal_to(value), key.is_not_equal_to(value)]
    pool = [v for v in FILTER_VALUES if type(v) is type(value)]
    options += [key.is_in([value, rng.choice(pool)]), key.is_not_in([value])]
    if type(value) in (int, float, str):
        options += [
            key.is_greater_than(value),
            key.is_greater_than_or_equal_to(value),
            key.is_less_than(value),
            key.is_less_than_or_equal_to(value),
        ]
    if type(value) is str:
        options.append(key.contains_string(value))
    return rng.choice(options)


def random_filter(rng: random.Random, depth: int = 0) -> Filter:
    roll = rng.random()
    if depth >= 3 or roll < 0.4:
        return leaf(rng)
    if roll < 0.6:
        return ~random_filter(rng, depth + 1)
    left, right = random_filter(rng, depth + 1), random_filter(rng, depth + 1)
    return left & right if roll < 0.8 else left | right


def outcome(store: EmbeddingStore, condition: Filter) -> set[str] | str:
    request = EmbeddingSearchRequest(
        Embedding(np.ones(DIMENSION)), max_results=1000, filter=condition
    )
    try:
        return {match.embedding_id for match in store.search(request).matches}
    except InvalidFilterError:
        return "InvalidFilterError"


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[dict[str, EmbeddingStore]]:
    from ragloom.stores.milvus import MilvusEmbeddingStore
    from ragloom.stores.pgvector import PgVectorEmbeddingStore
    from ragloom.stores.qdrant import QdrantEmbeddingStore

    try:
        psycopg.connect(DSN, connect_timeout=3).close()
    except psycopg.OperationalError as exc:
        pytest.fail(
            f"pgvector not reachable at {DSN} ({exc}); bash scripts/services/pgvector.sh start"
        )
    table = f"reliability_{uuid.uuid4().hex[:12]}"
    built: dict[str, EmbeddingStore] = {
        "memory": InMemoryEmbeddingStore(),
        "pgvector": PgVectorEmbeddingStore(DSN, table, dimension=DIMENSION, index="none"),
        "milvus": MilvusEmbeddingStore(str(tmp_path / "milvus.db"), "c", dimension=DIMENSION),
        "qdrant": QdrantEmbeddingStore("c", dimension=DIMENSION, location=":memory:"),
    }
    try:
        yield built
    finally:
        with psycopg.connect(DSN, autocommit=True) as conn:
            conn.execute(f'DROP TABLE IF EXISTS "{table}"')
        for store in built.values():
            close = getattr(store, "close", None)
            if close is not None:
                close()


def test_random_filters_agree_on_every_store(stores: dict[str, EmbeddingStore]) -> None:
    rng = random.Random(16)
    data = rows(rng)
    vectors = np.random.default_rng(16).uniform(-1, 1, (len(data), DIMENSION)).astype(np.float32)
    segments = [TextSegment(f"row {i}", row) for i, row in enumerate(data)]
    ids = [f"r{i}" for i in range(len(data))]
    for store in stores.values():
        store.add_all([Embedding(v) for v in vectors], segments, ids=ids)
    disagreements = []
    raised = 0
    for _ in range(FILTERS):
        condition = random_filter(rng)
        expected = outcome(stores["memory"], condition)
        raised += expected == "InvalidFilterError"
        for name, store in stores.items():
            got = outcome(store, condition)
            if got != expected:
                disagreements.append(f"{name}: {condition}: {got} != {expected}")
    assert not disagreements, disagreements[:10]
    assert 0 < raised < FILTERS / 2  # both kinds of outcome were exercised
