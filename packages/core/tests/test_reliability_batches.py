"""One failing file or document never costs the batch its good ones (issue 16, item 1)."""

import os
import uuid
from pathlib import Path
from typing import BinaryIO, ClassVar

import pytest

from ragloom.core import (
    BM25Index,
    BM25IndexError,
    Document,
    DocumentParseError,
    Embedding,
    EmbeddingStoreError,
    EmbeddingStoreIngestor,
    FileSystemDocumentLoader,
    InMemoryEmbeddingStore,
    TextSegment,
    document_splitters,
)
from ragloom.core.ingestor import _ID_NAMESPACE, segment_id
from ragloom.core.parsers.base import DocumentParser, read_all
from ragloom.core.splitters.base import DocumentSplitter
from ragloom.testkit import FakeEmbeddingModel


class FragileParser(DocumentParser):
    """Text, except that a file containing ``boom`` hits a parser bug."""

    extensions: ClassVar[tuple[str, ...]] = (".txt",)

    def parse(self, data: bytes | BinaryIO, *, source: str | None = None) -> Document:
        text = read_all(data).decode()
        if "boom" in text:
            raise RecursionError("maximum recursion depth exceeded")
        return Document(text)


def test_loader_reports_any_parser_exception_and_keeps_the_rest(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("fine")
    (tmp_path / "b.txt").write_text("boom")
    (tmp_path / "c.txt").write_text("also fine")
    loaded = FileSystemDocumentLoader.load_documents(tmp_path, FragileParser())
    assert [d.text for d in loaded] == ["fine", "also fine"]
    (failure,) = loaded.failures
    assert isinstance(failure.error, DocumentParseError)
    assert "b.txt" in str(failure.error)
    assert "RecursionError" in str(failure.error)
    with pytest.raises(DocumentParseError, match=r"b\.txt"):
        FileSystemDocumentLoader.load_documents(tmp_path, FragileParser(), strict=True)


class FragileSplitter(DocumentSplitter):
    """Splits like ``recursive(60, 0)`` but fails on a document containing ``boom``."""

    def split(self, document: Document) -> list[TextSegment]:
        if "boom" in document.text:
            raise MemoryError("splitter ran out")
        return document_splitters.recursive(60, 0).split(document)


def test_ingestor_keeps_going_when_one_document_fails() -> None:
    store = InMemoryEmbeddingStore()
    docs = [
        Document(text, {"document_id": name})
        for name, text in (("a", "alpha text"), ("b", "boom"), ("c", "gamma text"))
    ]
    result = EmbeddingStoreIngestor(
        store, FakeEmbeddingModel(8), document_splitter=FragileSplitter(), batch_size=1
    ).ingest(docs)
    assert [o.document_id for o in result.outcomes] == ["a", "b", "c"]
    (failure,) = result.failures
    assert failure.document_id == "b"
    assert "MemoryError" in str(failure.error)
    assert len(store) == 2


def test_undecodable_file_name_is_ingested_with_escaped_metadata(tmp_path: Path) -> None:
    bad = os.fsdecode(b"bad_\xff.txt")  # a lone surrogate, as Python decodes it
    (tmp_path / bad).write_text("text of a file whose name is not UTF-8")
    (tmp_path / "good.txt").write_text("a good file")
    docs = FileSystemDocumentLoader.load_documents(tmp_path)
    assert sorted(d.metadata["file_name"] for d in docs) == ["bad_\\xff.txt", "good.txt"]
    store = InMemoryEmbeddingStore()
    result = EmbeddingStoreIngestor(
        store, FakeEmbeddingModel(8), document_splitter=document_splitters.recursive(60, 0)
    ).ingest(docs)
    assert not result.failures
    assert len(store) == 2
    assert segment_id("file:/x/\udcff", 0) != segment_id("file:/x/\udcfe", 0)
    assert segment_id("a", 1) == str(uuid.uuid5(_ID_NAMESPACE, "a#1"))


@pytest.mark.parametrize(
    "segment",
    [
        TextSegment("bad \udcff text"),
        TextSegment("ok", {"file_name": "bad_\udcff.txt"}),
        TextSegment("ok", {"bad\ud800key": "v"}),
    ],
)
def test_every_store_refuses_lone_surrogates_alike(tmp_path: Path, segment: TextSegment) -> None:
    store = InMemoryEmbeddingStore()
    store.add(Embedding([1.0, 0.0]), TextSegment("kept"))
    with pytest.raises(EmbeddingStoreError, match="not valid Unicode"):
        store.add_all([Embedding([0.0, 1.0])], [segment])
    store.save(tmp_path / "store")  # what it accepted, it can write
    assert len(InMemoryEmbeddingStore.load(tmp_path / "store")) == 1
    with pytest.raises(BM25IndexError, match="not valid Unicode"):
        BM25Index().add_all([segment])
