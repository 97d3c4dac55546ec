"""The kinds registry on Milvus Lite: filters skip the type-mismatch scan when no clashing
kind was ever written, and still raise (or not) exactly as the in-memory store does."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from pymilvus import MilvusClient  # type: ignore[import-untyped]

from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding
from ragloom.core.errors import MetadataTypeError
from ragloom.core.filters import metadata_key
from ragloom.core.stores.base import EmbeddingSearchRequest
from ragloom.stores.milvus import MilvusEmbeddingStore
from ragloom.stores.milvus._registry import registry_name

pytestmark = pytest.mark.integration


def vectors(count: int) -> list[Embedding]:
    rng = np.random.default_rng(count)
    return [Embedding(v) for v in rng.normal(size=(count, 4)).astype(np.float32)]


def open_store(client: MilvusClient, name: str) -> MilvusEmbeddingStore:
    return MilvusEmbeddingStore(client=client, collection_name=name, dimension=4)


@pytest.fixture
def scans(milvus_client: MilvusClient, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The filters of the type-mismatch probe queries (scans of stored kinds, no ids)."""
    seen: list[str] = []
    query = milvus_client.query

    def counting(collection: str, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("output_fields") == ["metadata", "kinds", "exact"]:
            seen.append(kwargs.get("filter", ""))
        return query(collection, *args, **kwargs)

    monkeypatch.setattr(milvus_client, "query", counting)
    return seen


def search(store: MilvusEmbeddingStore, condition: Any) -> list[str]:
    request = EmbeddingSearchRequest(vectors(1)[0], max_results=10, filter=condition)
    return [match.embedding_id for match in store.search(request).matches]


def test_compatible_filters_skip_the_scan(
    milvus_client: MilvusClient, collection_name: str, scans: list[str]
) -> None:
    store = open_store(milvus_client, collection_name)
    store.add_all(
        vectors(3),
        [
            TextSegment("x", {"tenant": "a", "n": 1}),
            TextSegment("y", {"tenant": "b", "n": 2.5}),
            TextSegment("z", {"tenant": "a", "\n odd key": True}),
        ],
        ids=["1", "2", "3"],
    )
    assert sorted(search(store, metadata_key("tenant").is_equal_to("a"))) == ["1", "3"]
    assert search(store, metadata_key("n").is_greater_than(2)) == ["2"]
    assert search(store, metadata_key("\n odd key").is_equal_to(True)) == ["3"]
    store.remove_all(filter=metadata_key("tenant").is_equal_to("b"))
    assert scans == []  # every kind check answered by the registry


def test_mismatch_written_by_another_store_is_refused(
    milvus_client: MilvusClient, collection_name: str, scans: list[str]
) -> None:
    first = open_store(milvus_client, collection_name)
    first.add_all(vectors(1), [TextSegment("x", {"tenant": "a"})], ids=["1"])
    assert search(first, metadata_key("tenant").is_equal_to("a")) == ["1"]
    assert scans == []  # first write of the key, then a compatible filter: registry only
    other = open_store(milvus_client, collection_name)
    with pytest.raises(MetadataTypeError, match="tenant"):
        other.add_all(vectors(1), [TextSegment("y", {"tenant": 7})], ids=["2"])
    assert len(scans) == 1  # the registry flagged the clash; the probe confirmed it
    assert search(first, metadata_key("tenant").is_equal_to("a")) == ["1"]


def test_a_removed_type_no_longer_binds_the_key(
    milvus_client: MilvusClient, collection_name: str, scans: list[str]
) -> None:
    store = open_store(milvus_client, collection_name)
    store.add_all(vectors(1), [TextSegment("y", {"k": 1})], ids=["2"])
    store.remove_all(["2"])
    store.add_all(vectors(1), [TextSegment("x", {"k": "a"})], ids=["1"])  # stale pair: probed
    assert search(store, metadata_key("k").is_equal_to("a")) == ["1"]  # stale pair: scanned
    assert len(scans) == 2


def test_collection_without_registry_still_checks_types(
    milvus_client: MilvusClient, collection_name: str, scans: list[str]
) -> None:
    store = open_store(milvus_client, collection_name)
    store.add_all(vectors(1), [TextSegment("x", {"k": "a"})], ids=["1"])
    milvus_client.drop_collection(registry_name(collection_name))  # as made before it existed
    legacy = open_store(milvus_client, collection_name)
    with pytest.raises(MetadataTypeError, match="'k'"):
        legacy.add_all(vectors(1), [TextSegment("y", {"k": 1})], ids=["2"])
    assert search(legacy, metadata_key("k").is_equal_to("a")) == ["1"]
    legacy.add_all(vectors(1), [TextSegment("z", {"j": "b"})], ids=["3"])
    assert search(legacy, metadata_key("j").is_equal_to("b")) == ["3"]
    assert len(scans) == 4  # every write probed and every filter scanned: no registry
    assert not milvus_client.has_collection(registry_name(collection_name))


def test_registry_names_are_valid_collection_names() -> None:
    for name in ("docs", "d" * 240, "d" * 255):
        side = registry_name(name)
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,254}", side), side
    assert registry_name("d" * 255) != registry_name("d" * 254 + "e")
