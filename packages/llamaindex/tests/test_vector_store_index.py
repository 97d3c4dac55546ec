"""A LlamaIndex VectorStoreIndex over ragloom stores answers as ragloom does directly;
MetadataFilters filter as LlamaIndex's own SimpleVectorStore does."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core import Document as LiDocument
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
)

from ragloom.core.document import Document
from ragloom.core.errors import InvalidArgumentError, UnsupportedFilterError
from ragloom.core.ingestor import EmbeddingStoreIngestor
from ragloom.core.query import Query
from ragloom.core.retrievers.embedding_store import EmbeddingStoreContentRetriever
from ragloom.core.stores.in_memory import InMemoryEmbeddingStore
from ragloom.llamaindex import RagloomEmbedding, RagloomVectorStore
from ragloom.stores.qdrant import QdrantEmbeddingStore
from ragloom.testkit import FakeEmbeddingModel

TEXTS = [
    ("Paris is the capital of France.", {"country": "fr", "year": 2019}),
    ("Lyon is a large city in France.", {"country": "fr", "year": 2021}),
    ("Berlin is the capital of Germany.", {"country": "de", "year": 2020}),
    ("Munich hosts the Oktoberfest.", {"country": "de", "year": 2022}),
    ("Rome is the capital of Italy.", {"country": "it", "year": 2023}),
    ("The Colosseum stands in Rome.", {"country": "it", "year": 2018}),
]
QUESTIONS = ["capital of France", "a city in Germany", "the Colosseum in Rome", "capital"]


@pytest.fixture
def model() -> FakeEmbeddingModel:
    return FakeEmbeddingModel()


def _nodes() -> list[TextNode]:
    return [
        TextNode(id_=f"n{i}", text=text, metadata=metadata)
        for i, (text, metadata) in enumerate(TEXTS)
    ]


def _index(
    vector_store: RagloomVectorStore | SimpleVectorStore, model: FakeEmbeddingModel
) -> VectorStoreIndex:
    return VectorStoreIndex(
        _nodes(),
        storage_context=StorageContext.from_defaults(vector_store=vector_store),
        embed_model=RagloomEmbedding(model),
    )


@pytest.mark.parametrize("backend", ["in-memory", "qdrant"])
def test_index_top_k_equals_ragloom_s(model: FakeEmbeddingModel, backend: str) -> None:
    store = (
        InMemoryEmbeddingStore()
        if backend == "in-memory"
        else QdrantEmbeddingStore("llamaindex", location=":memory:", dimension=model.dimension)
    )
    index = _index(RagloomVectorStore(store), model)
    direct = EmbeddingStoreContentRetriever(store, model, max_results=3)
    for question in QUESTIONS:
        found = index.as_retriever(similarity_top_k=3).retrieve(question)
        expected = direct.retrieve(Query(question))
        assert [(n.node.node_id, n.node.get_content(), n.score) for n in found] == [
            (c.embedding_id, c.text, c.score) for c in expected
        ]
        assert found[0].node.metadata == dict(TEXTS[int(found[0].node.node_id[1:])][1])
    async_found = asyncio.run(index.as_retriever(similarity_top_k=3).aretrieve(QUESTIONS[0]))
    assert [n.node.node_id for n in async_found] == [
        c.embedding_id for c in direct.retrieve(Query(QUESTIONS[0]))
    ]


def test_ranking_and_scores_equal_llamaindex_s_own_store(model: FakeEmbeddingModel) -> None:
    """Same nodes at the same cosines: LlamaIndex's similarity is the cosine, ragloom's
    relevance is (cosine + 1) / 2. (Exact ties, which the hashing model makes when the
    metadata text dominates, are broken by insertion order in ragloom, by heap order in
    SimpleVectorStore: so pairs are compared, sorted.)"""
    ours = _index(RagloomVectorStore(InMemoryEmbeddingStore()), model)
    theirs = _index(SimpleVectorStore(), model)
    for question in QUESTIONS:
        found = ours.as_retriever(similarity_top_k=6).retrieve(question)
        expected = theirs.as_retriever(similarity_top_k=6).retrieve(question)
        assert sorted((round(n.score or 0, 9), n.node.node_id) for n in found) == sorted(
            (round(((n.score or 0) + 1) / 2, 9), n.node.node_id) for n in expected
        )
        assert [n.score for n in found] == sorted((n.score or 0 for n in found), reverse=True)


FILTERS = [
    MetadataFilters(filters=[MetadataFilter(key="country", value="fr")]),
    MetadataFilters(
        filters=[
            MetadataFilter(key="year", value=2019, operator=FilterOperator.GT),
            MetadataFilter(key="year", value=2022, operator=FilterOperator.LTE),
        ]
    ),
    MetadataFilters(
        filters=[
            MetadataFilter(key="country", value=["de", "it"], operator=FilterOperator.IN),
            MetadataFilter(key="year", value=2020, operator=FilterOperator.LT),
        ],
        condition=FilterCondition.OR,
    ),
    MetadataFilters(
        filters=[
            MetadataFilter(key="country", value=["fr"], operator=FilterOperator.NIN),
            MetadataFilter(key="year", value=2023, operator=FilterOperator.NE),
        ]
    ),
    MetadataFilters(
        filters=[MetadataFilter(key="country", value="d", operator=FilterOperator.TEXT_MATCH)]
    ),
    MetadataFilters(
        filters=[
            MetadataFilter(key="country", value="fr"),
            MetadataFilter(key="year", value=2022, operator=FilterOperator.GTE),
        ],
        condition=FilterCondition.NOT,
    ),
    MetadataFilters(filters=[MetadataFilter(key="missing", value="x", operator=FilterOperator.NE)]),
]


@pytest.mark.parametrize("filters", FILTERS)
def test_metadata_filters_select_what_simple_vector_store_selects(
    model: FakeEmbeddingModel, filters: MetadataFilters
) -> None:
    ours = _index(RagloomVectorStore(InMemoryEmbeddingStore()), model)
    theirs = _index(SimpleVectorStore(), model)
    found = ours.as_retriever(similarity_top_k=6, filters=filters).retrieve("capital")
    expected = theirs.as_retriever(similarity_top_k=6, filters=filters).retrieve("capital")
    assert [n.node.node_id for n in found] == [n.node.node_id for n in expected]
    assert found  # every filter above matches something


def test_nested_filters(model: FakeEmbeddingModel) -> None:
    index = _index(RagloomVectorStore(InMemoryEmbeddingStore()), model)
    nested = MetadataFilters(
        filters=[
            MetadataFilter(key="country", value="it"),
            MetadataFilters(
                filters=[
                    MetadataFilter(key="year", value=2018),
                    MetadataFilter(key="country", value="fr"),
                ],
                condition=FilterCondition.OR,
            ),
        ]
    )
    found = index.as_retriever(similarity_top_k=6, filters=nested).retrieve("capital")
    assert [n.node.node_id for n in found] == ["n5"]


@pytest.mark.parametrize(
    "operator",
    [FilterOperator.ANY, FilterOperator.ALL, FilterOperator.CONTAINS, FilterOperator.IS_EMPTY],
)
def test_filters_without_a_ragloom_equivalent_are_refused(
    model: FakeEmbeddingModel, operator: FilterOperator
) -> None:
    index = _index(RagloomVectorStore(InMemoryEmbeddingStore()), model)
    filters = MetadataFilters(
        filters=[MetadataFilter(key="country", value=["fr"], operator=operator)]
    )
    with pytest.raises(UnsupportedFilterError, match=operator.value):
        index.as_retriever(filters=filters).retrieve("capital")


def test_delete_by_document_and_by_node(model: FakeEmbeddingModel) -> None:
    store = InMemoryEmbeddingStore()
    vector_store = RagloomVectorStore(store)
    index = VectorStoreIndex.from_documents(
        [],
        storage_context=StorageContext.from_defaults(vector_store=vector_store),
        embed_model=RagloomEmbedding(model),
    )
    index.insert(LiDocument(text="first document about cats", doc_id="doc-a"))
    index.insert(LiDocument(text="second document about dogs", doc_id="doc-b"))
    assert len(store) == 2
    index.delete_ref_doc("doc-a")
    assert [n.node.ref_doc_id for n in index.as_retriever().retrieve("cats")] == ["doc-b"]
    [node] = index.as_retriever().retrieve("dogs")
    vector_store.delete_nodes([node.node.node_id])
    assert len(store) == 0
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        vector_store.delete_nodes()


def test_doc_ids_restrict_a_query(model: FakeEmbeddingModel) -> None:
    store = InMemoryEmbeddingStore()
    vector_store = RagloomVectorStore(store)
    nodes = _nodes()
    for node in nodes:
        node.embedding = model.embed(node.get_content()).embedding.to_list()
    nodes[0].relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id="doc-x")
    nodes[4].relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id="doc-x")
    vector_store.add(nodes)
    query = VectorStoreQuery(
        query_embedding=model.embed("capital").embedding.to_list(),
        similarity_top_k=6,
        doc_ids=["doc-x"],
    )
    assert sorted(vector_store.query(query).ids or []) == ["n0", "n4"]
    with pytest.raises(InvalidArgumentError, match="hybrid"):
        vector_store.query(
            VectorStoreQuery(
                query_embedding=query.query_embedding, mode=VectorStoreQueryMode.HYBRID
            )
        )


def test_segments_written_by_ragloom_are_queryable(model: FakeEmbeddingModel) -> None:
    store = InMemoryEmbeddingStore()
    EmbeddingStoreIngestor(store, model).ingest(Document("written by ragloom", {"k": 1}))
    index = VectorStoreIndex.from_vector_store(
        RagloomVectorStore(store), embed_model=RagloomEmbedding(model)
    )
    [found] = index.as_retriever(similarity_top_k=1).retrieve("ragloom")
    assert found.node.get_content() == "written by ragloom"
    assert found.node.metadata["k"] == 1


@pytest.mark.parametrize("backend", ["in-memory", "qdrant"])
def test_node_ids_restrict_a_query_as_in_simple_vector_store(
    model: FakeEmbeddingModel, backend: str
) -> None:
    store = (
        InMemoryEmbeddingStore()
        if backend == "in-memory"
        else QdrantEmbeddingStore("node_ids", location=":memory:", dimension=model.dimension)
    )
    ours, theirs = RagloomVectorStore(store), SimpleVectorStore()
    nodes = _nodes()
    for node in nodes:
        node.embedding = model.embed(node.get_content()).embedding.to_list()
    ours.add(nodes)
    theirs.add(nodes)
    vector = model.embed("capital").embedding.to_list()
    everything = ours.query(VectorStoreQuery(query_embedding=vector, similarity_top_k=6))
    full_scores = dict(zip(everything.ids or [], everything.similarities or [], strict=True))
    for node_ids, top_k, filters in [
        (["n5", "n0", "missing", "n3", "n0"], 2, None),
        (["n1", "n2", "n3", "n4"], 4, FILTERS[0]),
        (["n2"], 3, None),
    ]:
        query = VectorStoreQuery(
            query_embedding=vector, similarity_top_k=top_k, node_ids=node_ids, filters=filters
        )
        found = ours.query(query)
        expected = theirs.query(query)
        assert sorted(found.ids or []) == sorted(expected.ids or [])
        assert found.similarities == sorted(found.similarities or [], reverse=True)
        for node_id, score in zip(found.ids or [], found.similarities or [], strict=True):
            assert score == full_scores[node_id]  # the store's own exact score
        assert [n.node_id for n in found.nodes or []] == found.ids
        async_found = asyncio.run(ours.aquery(query))
        assert async_found.ids == found.ids
        assert async_found.similarities == found.similarities


def test_get_nodes_reads_nodes_by_id(model: FakeEmbeddingModel) -> None:
    store = InMemoryEmbeddingStore()
    vector_store = RagloomVectorStore(store)
    nodes = _nodes()
    for node in nodes:
        node.embedding = model.embed(node.get_content()).embedding.to_list()
    vector_store.add(nodes)
    store.add(model.embed("bare").embedding, id="bare")  # no segment: no node
    found = vector_store.get_nodes(["n4", "missing", "bare", "n1", "n4"])
    assert [(n.node_id, n.get_content(), n.metadata) for n in found] == [
        ("n4", TEXTS[4][0], TEXTS[4][1]),
        ("n1", TEXTS[1][0], TEXTS[1][1]),
    ]
    french = vector_store.get_nodes(["n4", "n1", "n0"], filters=FILTERS[0])
    assert [n.node_id for n in french] == ["n1", "n0"]
    assert [n.node_id for n in asyncio.run(vector_store.aget_nodes(["n2", "n0"]))] == ["n2", "n0"]
    with pytest.raises(InvalidArgumentError, match="node_ids"):
        vector_store.get_nodes(filters=FILTERS[0])
