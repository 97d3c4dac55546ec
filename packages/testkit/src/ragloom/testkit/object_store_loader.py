"""ObjectStoreLoaderSuite: what every cloud object-store loader does the same way.

The cloud loaders (S3, Azure Blob, GCS, COS, ...) are adapters over core's shared
:mod:`ragloom.core.loaders.blob`; this suite checks, against each real server, that the
adapter lists every page, honours prefix and glob, reports the same metadata keys, maps
missing buckets and objects to the right errors, caps object sizes, keeps good objects
when bad ones fail, and skips unchanged objects by etag. The integration provides the
``object_store`` fixture: an :class:`ObjectStoreHarness` over a fresh, empty bucket.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any, Protocol

import pytest

from ragloom.core.errors import (
    BucketNotFoundError,
    DocumentParseError,
    EmptyDocumentError,
    ObjectNotFoundError,
    ObjectTooLargeError,
)
from ragloom.core.loaders.blob import (
    ObjectStoreDocumentLoader,
)
from ragloom.core.parsers.text import TextDocumentParser
from ragloom.testkit.suite import ConformanceSuite, if_fails

__all__ = ["ObjectStoreHarness", "ObjectStoreLoaderSuite"]

METADATA_KEYS = {"url", "bucket", "key", "size", "etag", "content_type", "last_modified"}


class ObjectStoreHarness(Protocol):
    """One fresh, empty bucket on the real server, and loaders over it."""

    bucket: str
    """The bucket (container) name."""

    def put(self, key: str, data: bytes, content_type: str | None = None) -> None:
        """Store ``data`` under ``key`` with the client library (not the loader)."""

    def etag(self, key: str) -> str:
        """The object's current etag, read with the client library."""

    def loader(self, **options: Any) -> ObjectStoreDocumentLoader:
        """A loader of the server; ``options`` are ``page_size`` and ``max_object_size``."""


def _keys(documents: list[Any]) -> list[str]:
    return [str(d.metadata["key"]) for d in documents]


