"""ContentRetrieverSuite: the contract every ContentRetriever over a corpus passes unchanged.

The suite supplies ``corpus``, five short documents on distinct topics, each with a
``topic`` metadata entry. Provide one fixture, ``retriever``, that indexes that corpus
(request ``corpus`` in your fixture) and returns the retriever under test::

    class TestMyRetriever(ContentRetrieverSuite):
        @pytest.fixture
        def retriever(self, corpus):
            return MyRetriever.from_documents(corpus)
"""

from __future__ import annotations

import pytest

from ragloom.core.content import Content
from ragloom.core.document import Document, TextSegment
from ragloom.core.query import Query
from ragloom.core.retrievers.base import ContentRetriever
from ragloom.testkit.suite import ConformanceSuite, if_fails

__all__ = ["CORPUS", "ContentRetrieverSuite"]

CORPUS: dict[str, str] = {
    "astronomy": "Telescopes observe distant galaxies, nebulae and planets orbiting other stars.",
    "baking": "Knead the bread dough, let the yeast rise, then bake the loaf in a hot oven.",
    "sailing": "The sailboat tacked upwind while the crew trimmed the mainsail and jib.",
    "chess": "The grandmaster sacrificed a knight to open the king's file for the rooks.",
    "volcanoes": "Magma rises through the volcano and erupts as lava, ash and volcanic gas.",
}
QUESTIONS: dict[str, str] = {
    "astronomy": "which telescopes observe distant galaxies",
    "baking": "how long should bread dough rise before you bake the loaf",
    "sailing": "how does a sailboat crew trim the mainsail",
    "chess": "why did the grandmaster sacrifice a knight",
    "volcanoes": "how does magma erupt from a volcano as lava",
}


class ContentRetrieverSuite(ConformanceSuite, standard=True):
    """Relevance order, the right document first, provenance kept, repeatable results."""

    integration_fixtures = frozenset({"retriever"})

    @pytest.fixture
    def corpus(self) -> list[Document]:
        return [Document(text, {"topic": topic}) for topic, text in CORPUS.items()]

    @pytest.fixture
    def retriever(self, corpus: list[Document]) -> ContentRetriever:
        raise NotImplementedError("provide a `retriever` fixture over `corpus`")

    @if_fails("the retriever must implement the ragloom ContentRetriever protocol")
    def test_is_a_content_retriever(self, retriever: ContentRetriever) -> None:
        assert isinstance(retriever, ContentRetriever)

    @pytest.mark.parametrize("topic", sorted(QUESTIONS))
    @if_fails(
        "the best match must come first with its segment and metadata: check scoring and ordering"
    )
    def test_most_relevant_document_comes_first(
        self, retriever: ContentRetriever, topic: str
    ) -> None:
        contents = retriever.retrieve(Query(QUESTIONS[topic]))
        assert contents, f"no content retrieved for {QUESTIONS[topic]!r}"
        assert all(
            isinstance(c, Content) and isinstance(c.text_segment, TextSegment) for c in contents
        )
        assert contents[0].text_segment.metadata.get("topic") == topic
        assert CORPUS[topic].split()[0] in contents[0].text

    @if_fails("contents must be sorted by score, best first")
    def test_contents_are_ordered_by_score(self, retriever: ContentRetriever) -> None:
        contents = retriever.retrieve(Query("distant planets and volcanic lava"))
        scores = [c.score for c in contents if c.score is not None]
        assert scores == sorted(scores, reverse=True)

    @if_fails("the same query must return the same contents in the same order (break ties stably)")
    def test_retrieval_is_repeatable(self, retriever: ContentRetriever) -> None:
        query = Query("bread and yeast")
        first = [c.text for c in retriever.retrieve(query)]
        assert first == [c.text for c in retriever.retrieve(query)]

    @if_fails("a query matching nothing must return a list (maybe empty), not raise")
    def test_unrelated_query_does_not_fail(self, retriever: ContentRetriever) -> None:
        contents = retriever.retrieve(Query("zyxwvut qwertyuiop"))
        assert isinstance(contents, list)
