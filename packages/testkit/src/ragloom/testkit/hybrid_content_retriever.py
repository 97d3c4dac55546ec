"""HybridContentRetrieverSuite: the contract of a retriever that indexes segments for dense
*and* keyword search in one backend and fuses both rankings.

Core's :class:`~ragloom.core.HybridContentRetriever` fuses two separate retrievers; a
backend with both searches built in (Milvus's BM25 function, Qdrant's sparse vectors)
offers one retriever that indexes, filters and removes for both at once. The suite checks
that each ranking finds what the other misses, that filters and removals reach both, and
it runs :class:`~ragloom.testkit.ContentRetrieverSuite` on it. The integration provides
one fixture, ``harness``, a :class:`HybridRetrieverHarness`::

    class TestMyHybrid(HybridContentRetrieverSuite):
        @pytest.fixture
        def harness(self, minilm):
            return MyHarness(minilm)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import pytest

from ragloom.core.content import Content
from ragloom.core.document import Document, TextSegment
from ragloom.core.embedding import EmbeddingModel
from ragloom.core.errors import EmbeddingStoreError, InvalidFilterError
from ragloom.core.filters import Filter, metadata_key
from ragloom.core.query import Query, QueryMetadata
from ragloom.testkit.content_retriever import ContentRetrieverSuite
from ragloom.testkit.fake_embedding_model import FakeEmbeddingModel
from ragloom.testkit.suite import if_fails

__all__ = ["DOCS", "HybridContentRetrieverSuite", "HybridRetriever", "HybridRetrieverHarness"]

#: Error codes a keyword ranking tells apart and a dense one blurs, and plain prose.
DOCS: dict[str, str] = {
    "auth": "Sessions end after an hour; code E4711 then asks the user to sign in again.",
    "disk": "Error E4117 is raised when the disk is full.",
    "net": "Error E4771 is raised when the network is down.",
    "perm": "Error E7411 is raised when permission is denied.",
    "cats": "Felines sleep most of the day and hunt small animals at night.",
    "cars": "An automobile engine turns fuel into motion through combustion.",
    "rain": "Precipitation forms when water vapour condenses in clouds.",
}
_TENANT = metadata_key("tenant")


class HybridRetriever(Protocol):
    """A ContentRetriever that indexes for dense and keyword search in one backend."""

    filter: Any  # a Filter, a function of the Query giving one, or None

    def add_all(
        self, segments: Sequence[TextSegment], ids: Sequence[str] | None = None
    ) -> list[str]:
        """Embed and index ``segments`` (replacing entries with the same ids); their ids."""

    def remove_all(self, ids: Iterable[str] | None = None, *, filter: Filter | None = None) -> None:
        """Remove the given ids, the entries matching ``filter``, or (neither) everything."""

    def retrieve(self, query: Query) -> list[Content]:
        """The fused dense and keyword matches of ``query``, best first."""


class HybridRetrieverHarness(Protocol):
    """Bridges the suite to one backend's hybrid retriever."""

    #: A real sentence embedding model (the suite checks what dense search alone misses).
    semantic_model: EmbeddingModel

    def retriever(
        self, embedding_model: EmbeddingModel, *, max_results: int, filter: Filter | None = None
    ) -> HybridRetriever:
        """The retriever under test over a fresh, empty index, with these settings."""

    def legs(self, retriever: HybridRetriever, text: str) -> tuple[list[str], list[str]]:
        """The entry ids the dense ranking alone and the keyword ranking alone give for
        ``text`` (up to 10 each, best first), asked of the backend directly."""


def ids_of(
    retriever: HybridRetriever, text: str, metadata: QueryMetadata | None = None
) -> set[str]:
    """The entry ids a retrieval returns."""
    query = Query(text) if metadata is None else Query(text, metadata)
    return {content.metadata["embedding_id"] for content in retriever.retrieve(query)}


def tagged(harness: HybridRetrieverHarness, filter: Filter | None = None) -> HybridRetriever:
    """Four entries over two tenants; two mention the code E4711."""
    retriever = harness.retriever(FakeEmbeddingModel(16), max_results=10, filter=filter)
    retriever.add_all(
        [
            TextSegment("code E4711 for tenant a", {"tenant": "a", "n": 1}),
            TextSegment("code E4711 for tenant b", {"tenant": "b", "n": 2}),
            TextSegment("plain memo for tenant a", {"tenant": "a", "n": 3}),
            TextSegment("plain memo for tenant b", {"tenant": "b", "n": 4}),
        ],
        ids=["a1", "b1", "a2", "b2"],
    )
    return retriever


