"""AzureAiSearchEmbeddingStore beyond the suites: the index it creates, ids Azure keys
cannot hold, batches, deep removal, the filters it sends, errors."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import numpy as np
import pytest
from azure.core.credentials import AzureKeyCredential
from azure.search.documents import SearchClient

from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding
from ragloom.core.errors import EmbeddingStoreError, MetadataTypeError
from ragloom.core.filters import MetadataFilterBuilder as key
from ragloom.core.stores.base import EmbeddingSearchRequest
from ragloom.retrievers.azure_ai_search import AzureAiSearchEmbeddingStore, MetadataFilterCompiler
from ragloom.retrievers.azure_ai_search.testing import SearchWireServer


@pytest.fixture
def service() -> Iterator[tuple[SearchWireServer, str]]:
    server = SearchWireServer()
    with server.running() as endpoint:
        yield server, endpoint


_MADE: list[AzureAiSearchEmbeddingStore] = []
"""The stores :func:`_store` made in the running test, closed after it."""


@pytest.fixture(autouse=True)
def _close_stores() -> Iterator[None]:
    yield
    while _MADE:
        _MADE.pop().close()


def _store(service: tuple[SearchWireServer, str], **kwargs: object) -> AzureAiSearchEmbeddingStore:
    """A store of the ``vectors`` index, closed when the test ends."""
    server, endpoint = service
    credential = AzureKeyCredential(server.api_key)
    _MADE.append(AzureAiSearchEmbeddingStore(endpoint, "vectors", credential, **kwargs))  # type: ignore[arg-type]
    return _MADE[-1]


def test_creates_the_index_with_a_vector_field_of_the_dimension(
    service: tuple[SearchWireServer, str],
) -> None:
    _store(service, dimension=3)
    definition = service[0].indexes["vectors"].definition
    assert definition is not None
    fields = {f["name"]: f for f in definition["fields"]}
    assert fields["id"]["key"] is True
    assert fields["content_vector"]["type"] == "Collection(Edm.Single)"
    assert fields["content_vector"]["dimensions"] == 3
    assert fields["content_vector"]["vectorSearchProfile"] == "ragloom-vector-profile"
    assert {f["name"] for f in fields["metadata"]["fields"]} == {
        "key",
        "type",
        "s",
        "n",
        "i",
        "b",
        "u",
    }
    [algorithm] = definition["vectorSearch"]["algorithms"]
    assert (algorithm["kind"], algorithm["hnswParameters"]["metric"]) == ("hnsw", "cosine")


def test_an_existing_index_is_reused_and_its_dimension_read(
    service: tuple[SearchWireServer, str],
) -> None:
    first = _store(service, dimension=3)
    first.add(Embedding([1.0, 0, 0]), TextSegment("kept", {"n": 1}), id="a")
    again = _store(service)  # no dimension: read from the index
    [match] = again.search(EmbeddingSearchRequest(Embedding([1.0, 0, 0]))).matches
    assert (match.embedding_id, match.embedded) == ("a", TextSegment("kept", {"n": 1}))
    with pytest.raises(EmbeddingStoreError, match="dimension 3, not 5"):
        _store(service, dimension=5)


def test_an_index_without_the_schema_is_refused() -> None:
    server = SearchWireServer("vectors", [{"id": "1", "content": "x"}])
    with server.running() as endpoint, pytest.raises(EmbeddingStoreError, match="schema"):
        AzureAiSearchEmbeddingStore(endpoint, "vectors", AzureKeyCredential(server.api_key))


def test_without_dimension_the_index_is_created_on_first_add(
    service: tuple[SearchWireServer, str],
) -> None:
    store = _store(service)
    assert store.search(EmbeddingSearchRequest(Embedding([1.0, 0]))).matches == []
    store.remove_all()
    assert "vectors" not in service[0].indexes
    store.add(Embedding([0.0, 1.0]))
    assert service[0].indexes["vectors"].vector_fields() == {"content_vector": 2}


@pytest.mark.parametrize("odd", ["a/b c#?", "ünï'code", "x" * 300, "=", "..", "a" + "\u2028"])
def test_ids_azure_keys_cannot_hold_round_trip(
    service: tuple[SearchWireServer, str], odd: str
) -> None:
    store = _store(service, dimension=2)
    store.add(Embedding([1.0, 0]), id=odd)
    [match] = store.search(EmbeddingSearchRequest(Embedding([1.0, 0]))).matches
    assert match.embedding_id == odd
    store.remove(odd)
    assert store.search(EmbeddingSearchRequest(Embedding([1.0, 0]))).matches == []


def test_an_id_too_long_for_a_key_is_refused_before_writing(
    service: tuple[SearchWireServer, str],
) -> None:
    store = _store(service, dimension=2)
    with pytest.raises(EmbeddingStoreError, match="too long"):
        store.add_all([Embedding([1.0, 0]), Embedding([0, 1.0])], ids=["ok", "x" * 800])
    assert service[0].indexes["vectors"].documents == {}


def test_writes_go_in_batches(service: tuple[SearchWireServer, str]) -> None:
    store = _store(service, dimension=2, batch_size=3)
    store.add_all([Embedding([1.0, float(i)]) for i in range(7)])
    batches = [r for r in service[0].requests if r["path"].endswith("search.index")]
    assert [len(r["body"]["value"]) for r in batches] == [3, 3, 1]
    assert {a["@search.action"] for r in batches for a in r["body"]["value"]} == {"upload"}


def test_removal_pages_past_1000_documents(service: tuple[SearchWireServer, str]) -> None:
    store = _store(service, dimension=2)
    vectors = [Embedding([1.0, float(i)]) for i in range(2300)]
    segments = [TextSegment(f"e{i}", {"even": i % 2 == 0}) for i in range(2300)]
    store.add_all(vectors, segments)
    store.remove_all(filter=key("even").is_equal_to(True))
    index = service[0].indexes["vectors"]
    assert len(index.documents) == 1150
    store.remove_all()
    assert index.documents == {}
    searches = [
        r["body"]
        for r in service[0].requests
        if r["path"].endswith("search.post.search") and "ne null" not in r["body"].get("filter", "")
    ]  # not the metadata-type probes of add_all
    assert searches[1]["filter"].startswith("(metadata/any(m: m/key eq 'even' and m/b eq true))")
    assert "id gt '" in searches[1]["filter"]  # keyset paging, no $skip limit


def test_filters_become_odata_over_the_metadata_collection() -> None:
    compile_ = MetadataFilterCompiler().compile
    u = uuid.UUID("11111111-1111-4111-8111-111111111111")
    assert compile_(key("lang").is_equal_to("it's")) == (
        "metadata/any(m: m/key eq 'lang' and m/s eq 'it''s')"
    )
    assert compile_(key("n").is_not_equal_to(2)) == (
        "(not metadata/any(m: m/key eq 'n') or "
        "metadata/any(m: m/key eq 'n' and (m/n ne null and m/n ne 2)))"
    )
    assert compile_(key("k").is_in(["a", "b,c"])) == (
        "metadata/any(m: m/key eq 'k' and search.in(m/s, 'a|b,c', '|'))"
    )
    assert compile_(key("u").is_equal_to(u)) == (
        f"metadata/any(m: m/key eq 'u' and (m/u eq '{u}' or m/s eq '{u}'))"
    )


def test_the_filter_is_applied_by_the_server_before_the_neighbours(
    service: tuple[SearchWireServer, str],
) -> None:
    store = _store(service, dimension=2)
    store.add_all(
        [Embedding([1.0, 0]), Embedding([0.9, 0.1]), Embedding([0, 1.0])],
        [TextSegment("a", {"t": "x"}), TextSegment("b", {"t": "y"}), TextSegment("c", {"t": "y"})],
        ids=["a", "b", "c"],
    )
    request = EmbeddingSearchRequest(Embedding([1.0, 0]), 1, filter=key("t").is_equal_to("y"))
    assert [m.embedding_id for m in store.search(request).matches] == ["b"]
    [body] = [r["body"] for r in service[0].requests if "vectorQueries" in (r["body"] or {})]
    assert body["vectorQueries"][0]["k"] == 1
    assert "m/s eq 'y'" in body["filter"]


def test_exhaustive_is_sent(service: tuple[SearchWireServer, str]) -> None:
    store = _store(service, dimension=2, exhaustive=True)
    store.add(Embedding([1.0, 0]))
    store.search(EmbeddingSearchRequest(Embedding([1.0, 0])))
    body = service[0].requests[-1]["body"]
    assert body["vectorQueries"][0]["exhaustive"] is True


def test_a_document_the_service_rejects_raises(service: tuple[SearchWireServer, str]) -> None:
    server, endpoint = service
    store = _store(service, dimension=2)
    client = SearchClient(endpoint, "vectors", AzureKeyCredential(server.api_key))
    results = client.upload_documents([{"id": "bad key!", "content_vector": [1.0, 0]}])
    assert [(r.succeeded, r.status_code) for r in results] == [(False, 400)]
    with pytest.raises(EmbeddingStoreError, match="rejected 1 of 1 documents"):
        store._index([{"id": "bad key!", "content_vector": [1.0, 0]}], "upload")


def test_service_errors_become_embedding_store_errors(
    service: tuple[SearchWireServer, str],
) -> None:
    server, endpoint = service
    with pytest.raises(EmbeddingStoreError, match="reading the index definition failed"):
        AzureAiSearchEmbeddingStore(endpoint, "vectors", AzureKeyCredential("wrong"), dimension=2)
    with pytest.raises(EmbeddingStoreError, match="creating the index"):
        AzureAiSearchEmbeddingStore(
            endpoint, "Bad_Name", AzureKeyCredential(server.api_key), dimension=2
        )
    store = _store(service, dimension=2)
    del server.indexes["vectors"]  # deleted behind the store's back
    with pytest.raises(EmbeddingStoreError, match="No index with the name 'vectors'"):
        store.search(EmbeddingSearchRequest(Embedding(np.ones(2))))


@pytest.mark.parametrize("bad", [{"dimension": 0}, {"batch_size": 1001}, {"batch_size": True}])
def test_settings_are_checked(
    service: tuple[SearchWireServer, str], bad: dict[str, object]
) -> None:
    with pytest.raises(EmbeddingStoreError):
        _store(service, **bad)


def test_a_mistyped_write_is_refused_by_one_probe_of_the_typed_fields(
    service: tuple[SearchWireServer, str],
) -> None:
    store = _store(service, dimension=2)
    store.add_all([Embedding([1.0, 0])], [TextSegment("a", {"tenant": "x", "n": 1})], ids=["a"])
    with pytest.raises(MetadataTypeError, match="'n' expects int/float values.*got str"):
        store.add_all([Embedding([0, 1.0])], [TextSegment("b", {"n": "one"})], ids=["b"])
    probe = [
        r["body"] for r in service[0].requests if "ne null" in (r["body"] or {}).get("filter", "")
    ]
    assert probe[-1]["filter"] == (
        "metadata/any(m: m/key eq 'n' and (m/b ne null or m/n ne null or m/u ne null))"
    )
    store.add_all([Embedding([0, 1.0])], [TextSegment("b", {"n": 2.5})], ids=["b"])  # a number
    declared = _store(service, dimension=2, metadata_schema={"tenant": int})
    with pytest.raises(MetadataTypeError, match="'tenant'"):
        declared.add_all([Embedding([0, 1.0])], [TextSegment("c", {"tenant": "x"})], ids=["c"])


def test_get_looks_ids_up_by_a_search_in_filter_on_the_key(
    service: tuple[SearchWireServer, str],
) -> None:
    store = _store(service, dimension=2)
    odd = ["a/b c#?", "ünï'code", "plain"]
    store.add_all([Embedding([1.0, float(i)]) for i in range(3)], ids=odd)
    before = len(service[0].requests)
    found = store.get(["plain", "missing", "a/b c#?"], embeddings=True)
    assert [(e.embedding_id, e.embedded) for e in found] == [("plain", None), ("a/b c#?", None)]
    assert found[0].embedding is not None
    assert found[0].embedding.vector.tolist() == [1.0, 2.0]
    [lookup] = [r["body"] for r in service[0].requests[before:]]
    assert lookup["filter"].startswith("search.in(id, '")
    assert lookup["filter"].endswith("', ',')")
    assert "content_vector" in lookup["select"]
    assert "content_vector" not in store_select(store, service, ["plain"])


def store_select(
    store: AzureAiSearchEmbeddingStore, service: tuple[SearchWireServer, str], ids: list[str]
) -> str:
    """The ``select`` of the lookup ``get(ids)`` (without vectors) sends."""
    before = len(service[0].requests)
    assert [e.embedding_id for e in store.get(ids)] == ids
    [lookup] = [r["body"] for r in service[0].requests[before:]]
    return str(lookup["select"])
