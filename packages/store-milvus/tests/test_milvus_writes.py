"""Writes on Milvus Lite: new ids are inserted (cheaper than an upsert), stored ids are
upserted keeping their position, and a new id written concurrently by another writer
(two rows with one primary key) is healed."""

from __future__ import annotations

import numpy as np
import pytest
from pymilvus import MilvusClient  # type: ignore[import-untyped]

from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding
from ragloom.core.stores.base import EmbeddingSearchRequest
from ragloom.stores.milvus import MilvusEmbeddingStore
from ragloom.stores.milvus._writes import settle

pytestmark = pytest.mark.integration


def count_rows(client: MilvusClient, collection: str, id: str) -> int:
    """Rows holding ``id`` (count(*) counts duplicates; queries and searches hide them)."""
    rows = client.query(
        collection, filter=f'id == "{id}"', output_fields=["count(*)"], consistency_level="Strong"
    )
    return int(rows[0]["count(*)"])


def test_mixed_batch_keeps_positions_and_counts(
    milvus_client: MilvusClient, collection_name: str
) -> None:
    store = MilvusEmbeddingStore(client=milvus_client, collection_name=collection_name)
    one = Embedding([1.0, 0.0, 0.0])
    store.add_all([one, one], [TextSegment("a"), TextSegment("b")], ids=["a", "b"])
    store.add_all([one, one], [TextSegment("b2"), TextSegment("c")], ids=["b", "c"])
    assert len(store) == 3
    matches = store.search(EmbeddingSearchRequest(one, max_results=3)).matches
    assert [(m.embedding_id, m.embedded.text if m.embedded else None) for m in matches] == [
        ("a", "a"),
        ("b", "b2"),  # replaced in place: still second
        ("c", "c"),
    ]
    assert all(count_rows(milvus_client, collection_name, id) == 1 for id in "abc")


def test_new_id_written_concurrently_is_healed(
    milvus_client: MilvusClient, collection_name: str
) -> None:
    store = MilvusEmbeddingStore(client=milvus_client, collection_name=collection_name)
    store.add_all([Embedding([1.0, 0.0])], [TextSegment("theirs")], ids=["x"])
    # This writer checked before the other's write landed: it inserts x as a new id.
    batch = store._columns(["x"], np.asarray([[0.0, 1.0]], dtype=np.float32), ["mine"], None)
    milvus_client.insert(collection_name, batch.rows())  # inserted as new, not yet settled
    store._run(settle(collection_name, batch, store._render))
    assert count_rows(milvus_client, collection_name, "x") == 1
    assert len(store) == 1
    found = store.search(EmbeddingSearchRequest(Embedding([0.0, 1.0]), max_results=5)).matches
    assert [(m.embedding_id, m.embedded.text if m.embedded else None) for m in found] == [
        ("x", "mine")
    ]