class HybridContentRetrieverSuite(ContentRetrieverSuite, standard=True):
    """Each ranking finds what the other misses; filters and removals reach both."""

    integration_fixtures = frozenset({"harness"})

    @pytest.fixture
    def harness(self) -> HybridRetrieverHarness:
        raise NotImplementedError("provide a `harness` fixture (a HybridRetrieverHarness)")

    @pytest.fixture
    def retriever(self, harness: HybridRetrieverHarness, corpus: list[Document]) -> Any:
        """The retriever over the ContentRetrieverSuite corpus."""
        retriever = harness.retriever(FakeEmbeddingModel(64), max_results=5)
        retriever.add_all([document.to_text_segment() for document in corpus])
        return retriever

    @pytest.fixture
    def docs(self, harness: HybridRetrieverHarness) -> HybridRetriever:
        """:data:`DOCS` indexed with the harness's semantic model, ids the keys."""
        retriever = harness.retriever(harness.semantic_model, max_results=len(DOCS))
        retriever.add_all(
            [TextSegment(text, {"topic": key}) for key, text in DOCS.items()], ids=list(DOCS)
        )
        return retriever

    @if_fails("the keyword ranking (BM25 or sparse) must be fused in: an exact code must win")
    def test_exact_identifier_found_that_dense_alone_misses(
        self, harness: HybridRetrieverHarness, docs: HybridRetriever
    ) -> None:
        dense, keyword = harness.legs(docs, "E4711")
        assert dense[0] != "auth"  # dense alone misses the code
        assert keyword == ["auth"]
        top = docs.retrieve(Query("E4711"))[0]
        assert top.text_segment.metadata["topic"] == "auth"
        assert top.metadata["embedding_id"] == "auth"

    @if_fails("the dense ranking must be fused in: a paraphrase with no shared term must win")
    def test_paraphrase_found_that_keyword_alone_misses(
        self, harness: HybridRetrieverHarness, docs: HybridRetriever
    ) -> None:
        query = "kitties nap through daytime"
        dense, keyword = harness.legs(docs, query)
        assert "cats" not in keyword  # no shared term
        assert dense[0] == "cats"
        assert docs.retrieve(Query(query))[0].text_segment.metadata["topic"] == "cats"

    @if_fails("add_all with an existing id must replace its text in both indexes")
    def test_add_replaces_by_id(self, harness: HybridRetrieverHarness) -> None:
        retriever = harness.retriever(FakeEmbeddingModel(8), max_results=10)
        retriever.add_all([TextSegment("old text here")], ids=["x"])
        retriever.add_all([TextSegment("new words now")], ids=["x"])
        assert [c.text for c in retriever.retrieve(Query("words"))] == ["new words now"]
        assert harness.legs(retriever, "old text") == (["x"], [])

    @if_fails(
        "the filter (static or a function of the Query) must restrict both rankings, and "
        "its values must be sent as values (never spliced into a query language)"
    )
    def test_filter_applies_to_both_rankings(self, harness: HybridRetrieverHarness) -> None:
        retriever = tagged(harness, _TENANT.is_equal_to("a"))
        assert ids_of(retriever, "E4711") == {"a1", "a2"}  # b's E4711 is kept out of both
        retriever.filter = lambda query: _TENANT.is_equal_to(query.metadata.chat_memory_id)
        assert ids_of(retriever, "E4711", QueryMetadata(chat_memory_id="b")) == {"b1", "b2"}
        retriever.filter = metadata_key("n").is_greater_than(1) & _TENANT.is_not_equal_to("b")
        assert ids_of(retriever, "E4711") == {"a2"}
        retriever.filter = metadata_key("n").is_greater_than(2) & _TENANT.is_equal_to("b")
        assert ids_of(retriever, "E4711") == {"b2"}
        retriever.filter = _TENANT.is_greater_than("a")  # str order: maybe resolved in Python
        assert ids_of(retriever, "E4711 memo") == {"b1", "b2"}
        for nothing in (_TENANT.is_equal_to("nobody"), _TENANT.is_greater_than("b")):
            retriever.filter = nothing
            assert retriever.retrieve(Query("E4711")) == []
        retriever.filter = _TENANT.is_equal_to('a" or id != "')  # a value, not syntax
        assert retriever.retrieve(Query("E4711")) == []

    @if_fails("a filter of the wrong type for stored values must raise InvalidFilterError")
    def test_filter_type_mismatch_raises_like_the_store(
        self, harness: HybridRetrieverHarness
    ) -> None:
        retriever = tagged(harness, _TENANT.is_equal_to(1))
        with pytest.raises(InvalidFilterError, match="tenant"):
            retriever.retrieve(Query("E4711"))

    @if_fails("remove_all by ids, by filter or of everything must reach both indexes")
    def test_remove_by_ids_filter_and_all(self, harness: HybridRetrieverHarness) -> None:
        retriever = tagged(harness)

        def legs(text: str) -> tuple[set[str], set[str]]:
            dense, keyword = harness.legs(retriever, text)
            return set(dense), set(keyword)

        retriever.remove_all(["a1", "missing"])
        assert legs("E4711 code") == ({"b1", "a2", "b2"}, {"b1"})
        retriever.remove_all(filter=_TENANT.is_equal_to("b"))
        assert legs("E4711 code memo") == ({"a2"}, {"a2"})
        assert ids_of(retriever, "memo") == {"a2"}
        with pytest.raises(EmbeddingStoreError, match="ids or a filter"):
            retriever.remove_all(["a2"], filter=metadata_key("n").is_equal_to(3))
        retriever.remove_all(filter=_TENANT.is_greater_than("a"))  # str order: nothing
        assert ids_of(retriever, "memo") == {"a2"}
        retriever.remove_all()
        assert retriever.retrieve(Query("memo")) == []
        assert legs("memo") == (set(), set())
