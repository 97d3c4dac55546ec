"""KeywordMirroredStore, the store `ragloom ingest` writes through, keeps the contract
(the testkit's store suite, get and positional filters included) and its keyword side in
step with the dense side."""

from __future__ import annotations

import pytest

from ragloom.core import BM25Index, InMemoryEmbeddingStore, TextSegment
from ragloom.core.filters import metadata_key
from ragloom.easy_rag.index import KeywordMirroredStore
from ragloom.testkit import EmbeddingStoreSuite, FakeEmbeddingModel


class TestKeywordMirroredStore(EmbeddingStoreSuite):
    @pytest.fixture
    def store(self) -> KeywordMirroredStore:
        return KeywordMirroredStore(InMemoryEmbeddingStore(), BM25Index())


def test_get_and_a_positional_filter_act_on_both_sides() -> None:
    model = FakeEmbeddingModel()
    store = KeywordMirroredStore(InMemoryEmbeddingStore(), BM25Index())
    segments = [TextSegment("red apples", {"k": "x"}), TextSegment("green pears", {"k": "y"})]
    store.add_all(model.embed_all(segments).embeddings, segments, ids=["a", "b"])
    assert [e.embedding_id for e in store.get(["b", "a", "b"])] == ["b", "a"]
    store.remove_all(metadata_key("k").is_equal_to("x"))  # type: ignore[arg-type]
    assert [e.embedding_id for e in store.get(["a", "b"])] == ["b"]
    assert [m.id for m in store.keywords.search("apples pears", max_results=10)] == ["b"]
