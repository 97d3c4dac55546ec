"""Injection, dimension checks, reopening, concurrent writers and connection settings."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import numpy as np
import pytest
from qdrant_client import QdrantClient, models

from ragloom.core import Embedding, EmbeddingSearchRequest, TextSegment, metadata_key
from ragloom.core.errors import EmbeddingStoreError
from ragloom.stores.qdrant import QdrantEmbeddingStore
from ragloom.stores.qdrant._journal import journal_path

NASTY = [
    "a.b",
    "a[0]",
    "a[]",
    'q"uote',
    "it's",
    "back\\slash",
    '\\"',
    "$uuid",
    "k:1",
    "*",
    "%s",
    "x; DROP",
    "{}",
    " ",
    "é😀",
    "\x00",
    "meta",
    "kinds",
    "rid",
]


def _all_ids(store: QdrantEmbeddingStore, condition: object = None) -> set[str]:
    request = EmbeddingSearchRequest(Embedding([1, 1, 1, 1]), 1000, filter=condition)  # type: ignore[arg-type]
    return {m.embedding_id for m in store.search(request).matches}


@pytest.mark.parametrize("nasty", NASTY)
def test_metacharacters_in_keys_values_and_ids_are_data(
    memory_store: QdrantEmbeddingStore, nasty: str
) -> None:
    metadata = {nasty: nasty, "plain": nasty, f"{nasty}.n": 5}
    bait = {"a": "", "b": "", "meta": "", "kinds": "", f"{nasty}x": nasty}
    ids = memory_store.add_all(
        [Embedding([1, 0, 0, 0]), Embedding([0, 1, 0, 0])],
        [TextSegment(nasty, metadata), TextSegment("bait", bait)],
        ids=[nasty if nasty else "empty", f"other-{nasty}"],
    )
    key = metadata_key(nasty)
    assert _all_ids(memory_store, key.is_equal_to(nasty)) == {ids[0]}
    assert _all_ids(memory_store, key.is_not_equal_to(nasty)) == {ids[1]}
    assert _all_ids(memory_store, key.is_in([nasty, "zz"])) == {ids[0]}
    assert _all_ids(memory_store, metadata_key("plain").contains_string(nasty)) == {ids[0]}
    assert _all_ids(memory_store, key.is_greater_than_or_equal_to(nasty)) == {ids[0]}
    assert _all_ids(memory_store, metadata_key(f"{nasty}.n").is_less_than(6)) == {ids[0]}
    match = memory_store.search(EmbeddingSearchRequest(Embedding([1, 0, 0, 0]), 1)).matches[0]
    assert match.embedding_id == ids[0]
    assert match.embedded == TextSegment(nasty, metadata)
    memory_store.remove_all(filter=key.is_equal_to(nasty))
    assert _all_ids(memory_store) == {ids[1]}
    memory_store.remove(ids[1])
    assert _all_ids(memory_store) == set()


def test_an_existing_collection_of_another_dimension_is_refused(store_path: Path) -> None:
    with QdrantEmbeddingStore("docs", path=store_path, dimension=4) as store:
        store.add(Embedding([1, 0, 0, 0]))
    with pytest.raises(EmbeddingStoreError, match=r"'docs' holds vectors of dimension 4, not 8"):
        QdrantEmbeddingStore("docs", path=store_path, dimension=8)
    with QdrantEmbeddingStore("docs", path=store_path) as store:  # dimension read back
        assert store.dimension == 4
        with pytest.raises(EmbeddingStoreError, match="dimension"):
            store.add(Embedding([1, 0, 0]))
        assert len(store) == 1


def test_a_collection_with_another_distance_or_named_vectors_is_refused() -> None:
    client = QdrantClient(location=":memory:")
    client.create_collection("dot", vectors_config=models.VectorParams(size=4, distance="Dot"))
    client.create_collection(
        "named", vectors_config={"v": models.VectorParams(size=4, distance="Cosine")}
    )
    with pytest.raises(EmbeddingStoreError, match="Dot distance"):
        QdrantEmbeddingStore("dot", client=client)
    with pytest.raises(EmbeddingStoreError, match="named vectors"):
        QdrantEmbeddingStore("named", client=client)
    with pytest.raises(EmbeddingStoreError, match="does not exist"):
        QdrantEmbeddingStore("absent", client=client, create_collection=False)


def test_the_collection_is_created_on_first_add_when_no_dimension_is_given() -> None:
    client = QdrantClient(location=":memory:")
    store = QdrantEmbeddingStore("lazy", client=client)
    assert store.dimension is None
    assert store.search(EmbeddingSearchRequest(Embedding([1, 0, 0]), 3)).matches == []
    store.remove_all()
    store.add(Embedding([1, 0, 0]), id="x")
    assert store.dimension == 3
    assert client.get_collection("lazy").config.params.vectors.size == 3  # type: ignore[union-attr]
    assert _ids(store, [1, 0, 0]) == ["x"]


def _ids(store: QdrantEmbeddingStore, query: list[float], k: int = 100) -> list[str]:
    return [
        m.embedding_id for m in store.search(EmbeddingSearchRequest(Embedding(query), k)).matches
    ]


def test_reopening_a_path_store_gives_the_same_results(store_path: Path) -> None:
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(30, 4)).astype(np.float32)
    vectors[10:15] = vectors[3]  # ties: insertion order must survive the reopen
    segments = [
        TextSegment(f"t{i}", {"n": i, "u": uuid.UUID(int=i), "f": i / 2}) for i in range(30)
    ]
    query = [float(x) for x in vectors[3]]
    with QdrantEmbeddingStore("docs", path=store_path, dimension=4) as store:
        store.add_all([Embedding(v) for v in vectors], segments, ids=[f"d{i}" for i in range(30)])
        before = store.search(EmbeddingSearchRequest(Embedding(query), 12)).matches
    with QdrantEmbeddingStore("docs", path=store_path) as store:
        after = store.search(EmbeddingSearchRequest(Embedding(query), 12)).matches
        assert [(m.embedding_id, m.score, m.embedded) for m in after] == [
            (m.embedding_id, m.score, m.embedded) for m in before
        ]
        store.add(Embedding(query), id="late")  # a new entry ties after the old ones
        assert _ids(store, query, 7)[-1] == "late"


def test_a_path_in_use_by_another_store_is_a_clear_error(store_path: Path) -> None:
    with (
        QdrantEmbeddingStore("docs", path=store_path, dimension=4),
        pytest.raises(EmbeddingStoreError, match="cannot open Qdrant at"),
    ):
        QdrantEmbeddingStore("docs", path=store_path, dimension=4)


@pytest.mark.parametrize("mode", ["memory", "path"])
def test_concurrent_writers_lose_nothing(store_path: Path, mode: str) -> None:
    if mode == "memory":
        store = QdrantEmbeddingStore("c", location=":memory:", dimension=4, batch_size=16)
    else:
        store = QdrantEmbeddingStore("c", path=store_path, dimension=4, batch_size=16)
    errors: list[BaseException] = []

    def writer(worker: int) -> None:
        try:
            rng = np.random.default_rng(worker)
            for batch in range(5):
                vectors = rng.normal(size=(20, 4)).astype(np.float32)
                ids = [f"w{worker}-{batch}-{i}" for i in range(20)]
                store.add_all(
                    [Embedding(v) for v in vectors],
                    [TextSegment(x, {"w": worker}) for x in ids],
                    ids=ids,
                )
                store.search(
                    EmbeddingSearchRequest(
                        Embedding(vectors[0]), 3, filter=metadata_key("w").is_equal_to(worker)
                    )
                )
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(store) == 6 * 5 * 20
    for worker in range(6):
        found = _all_ids(store, metadata_key("w").is_equal_to(worker))
        assert len(found) == 100
    store.close()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({}, "exactly one of client, url, path or location"),
        ({"url": "http://127.0.0.1:1", "path": "x"}, "got url, path"),
        ({"url": "ftp://host"}, "http"),
        ({"path": ":memory:", "api_key": "k"}, "api_key is only used with a server url"),
        ({"url": "http://127.0.0.1:1", "api_key": ""}, "api_key must be a non-empty str"),
        ({"location": ":memory:", "timeout": 0}, "timeout must be an int"),
        ({"client": "not a client"}, "client must be a QdrantClient"),
        ({"location": ":memory:", "dimension": 0}, "dimension must be an int"),
        ({"location": ":memory:", "batch_size": 0}, "batch_size must be an int"),
        ({"location": ":memory:", "collection": "a/b"}, "may not contain"),
        ({"location": ":memory:", "collection": ""}, "non-empty str"),
        ({"location": ":memory:", "exact": "yes"}, "exact must be a bool"),
    ],
)
def test_connection_settings_are_checked_at_the_edge(
    settings: dict[str, object], message: str
) -> None:
    with pytest.raises(EmbeddingStoreError, match=message):
        QdrantEmbeddingStore(**settings)  # type: ignore[arg-type]


def test_an_unreachable_server_is_a_clear_error() -> None:
    with pytest.raises(
        EmbeddingStoreError,
        match=r"127\.0\.0\.1:1.*checking the collection|checking the collection",
    ):
        QdrantEmbeddingStore("docs", url="http://127.0.0.1:1", dimension=4, timeout=2)


def test_a_file_as_path_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("x")
    with pytest.raises(EmbeddingStoreError, match="not a directory"):
        QdrantEmbeddingStore(path=file, dimension=4)


def test_a_client_passed_in_is_not_closed_by_the_store() -> None:
    client = QdrantClient(location=":memory:")
    with QdrantEmbeddingStore("mine", client=client, dimension=4) as store:
        store.add(Embedding([1, 0, 0, 0]))
    assert client.count("mine").count == 1


def test_damaged_batch_journal_is_a_clear_error(store_path: Path) -> None:
    """The undo journal of an unfinished add_all is read as data; damaged, it is named."""
    with QdrantEmbeddingStore("docs", path=store_path, dimension=4) as store:
        store.add(Embedding([1.0, 0.0, 0.0, 0.0]), id="kept")
    journal_path(store_path, "docs").write_text('{"collection": "docs", "pids": ', "utf-8")
    with pytest.raises(EmbeddingStoreError, match="batch journal .* is damaged"):
        QdrantEmbeddingStore("docs", path=store_path)
