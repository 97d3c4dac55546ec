"""The author kit's foreign wrappers, driven by plain callables (no foreign library)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from ragloom.core.content import Content
from ragloom.core.document import Document, TextSegment
from ragloom.core.errors import (
    DocumentLoadError,
    EmbeddingModelError,
    InvalidMetadataError,
    RetrievalError,
)
from ragloom.core.kit.foreign import (
    ForeignEmbeddingModel,
    ForeignRetriever,
    convert_document,
    foreign_metadata,
)
from ragloom.core.loaders.result import LoadFailure
from ragloom.core.query import Query


def _vectors(texts: list[str]) -> Sequence[Sequence[float]]:
    return [[float(len(text)), 1.0] for text in texts]


async def _avectors(texts: list[str]) -> Sequence[Sequence[float]]:
    return _vectors(texts)


def test_embedding_model_calls_once_and_names_the_foreign_call_in_errors() -> None:
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> Sequence[Sequence[float]]:
        calls.append(texts)
        return _vectors(texts)

    model = ForeignEmbeddingModel(embed, _avectors, what="Theirs.embed", awhat="Theirs.aembed")
    result = model.embed_all(["ab", TextSegment("abcd")])
    assert [e.to_list() for e in result.embeddings] == [[2.0, 1.0], [4.0, 1.0]]
    assert calls == [["ab", "abcd"]]
    assert model.embed_all([]).embeddings == []
    assert len(calls) == 1
    assert asyncio.run(model.aembed_all(["abc"])).embeddings[0].to_list() == [3.0, 1.0]
    assert model.dimension == 2

    def broken(texts: list[str]) -> Sequence[Sequence[float]]:
        raise OSError("unreachable")

    with pytest.raises(EmbeddingModelError, match=r"^Theirs.embed failed: unreachable"):
        ForeignEmbeddingModel(broken, _avectors, what="Theirs.embed").embed_all(["x"])
    short = ForeignEmbeddingModel(lambda texts: [[1.0]], _avectors, what="Short")
    with pytest.raises(EmbeddingModelError, match="Short returned 1 embeddings for 2 texts"):
        short.embed_all(["a", "b"])
    nan = ForeignEmbeddingModel(lambda texts: [[float("nan")]], _avectors, what="NaN")
    with pytest.raises(EmbeddingModelError, match="NaN returned an invalid embedding"):
        nan.embed_all(["a"])


def test_retriever_converts_in_order_and_names_the_foreign_call_in_errors() -> None:
    def convert(item: str) -> Content:
        return Content(TextSegment(item))

    async def aretrieve(text: str) -> list[str]:
        raise TimeoutError("slow")

    retriever = ForeignRetriever(
        lambda text: [f"{text} 1", f"{text} 2"], aretrieve, convert, what="R.get", awhat="R.aget"
    )
    assert [c.text for c in retriever.retrieve(Query("q"))] == ["q 1", "q 2"]
    with pytest.raises(RetrievalError, match=r"^R.aget failed: slow"):
        asyncio.run(retriever.aretrieve(Query("q")))


def test_metadata_is_made_ragloom_typed_and_bad_documents_become_failures() -> None:
    assert foreign_metadata({"n": 1, "none": None, "tags": ["a", 1], "when": 2.5j}) == {
        "n": 1,
        "tags": '["a", 1]',
        "when": "2.5j",
    }
    with pytest.raises(InvalidMetadataError, match="non-empty string"):
        foreign_metadata({"": 1})
    documents: list[Document] = []
    failures: list[LoadFailure] = []
    items = [{"text": "ok", "meta": {"k": 1}}, {"text": "bad", "meta": {3: 1}}]
    for item in items:
        convert_document(
            item,
            lambda i: Document(i["text"], foreign_metadata(i["meta"])),
            lambda i: f"source-{i['text']}",
            documents,
            failures,
            strict=False,
        )
    assert [d.text for d in documents] == ["ok"]
    assert [f.source for f in failures] == ["source-bad"]
    with pytest.raises(DocumentLoadError, match="source-bad: metadata key"):
        convert_document(
            items[1],
            lambda i: Document(i["text"], foreign_metadata(i["meta"])),
            lambda i: f"source-{i['text']}",
            [],
            [],
            strict=True,
        )
