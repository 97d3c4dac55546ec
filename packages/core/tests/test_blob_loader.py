"""ragloom.core.loaders.blob: the object-store logic the cloud loaders share.

A dict-backed adapter stands in for a client here: these tests cover the shared logic
(filtering, size cap, failures, metadata, etags, concurrency), not a client; each cloud
package tests its adapter against a real server.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone

import pytest

from ragloom.core.errors import (
    DocumentLoadError,
    EmptyDocumentError,
    InvalidArgumentError,
    PluginError,
)
from ragloom.core.loaders.blob import (
    BucketNotFoundError,
    LoadedObjects,
    ObjectBody,
    ObjectInfo,
    ObjectNotFoundError,
    ObjectStoreAccessError,
    ObjectStoreDocumentLoader,
    ObjectStoreErrorKind,
    ObjectTooLargeError,
    normalize_etag,
    object_metadata,
)
from ragloom.core.parsers.text import TextDocumentParser


class ClientFailure(Exception):
    """What a client library would raise; ``kind`` is what it means."""

    def __init__(self, kind: ObjectStoreErrorKind | None) -> None:
        super().__init__(f"server said {kind}")
        self.kind = kind


class DictStore:
    """An ObjectStore over ``{bucket: {key: bytes}}``, paging 2 keys per listing call."""

    def __init__(self, buckets: dict[str, dict[str, bytes]], chunk: int = 3) -> None:
        self.buckets = buckets
        self.chunk = chunk
        self.forbidden: set[str] = set()
        self.content_types: dict[str, str] = {}
        self.opened: list[str] = []
        self.list_calls = 0
        self.active = 0
        self.peak = 0
        self.lock = threading.Lock()
        self.delay = 0.0

    def uri(self, bucket: str, key: str) -> str:
        return f"mem://{bucket}/{key}"

    def _bucket(self, bucket: str) -> dict[str, bytes]:
        if bucket not in self.buckets:
            raise ClientFailure(ObjectStoreErrorKind.NO_SUCH_BUCKET)
        return self.buckets[bucket]

    def list_objects(self, bucket: str, prefix: str) -> Iterator[ObjectInfo]:
        keys = sorted(k for k in self._bucket(bucket) if k.startswith(prefix))
        for start in range(0, len(keys), 2):
            self.list_calls += 1
            for key in keys[start : start + 2]:
                yield self._info(bucket, key)

    def _info(self, bucket: str, key: str) -> ObjectInfo:
        data = self.buckets[bucket][key]
        return ObjectInfo(
            key,
            len(data),
            f'"{hash(data) & 0xFFFF:x}"',
            None,
            self.content_types.get(key),
            datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC),
        )

    def open_object(self, bucket: str, key: str) -> ObjectBody:
        objects = self._bucket(bucket)
        if key in self.forbidden:
            raise ClientFailure(ObjectStoreErrorKind.ACCESS_DENIED)
        if key not in objects:
            raise ClientFailure(ObjectStoreErrorKind.NO_SUCH_OBJECT)
        with self.lock:
            self.opened.append(key)
            self.active += 1
            self.peak = max(self.peak, self.active)
        time.sleep(self.delay)
        with self.lock:
            self.active -= 1
        data = objects[key]
        chunks = (data[i : i + self.chunk] for i in range(0, len(data), self.chunk))
        return ObjectBody(self._info(bucket, key), chunks)

    def error_kind(self, error: Exception) -> ObjectStoreErrorKind | None:
        return error.kind if isinstance(error, ClientFailure) else None


@pytest.fixture
def store() -> DictStore:
    return DictStore(
        {
            "b": {
                "docs/a.md": b"# alpha",
                "docs/guides/b.md": b"# beta",
                "docs/c.txt": b"gamma",
                "docs/folder/": b"",
                "other/d.txt": b"delta",
            }
        }
    )


def loader_over(store: DictStore, **options: int) -> ObjectStoreDocumentLoader:
    return ObjectStoreDocumentLoader(store, service="Mem", **options)


def keys(documents: LoadedObjects) -> list[str]:
    return [str(d.metadata["key"]) for d in documents]


def test_lists_every_page_and_skips_folder_markers(store: DictStore) -> None:
    documents = loader_over(store).load_documents("b", parser=TextDocumentParser())
    assert keys(documents) == ["docs/a.md", "docs/c.txt", "docs/guides/b.md", "other/d.txt"]
    assert store.list_calls == 3
    assert documents.failures == []
    assert documents.unchanged == []


def test_prefix_and_glob(store: DictStore) -> None:
    loader = loader_over(store)
    assert keys(loader.load_documents("b", "docs/")) == [
        "docs/a.md",
        "docs/c.txt",
        "docs/guides/b.md",
    ]
    assert keys(loader.load_documents("b", glob="*.md")) == ["docs/a.md", "docs/guides/b.md"]
    assert keys(loader.load_documents("b", "docs/", glob="guides/*.md")) == ["docs/guides/b.md"]
    assert keys(loader.load_documents("b", "nothing/")) == []


def test_metadata_keys(store: DictStore) -> None:
    store.content_types["docs/c.txt"] = "text/plain"
    document = loader_over(store).load_document("b", "docs/c.txt")
    assert document.text == "gamma"
    assert dict(document.metadata) == {
        "url": "mem://b/docs/c.txt",
        "bucket": "b",
        "key": "docs/c.txt",
        "size": 5,
        "etag": f"{hash(b'gamma') & 0xFFFF:x}",
        "content_type": "text/plain",
        "last_modified": "2024-05-06T07:08:09+00:00",
    }


def test_metadata_times_become_utc_and_etags_lose_quotes() -> None:
    info = ObjectInfo(
        "k",
        etag='W/"abc"',
        last_modified=datetime(2024, 1, 1, 12, tzinfo=timezone(timedelta(hours=2))),
    )
    meta = object_metadata("b", info, "x://b/k")
    assert meta["last_modified"] == "2024-01-01T10:00:00+00:00"
    assert meta["etag"] == "abc"
    naive = object_metadata("b", ObjectInfo("k", last_modified=datetime(2024, 1, 1)), "u")
    assert naive["last_modified"] == "2024-01-01T00:00:00+00:00"
    assert normalize_etag('""') is None
    assert normalize_etag(None) is None


def test_charset_of_the_content_type_reaches_the_text_parser(store: DictStore) -> None:
    store.buckets["b"]["latin.txt"] = "déjà".encode("latin-1")
    store.content_types["latin.txt"] = "text/plain; charset=ISO-8859-1"
    assert loader_over(store).load_document("b", "latin.txt").text == "déjà"


def test_missing_bucket_and_object_name_them(store: DictStore) -> None:
    loader = loader_over(store)
    with pytest.raises(BucketNotFoundError, match="Mem bucket 'nope'"):
        loader.load_documents("nope")
    with pytest.raises(BucketNotFoundError, match="'nope'"):
        loader.load_document("nope", "k.txt")
    with pytest.raises(ObjectNotFoundError, match="mem://b/absent.txt: no such object"):
        loader.load_document("b", "absent.txt")


def test_unknown_client_errors_are_load_errors_naming_the_object(store: DictStore) -> None:
    def broken(bucket: str, key: str) -> ObjectBody:
        raise ClientFailure(None)

    store.open_object = broken  # type: ignore[method-assign]
    with pytest.raises(DocumentLoadError, match="mem://b/x: Mem error: server said None") as caught:
        loader_over(store).load_document("b", "x")
    assert isinstance(caught.value.__cause__, ClientFailure)


def test_bad_objects_are_failures_and_good_ones_kept(store: DictStore) -> None:
    store.buckets["b"]["docs/blank.txt"] = b"   "
    store.forbidden.add("docs/c.txt")
    documents = loader_over(store).load_documents("b", "docs/")
    assert keys(documents) == ["docs/a.md", "docs/guides/b.md"]
    failed = {f.source: type(f.error) for f in documents.failures}
    assert failed == {
        "mem://b/docs/blank.txt": EmptyDocumentError,
        "mem://b/docs/c.txt": ObjectStoreAccessError,
    }
    with pytest.raises(EmptyDocumentError, match="docs/blank.txt"):
        loader_over(store).load_documents("b", "docs/", strict=True)


def test_size_cap_without_fetching_listed_large_objects(store: DictStore) -> None:
    store.buckets["b"]["docs/big.txt"] = b"x" * 50
    loader = loader_over(store, max_object_size=10)
    documents = loader.load_documents("b", "docs/")
    assert "docs/big.txt" not in store.opened
    assert [f.source for f in documents.failures] == ["mem://b/docs/big.txt"]
    with pytest.raises(
        ObjectTooLargeError, match="mem://b/docs/big.txt: object too large .50 bytes"
    ):
        loader.load_document("b", "docs/big.txt")


def test_size_cap_while_streaming_when_the_size_is_unknown(store: DictStore) -> None:
    store.buckets["b"]["huge.txt"] = b"y" * 50
    original = store.open_object

    def sizeless(bucket: str, key: str) -> ObjectBody:
        body = original(bucket, key)
        return ObjectBody(ObjectInfo(key), body.chunks)

    store.open_object = sizeless  # type: ignore[method-assign]
    with pytest.raises(ObjectTooLargeError, match="more than 10 bytes"):
        loader_over(store, max_object_size=10).load_document("b", "huge.txt")


def test_known_etags_skip_unchanged_objects_without_fetching(store: DictStore) -> None:
    loader = loader_over(store)
    first = loader.load_documents("b", "docs/")
    known = {str(d.metadata["url"]): str(d.metadata["etag"]) for d in first}
    store.buckets["b"]["docs/c.txt"] = b"gamma, edited"
    store.opened.clear()
    second = loader.load_documents("b", "docs/", known_etags=known)
    assert keys(second) == ["docs/c.txt"]
    assert store.opened == ["docs/c.txt"]
    assert second.unchanged == ["mem://b/docs/a.md", "mem://b/docs/guides/b.md"]


def test_bulk_fetches_run_in_a_bounded_pool_and_keep_key_order(store: DictStore) -> None:
    store.buckets["many"] = {f"{i:02d}.txt": b"n%d" % i for i in range(20)}
    store.delay = 0.02
    documents = loader_over(store, concurrency=4).load_documents("many")
    assert keys(documents) == sorted(store.buckets["many"])
    assert 1 < store.peak <= 4


def test_plugin_errors_are_raised_not_reported(store: DictStore) -> None:
    class Broken:
        def parse(self, data: object, *, source: str | None = None) -> object:
            raise PluginError("two parsers claim .md")

    with pytest.raises(PluginError):
        loader_over(store).load_documents("b", parser=Broken())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "options", [{"max_object_size": 0}, {"concurrency": 0}, {"concurrency": True}]
)
def test_bad_settings_are_refused(store: DictStore, options: dict[str, int]) -> None:
    with pytest.raises(InvalidArgumentError, match=next(iter(options))):
        loader_over(store, **options)


def test_async_variant(store: DictStore) -> None:
    documents = asyncio.run(loader_over(store).aload_documents("b", glob="*.txt"))
    assert keys(documents) == ["docs/c.txt", "other/d.txt"]