class ObjectStoreLoaderSuite(ConformanceSuite, standard=True):
    """Listing, filtering, metadata, errors, size cap and incremental skip, on the server."""

    integration_fixtures = frozenset({"object_store"})

    @pytest.fixture
    def object_store(self) -> ObjectStoreHarness:
        raise NotImplementedError("provide an `object_store` fixture")

    @if_fails("the adapter must follow the listing's continuation tokens to the last page")
    def test_pagination(self, object_store: ObjectStoreHarness) -> None:
        names = [f"page/{i:02d}.txt" for i in range(23)]
        for i, name in enumerate(names):
            object_store.put(name, b"object %d" % i)
        loader = object_store.loader(page_size=5)
        assert [info.key for info in loader.list_objects(object_store.bucket)] == names
        documents = loader.load_documents(object_store.bucket)
        assert _keys(documents) == names
        assert documents[22].text == "object 22"

    @if_fails("prefix is passed to the server's listing; glob matches keys from the right")
    def test_prefix_and_glob(self, object_store: ObjectStoreHarness) -> None:
        for key in ("docs/a.md", "docs/guides/b.md", "docs/c.txt", "other/d.md"):
            object_store.put(key, b"# " + key.encode())
        loader, bucket = object_store.loader(), object_store.bucket
        assert _keys(loader.load_documents(bucket, "docs/")) == [
            "docs/a.md",
            "docs/c.txt",
            "docs/guides/b.md",
        ]
        assert _keys(loader.load_documents(bucket, glob="*.md")) == [
            "docs/a.md",
            "docs/guides/b.md",
            "other/d.md",
        ]
        assert _keys(loader.load_documents(bucket, "docs/", glob="guides/*.md")) == [
            "docs/guides/b.md"
        ]
        assert _keys(loader.load_documents(bucket, "nothing/")) == []

    @if_fails("every cloud loader sets the same metadata keys, read from the server")
    def test_metadata(self, object_store: ObjectStoreHarness) -> None:
        object_store.put("dir/note.txt", b"hello", "text/plain; charset=utf-8")
        loader = object_store.loader()
        document = loader.load_document(object_store.bucket, "dir/note.txt")
        meta = dict(document.metadata)
        assert set(meta) >= METADATA_KEYS
        assert meta["url"] == loader.uri(object_store.bucket, "dir/note.txt")
        assert meta["bucket"] == object_store.bucket
        assert meta["key"] == "dir/note.txt"
        assert meta["size"] == 5
        assert meta["etag"] == object_store.etag("dir/note.txt").strip('"')
        assert str(meta["content_type"]).startswith("text/plain")
        assert datetime.fromisoformat(str(meta["last_modified"])).utcoffset() is not None
        listed = loader.load_documents(object_store.bucket)[0]
        assert dict(listed.metadata) == meta

    @if_fails("the charset of the object's content type must reach the plain-text parser")
    def test_content_type_charset(self, object_store: ObjectStoreHarness) -> None:
        object_store.put("latin.txt", "déjà vu".encode("latin-1"), "text/plain; charset=iso-8859-1")
        assert object_store.loader().load_document(object_store.bucket, "latin.txt").text == (
            "déjà vu"
        )

    @if_fails("a missing bucket is a BucketNotFoundError naming it, for one and for all")
    def test_missing_bucket(self, object_store: ObjectStoreHarness) -> None:
        loader, missing = object_store.loader(), object_store.bucket + "-absent"
        with pytest.raises(BucketNotFoundError, match=missing):
            loader.load_documents(missing)
        with pytest.raises(BucketNotFoundError, match=missing):
            loader.load_document(missing, "a.txt")

    @if_fails("a missing object is an ObjectNotFoundError naming its URI")
    def test_missing_object(self, object_store: ObjectStoreHarness) -> None:
        object_store.put("present.txt", b"here")
        loader = object_store.loader()
        uri = loader.uri(object_store.bucket, "nope/missing.txt")
        with pytest.raises(ObjectNotFoundError, match=uri.replace(".", r"\.")):
            loader.load_document(object_store.bucket, "nope/missing.txt")

    @if_fails("bad objects go to failures naming their URI; good ones are kept; strict raises")
    def test_corrupt_objects_among_good_ones(self, object_store: ObjectStoreHarness) -> None:
        object_store.put("good.txt", b"good")
        object_store.put("blank.md", b"  \n")
        object_store.put("bad-utf8.txt", b"\xff\xfe\xfa broken")
        object_store.put("also-good.md", b"# fine")
        loader, bucket = object_store.loader(), object_store.bucket
        documents = loader.load_documents(bucket, parser=TextDocumentParser("utf-8"))
        assert _keys(documents) == ["also-good.md", "good.txt"]
        failed = {f.source: f.error for f in documents.failures}
        assert set(failed) == {loader.uri(bucket, "bad-utf8.txt"), loader.uri(bucket, "blank.md")}
        assert isinstance(failed[loader.uri(bucket, "blank.md")], EmptyDocumentError)
        assert isinstance(failed[loader.uri(bucket, "bad-utf8.txt")], DocumentParseError)
        with pytest.raises(DocumentParseError, match="bad-utf8.txt"):
            loader.load_documents(bucket, parser=TextDocumentParser("utf-8"), strict=True)

    @if_fails("objects over max_object_size fail with ObjectTooLargeError naming them")
    def test_size_cap(self, object_store: ObjectStoreHarness) -> None:
        object_store.put("big.txt", b"x" * 5000)
        object_store.put("small.txt", b"small")
        loader = object_store.loader(max_object_size=1000)
        documents = loader.load_documents(object_store.bucket)
        assert [d.text for d in documents] == ["small"]
        assert [type(f.error) for f in documents.failures] == [ObjectTooLargeError]
        assert documents.failures[0].source == loader.uri(object_store.bucket, "big.txt")
        with pytest.raises(ObjectTooLargeError, match="big.txt.*5000 bytes"):
            loader.load_document(object_store.bucket, "big.txt")

    @if_fails("objects whose etag is in known_etags are skipped, changed and new ones loaded")
    def test_incremental_skip_by_etag(self, object_store: ObjectStoreHarness) -> None:
        object_store.put("a.txt", b"one")
        object_store.put("b.txt", b"two")
        loader, bucket = object_store.loader(), object_store.bucket
        first = loader.load_documents(bucket)
        known = {str(d.metadata["url"]): str(d.metadata["etag"]) for d in first}
        object_store.put("b.txt", b"two, changed")
        object_store.put("c.txt", b"three")
        second = loader.load_documents(bucket, known_etags=known)
        assert _keys(second) == ["b.txt", "c.txt"]
        assert second.unchanged == [loader.uri(bucket, "a.txt")]

    @if_fails("aload_documents must give what load_documents gives")
    def test_async_load(self, object_store: ObjectStoreHarness) -> None:
        object_store.put("a.txt", b"async")
        documents = asyncio.run(object_store.loader().aload_documents(object_store.bucket))
        assert [d.text for d in documents] == ["async"]
