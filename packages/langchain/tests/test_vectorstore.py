"""RagloomVectorStore beyond LangChain's suite: filters, scores, MMR, ids, deletion, errors.

Compared with ragloom's own calls on the same store, so the adapter is shown to add
nothing and lose nothing.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from langchain_core.documents import Document as LcDocument

from ragloom.core.document import Document, TextSegment
from ragloom.core.errors import (
    InvalidArgumentError,
    InvalidFilterError,
    InvalidMetadataError,
    UnsupportedFilterError,
)
from ragloom.core.filters import metadata_key
from ragloom.core.ingestor import EmbeddingStoreIngestor
from ragloom.core.mmr import maximal_marginal_relevance
from ragloom.core.stores.base import EmbeddingSearchRequest
from ragloom.core.stores.in_memory import InMemoryEmbeddingStore
from ragloom.langchain import RagloomEmbeddings, RagloomVectorStore, to_ragloom_filter
from ragloom.testkit import FakeEmbeddingModel

TEXTS = [
    "the cat sat on the mat",
    "the cat sat on the hat",
    "a dog runs in the park",
    "dogs and cats play together",
    "stock prices fell sharply today",
    "the market rallied after the news",
]
METADATAS = [
    {"topic": "pets", "year": 2019, "lang": "en"},
    {"topic": "pets", "year": 2020, "lang": "en"},
    {"topic": "pets", "year": 2021, "lang": "de"},
    {"topic": "pets", "year": 2022, "lang": "fr"},
    {"topic": "money", "year": 2023, "lang": "en"},
    {"topic": "money", "year": 2024.5, "lang": "de"},
]


@pytest.fixture
def model() -> FakeEmbeddingModel:
    return FakeEmbeddingModel()


@pytest.fixture
def vectorstore(model: FakeEmbeddingModel) -> RagloomVectorStore:
    vectorstore = RagloomVectorStore(InMemoryEmbeddingStore(), RagloomEmbeddings(model))
    vectorstore.add_texts(TEXTS, METADATAS, ids=[f"id{i}" for i in range(len(TEXTS))])
    return vectorstore


def _ids(documents: list[LcDocument]) -> list[str | None]:
    return [document.id for document in documents]


def test_scores_and_order_are_ragloom_s(
    vectorstore: RagloomVectorStore, model: FakeEmbeddingModel
) -> None:
    scored = vectorstore.similarity_search_with_score("cat on a mat", k=4)
    direct = vectorstore.store.search(
        EmbeddingSearchRequest(model.embed("cat on a mat").embedding, max_results=4)
    )
    assert [(d.id, s) for d, s in scored] == [(m.embedding_id, m.score) for m in direct.matches]
    assert scored[0][0] == LcDocument(id="id0", page_content=TEXTS[0], metadata=METADATAS[0])
    relevance = vectorstore.similarity_search_with_relevance_scores("cat on a mat", k=4)
    assert relevance == scored


@pytest.mark.parametrize(
    ("filter", "expected"),
    [
        ({"topic": "money"}, {"id4", "id5"}),
        ({"year": {"$gte": 2021, "$lt": 2024}}, {"id2", "id3", "id4"}),
        ({"lang": {"$in": ["de", "fr"]}}, {"id2", "id3", "id5"}),
        ({"lang": {"$nin": ["de", "fr"]}, "topic": {"$ne": "money"}}, {"id0", "id1"}),
        ({"$or": [{"lang": "fr"}, {"year": {"$gt": 2024}}]}, {"id3", "id5"}),
        ({"$and": [{"topic": "pets"}, {"$not": {"lang": "en"}}]}, {"id2", "id3"}),
        ({"lang": {"$contains": "e"}}, {"id0", "id1", "id2", "id4", "id5"}),
        ('topic == "money" and year > 2023', {"id5"}),
        (metadata_key("year").is_less_than(2020), {"id0"}),
        ({}, {f"id{i}" for i in range(6)}),
    ],
)
def test_filters_in_every_form_match_ragloom_s(
    vectorstore: RagloomVectorStore, filter: object, expected: set[str]
) -> None:
    found = vectorstore.similarity_search("cat", k=10, filter=filter)  # type: ignore[arg-type]
    assert set(_ids(found)) == expected
    assert set(_ids(asyncio.run(vectorstore.asimilarity_search("cat", k=10, filter=filter)))) == (  # type: ignore[arg-type]
        expected
    )


def test_dict_filter_compiles_to_the_ragloom_filter() -> None:
    assert to_ragloom_filter({"a": 1, "b": {"$in": ["x", "y"]}}) == (
        metadata_key("a").is_equal_to(1) & metadata_key("b").is_in(["x", "y"])
    )


@pytest.mark.parametrize(
    ("filter", "error", "message"),
    [
        (lambda document: True, UnsupportedFilterError, "callable"),
        ({"year": {"$exists": True}}, UnsupportedFilterError, r"\$exists"),
        ({"$nor": [{"a": 1}]}, InvalidFilterError, r"\$nor"),
        ({"$or": {"a": 1}}, InvalidFilterError, "non-empty list"),
        ({"a": {"$in": "abc"}}, InvalidFilterError, "list of values"),
        ({"a": {}}, InvalidFilterError, "empty operator"),
        ({"a": [1, 2]}, InvalidFilterError, "'a'"),
        ("year >>= 3", InvalidFilterError, "column"),
        (42, InvalidFilterError, "int"),
    ],
)
def test_filters_that_do_not_map_are_refused(
    vectorstore: RagloomVectorStore, filter: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        vectorstore.similarity_search("cat", filter=filter)  # type: ignore[arg-type]


def test_mmr_is_ragloom_s_mmr_over_the_fetched_candidates(
    vectorstore: RagloomVectorStore, model: FakeEmbeddingModel
) -> None:
    query = model.embed("cat sat on the mat").embedding
    candidates = vectorstore.store.search(EmbeddingSearchRequest(query, max_results=5)).matches
    order = maximal_marginal_relevance(
        query.vector, np.stack([m.embedding.vector for m in candidates]), lambda_=0.2, max_results=3
    )
    expected = [candidates[i].embedding_id for i in order]
    found = vectorstore.max_marginal_relevance_search(
        "cat sat on the mat", k=3, fetch_k=5, lambda_mult=0.2
    )
    assert _ids(found) == expected
    # diversity at work: the near-duplicate second cat sentence is not picked second
    assert _ids(vectorstore.similarity_search("cat sat on the mat", k=2)) == ["id0", "id1"]
    assert _ids(found)[:2] != ["id0", "id1"]
    found_async = asyncio.run(
        vectorstore.amax_marginal_relevance_search(
            "cat sat on the mat", k=3, fetch_k=5, lambda_mult=0.2
        )
    )
    assert _ids(found_async) == expected
    retriever = vectorstore.as_retriever(
        search_type="mmr", search_kwargs={"k": 3, "fetch_k": 5, "lambda_mult": 0.2}
    )
    assert _ids(retriever.invoke("cat sat on the mat")) == expected


def test_mmr_respects_the_filter(vectorstore: RagloomVectorStore) -> None:
    found = vectorstore.max_marginal_relevance_search("cat", k=2, filter={"topic": "money"})
    assert set(_ids(found)) == {"id4", "id5"}


def test_get_by_ids_in_the_order_asked_without_missing_ones(
    vectorstore: RagloomVectorStore,
) -> None:
    found = vectorstore.get_by_ids(["id3", "nope", "id0", "id3"])
    assert found == [
        LcDocument(id="id3", page_content=TEXTS[3], metadata=METADATAS[3]),
        LcDocument(id="id0", page_content=TEXTS[0], metadata=METADATAS[0]),
    ]
    assert asyncio.run(vectorstore.aget_by_ids(["id5"]))[0].metadata == METADATAS[5]
    assert vectorstore.get_by_ids([]) == []


def test_a_fresh_adapter_over_a_filled_store_finds_by_id(
    vectorstore: RagloomVectorStore, model: FakeEmbeddingModel
) -> None:
    fresh = RagloomVectorStore(vectorstore.store, RagloomEmbeddings(model))
    assert _ids(fresh.get_by_ids(["id1"])) == ["id1"]


def test_get_by_ids_finds_entries_ragloom_wrote_and_reads_old_mirrored_ones(
    vectorstore: RagloomVectorStore, model: FakeEmbeddingModel
) -> None:
    store = vectorstore.store
    assert "langchain_id" not in store.get(["id0"])[0].embedded.metadata  # no mirror written
    vector = model.embed("ingested").embedding
    store.add_all([vector], [TextSegment("ingested", {"src": "a.md"})], ids=["ragloom-1"])
    store.add_all([vector], ids=["bare"])  # an embedding without a segment is no document
    # as the adapter's first release wrote it: the id mirrored in the metadata
    store.add_all([vector], [TextSegment("old", {"langchain_id": "old-1", "n": 1})], ids=["old-1"])
    found = vectorstore.get_by_ids(["bare", "old-1", "ragloom-1"])
    assert found == [
        LcDocument(id="old-1", page_content="old", metadata={"n": 1}),
        LcDocument(id="ragloom-1", page_content="ingested", metadata={"src": "a.md"}),
    ]
    assert asyncio.run(vectorstore.aget_by_ids(["old-1", "bare", "ragloom-1"])) == found


def test_delete_by_filter_and_the_guard_against_emptying(vectorstore: RagloomVectorStore) -> None:
    assert vectorstore.delete(filter={"topic": "pets"}) is True
    assert set(_ids(vectorstore.similarity_search("cat", k=10))) == {"id4", "id5"}
    asyncio.run(vectorstore.adelete(["id4"]))
    assert _ids(vectorstore.similarity_search("cat", k=10)) == ["id5"]
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        vectorstore.delete()
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        vectorstore.delete(["id5"], filter={"topic": "money"})
    assert _ids(vectorstore.similarity_search("cat", k=10)) == ["id5"]


def test_bad_input_is_refused_and_leaves_the_store_unchanged(
    vectorstore: RagloomVectorStore,
) -> None:
    with pytest.raises(InvalidMetadataError, match="langchain_id"):
        vectorstore.add_texts(["x"], [{"langchain_id": "mine"}])
    with pytest.raises(InvalidMetadataError, match="'tags'"):
        vectorstore.add_texts(["x", "y"], [{}, {"tags": ["a", "b"]}])
    with pytest.raises(InvalidArgumentError, match="2 metadatas for 1 texts"):
        vectorstore.add_texts(["x"], [{}, {}])
    with pytest.raises(InvalidArgumentError, match="unknown options"):
        vectorstore.similarity_search("cat", fliter={"topic": "pets"})
    assert len(vectorstore.similarity_search("cat", k=10)) == len(TEXTS)


def test_from_texts_fills_the_store_given(model: FakeEmbeddingModel) -> None:
    store = InMemoryEmbeddingStore()
    vectorstore = RagloomVectorStore.from_texts(
        ["alpha beta", "gamma delta"], RagloomEmbeddings(model), ids=["a", "b"], store=store
    )
    assert vectorstore.store is store
    assert _ids(vectorstore.similarity_search("gamma", k=1)) == ["b"]
    with pytest.raises(InvalidArgumentError, match="from_texts needs store="):
        RagloomVectorStore.from_texts(["alpha"], RagloomEmbeddings(model))


def test_entries_added_by_ragloom_are_searchable(model: FakeEmbeddingModel) -> None:
    store = InMemoryEmbeddingStore()
    EmbeddingStoreIngestor(store, model).ingest(Document("ragloom wrote this", {"k": 1}))
    found = RagloomVectorStore(store, RagloomEmbeddings(model)).similarity_search("ragloom", k=1)
    assert found[0].page_content == "ragloom wrote this"
    assert found[0].metadata["k"] == 1
