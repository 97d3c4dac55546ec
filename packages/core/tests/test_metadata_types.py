"""One type per metadata key per store: core's shared write-side check."""

from __future__ import annotations

import enum
import uuid

import pytest

from ragloom.core import (
    Embedding,
    InMemoryEmbeddingStore,
    InvalidArgumentError,
    MetadataTypeError,
    TextSegment,
)
from ragloom.core.stores.metadata_types import batch_kinds, metadata_schema


class Color(enum.StrEnum):
    RED = "red"


class Level(enum.IntEnum):
    ONE = 1


def test_kinds_of_a_batch_group_numbers_and_subclasses() -> None:
    rows = [{"n": 1, "c": Color.RED}, {"n": 2.5, "c": "blue", "l": Level.ONE}, {}]
    assert batch_kinds(rows) == {"n": ("number", 0), "c": ("str", 0), "l": ("number", 1)}


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"k": 1}, {"k": True}], r"segment 1: .*'k' expects int/float .*segment 0.*got bool"),
        ([{"k": "a"}, {}, {"k": uuid.UUID(int=1)}], r"segment 2: .*'k'.*str.*uuid.UUID"),
    ],
)
def test_a_batch_disagreeing_with_itself_is_refused(
    rows: list[dict[str, object]], message: str
) -> None:
    with pytest.raises(MetadataTypeError, match=message):
        batch_kinds(rows)  # type: ignore[arg-type]


def test_a_declaration_binds_the_first_write() -> None:
    declared = metadata_schema({"year": int, "tenant": str})
    assert declared == {"year": "number", "tenant": "str"}
    with pytest.raises(MetadataTypeError, match=r"segment 0: metadata key 'year' is declared"):
        batch_kinds([{"year": "2020"}], declared)
    store = InMemoryEmbeddingStore(metadata_schema={"year": int})
    with pytest.raises(MetadataTypeError, match="'year'"):
        store.add(Embedding([1.0, 0.0]), TextSegment("x", {"year": "2020"}))
    assert len(store) == 0


@pytest.mark.parametrize("schema", [{"k": list}, {"": str}, {"k": "str"}, ["k"]])
def test_bad_declarations_are_refused(schema: object) -> None:
    with pytest.raises(InvalidArgumentError, match="metadata_schema"):
        metadata_schema(schema)  # type: ignore[arg-type]


def test_a_saved_store_keeps_its_key_types(tmp_path: object) -> None:
    store = InMemoryEmbeddingStore()
    store.add(Embedding([1.0, 0.0]), TextSegment("a", {"tenant": "a"}))
    store.save(tmp_path)  # type: ignore[arg-type]
    again = InMemoryEmbeddingStore.load(tmp_path)  # type: ignore[arg-type]
    with pytest.raises(MetadataTypeError, match=r"'tenant' expects str.*got int/float"):
        again.add(Embedding([1.0, 0.0]), TextSegment("b", {"tenant": 7}))


def test_merging_stores_with_other_key_types_is_refused() -> None:
    first, second = InMemoryEmbeddingStore(), InMemoryEmbeddingStore()
    first.add(Embedding([1.0, 0.0]), TextSegment("a", {"tenant": "a"}))
    second.add(Embedding([0.0, 1.0]), TextSegment("b", {"tenant": 7}))
    with pytest.raises(MetadataTypeError, match="'tenant'"):
        InMemoryEmbeddingStore.merge(first, second)
    assert len(InMemoryEmbeddingStore.merge(first, first)) == 1


def test_the_ingestor_fails_the_mistyped_document_alone() -> None:
    from ragloom.core import Document, EmbeddingStoreIngestor, document_splitters
    from ragloom.testkit import FakeEmbeddingModel

    store = InMemoryEmbeddingStore()
    documents = [
        Document("first text", {"tenant": "a"}),
        Document("second text", {"tenant": 7}),
        Document("third text", {"tenant": "c"}),
    ]
    splitter = document_splitters.recursive(300, 0)  # no splitter plugin needed
    result = EmbeddingStoreIngestor(store, FakeEmbeddingModel(), document_splitter=splitter).ingest(
        documents
    )
    assert [type(outcome.error) for outcome in result.failures] == [MetadataTypeError]
    assert len(store) == 2
