"""Small-to-big retrieval: parent-document, sentence-window and auto-merging retrieval, from
ingestion through the embedding store to contents whose offsets cite the original text."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from ragloom.core import (
    MATCHED_SPANS,
    AutoMergingRetriever,
    Content,
    Document,
    DocumentByParagraphSplitter,
    DocumentBySentenceSplitter,
    DocumentSplitter,
    EmbeddingStoreContentRetriever,
    EmbeddingStoreIngestor,
    InMemoryEmbeddingStore,
    InMemoryParentStore,
    ParentChildSplitter,
    ParentDocumentRetriever,
    ParentStore,
    Query,
    SentenceWindowRetriever,
    SentenceWindowSplitter,
    TextSegment,
)
from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError
from ragloom.core.parent_store import CHILD_COUNT, PARENT_ID
from ragloom.core.splitters.sentence_window import WINDOW, WINDOW_END, WINDOW_START
from ragloom.testkit.fake_embedding_model import FakeEmbeddingModel

SOLAR = (
    "The Sun is a star at the centre of the Solar System. It is a nearly perfect ball of "
    "hot plasma. Its core fuses hydrogen into helium.\n\n"
    "Mercury is the smallest planet. It orbits closest to the Sun. A year on Mercury lasts "
    "88 days.\n\n"
    "Jupiter is the largest planet. Its Great Red Spot is a storm bigger than Earth."
)
BAKING = (
    "Bread needs flour, water, salt and yeast. Knead the dough until it is smooth.\n\n"
    "Let the dough rise for an hour. Bake the loaf in a hot oven until golden."
)
DOCUMENTS = [
    Document(SOLAR, {"file_name": "solar.txt", "document_id": "solar"}),
    Document(BAKING, {"file_name": "baking.txt", "document_id": "baking"}),
]
TEXTS = {"solar": SOLAR, "baking": BAKING}


def sentences() -> DocumentBySentenceSplitter:
    """Children of one sentence each (no two sentences here fit in 60 characters)."""
    return DocumentBySentenceSplitter(60, 0)


def paragraphs() -> DocumentByParagraphSplitter:
    """Parents of one paragraph each."""
    return DocumentByParagraphSplitter(140, 0)


class Listed:
    """A ContentRetriever returning given contents, to drive merge rules exactly."""

    def __init__(self, contents: list[Content]) -> None:
        self.contents = contents

    def retrieve(self, query: Query) -> list[Content]:
        return list(self.contents)


def assert_cites(content: Content) -> None:
    """The content's text and matched spans are exact slices of its original document."""
    meta = content.text_segment.metadata
    text = TEXTS[str(meta["document_id"])]
    assert text[int(meta["start"]) : int(meta["end"])] == content.text
    for start, end in content.metadata.get(MATCHED_SPANS, ()):
        assert int(meta["start"]) <= start < end <= int(meta["end"])


def ingest(
    splitter: DocumentSplitter,
) -> tuple[InMemoryEmbeddingStore, FakeEmbeddingModel]:
    store, model = InMemoryEmbeddingStore(), FakeEmbeddingModel()
    EmbeddingStoreIngestor(store, model, document_splitter=splitter).ingest(DOCUMENTS)
    return store, model


# --- ParentChildSplitter -------------------------------------------------------------------


def test_children_link_to_parents_and_every_offset_is_exact() -> None:
    parents = InMemoryParentStore()
    splitter = ParentChildSplitter(sentences(), parents, parent_splitters=[paragraphs()])
    children = splitter.split(DOCUMENTS[0])
    assert [c.text for c in children][:3] == [
        "The Sun is a star at the centre of the Solar System.",
        "It is a nearly perfect ball of hot plasma.",
        "Its core fuses hydrogen into helium.",
    ]
    assert [c.metadata["index"] for c in children] == list(range(len(children)))
    found = parents.get_all({str(c.metadata[PARENT_ID]) for c in children})
    assert len(found) == len(parents) == 3  # the three paragraphs
    for child in children:
        assert SOLAR[int(child.metadata["start"]) : int(child.metadata["end"])] == child.text
        parent = found[str(child.metadata[PARENT_ID])]
        assert parent.metadata["start"] <= child.metadata["start"]
        assert child.metadata["end"] <= parent.metadata["end"]
    for parent in found.values():
        assert SOLAR[int(parent.metadata["start"]) : int(parent.metadata["end"])] == parent.text
        assert parent.metadata[CHILD_COUNT] == sum(
            c.metadata[PARENT_ID] == id for c in children for id in [_id_of(found, parent)]
        )
        assert parent.metadata["file_name"] == "solar.txt"


def _id_of(parents: dict[str, TextSegment], parent: TextSegment) -> str:
    return next(id for id, p in parents.items() if p is parent)


def test_without_parent_splitters_the_parent_is_the_whole_document() -> None:
    parents = InMemoryParentStore()
    children = ParentChildSplitter(sentences(), parents).split(DOCUMENTS[1])
    (parent,) = parents.get_all({str(c.metadata[PARENT_ID]) for c in children}).values()
    assert parent.text == BAKING
    assert (parent.metadata["start"], parent.metadata["end"]) == (0, len(BAKING))
    assert parent.metadata[CHILD_COUNT] == len(children) == 4


def test_levels_chain_to_the_top_and_ids_are_stable_per_version() -> None:
    parents = InMemoryParentStore()
    splitter = ParentChildSplitter(
        sentences(), parents, parent_splitters=[DocumentByParagraphSplitter(1000, 0), paragraphs()]
    )
    children = splitter.split(DOCUMENTS[0])
    top_id = next(iter(parents.get_all([str(children[0].metadata[PARENT_ID])]).values())).metadata[
        PARENT_ID
    ]
    top = parents.get_all([str(top_id)])[str(top_id)]
    assert top.text == SOLAR
    assert PARENT_ID not in top.metadata
    assert top.metadata[CHILD_COUNT] == 3
    again = splitter.split(DOCUMENTS[0])
    assert [c.metadata[PARENT_ID] for c in again] == [c.metadata[PARENT_ID] for c in children]
    edited = splitter.split(Document(SOLAR + " Saturn has rings.", DOCUMENTS[0].metadata))
    assert edited[0].metadata[PARENT_ID] != children[0].metadata[PARENT_ID]


def test_blank_documents_give_no_children_and_no_parents() -> None:
    parents = InMemoryParentStore()
    assert ParentChildSplitter(sentences(), parents).split(Document("  \n ")) == []
    assert len(parents) == 0


class Offsetless:
    """A splitter that records no offsets."""

    def split(self, document: Document) -> list[TextSegment]:
        return [TextSegment(document.text, {"index": 0})]

    def split_all(self, documents: list[Document]) -> list[TextSegment]:
        return [s for d in documents for s in self.split(d)]


def test_splitters_without_offsets_are_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="start/end"):
        ParentChildSplitter(Offsetless(), InMemoryParentStore()).split(DOCUMENTS[1])
    with pytest.raises(InvalidArgumentTypeError):
        ParentChildSplitter(sentences(), {})  # type: ignore[arg-type]


# --- InMemoryParentStore ---------------------------------------------------------------------


def test_parent_store_saves_and_loads_every_value_type(tmp_path: Path) -> None:
    store = InMemoryParentStore()
    assert isinstance(store, ParentStore)
    key = uuid.uuid4()
    store.put_all({"p": TextSegment("text", {"u": key, "i": 2, "f": 2.0, "b": True, "s": "x"})})
    store.save(tmp_path / "parents.json")
    loaded = InMemoryParentStore.load(tmp_path / "parents.json")
    parent = loaded.get_all(["p", "unknown"])
    assert list(parent) == ["p"]
    assert parent["p"] == TextSegment("text", {"u": key, "i": 2, "f": 2.0, "b": True, "s": "x"})
    assert type(parent["p"].metadata["f"]) is float
    assert type(parent["p"].metadata["i"]) is int
    loaded.remove_all(["p", "unknown"])
    assert loaded.get_all(["p"]) == {}
    (tmp_path / "other.json").write_text('{"format": "something else"}')
    with pytest.raises(InvalidArgumentError):
        InMemoryParentStore.load(tmp_path / "other.json")


# --- ParentDocumentRetriever -----------------------------------------------------------------


def test_parent_document_retrieval_returns_each_parent_once_citing_the_matches() -> None:
    parents = InMemoryParentStore()
    store, model = ingest(
        ParentChildSplitter(sentences(), parents, parent_splitters=[paragraphs()])
    )
    children = EmbeddingStoreContentRetriever(store, model, max_results=4)
    retriever = ParentDocumentRetriever(children, parents)
    query = Query("Mercury is the smallest planet closest to the Sun")
    hits = children.retrieve(query)
    results = retriever.retrieve(query)
    assert results[0].text.startswith("Mercury is the smallest planet.")
    assert len({r.text for r in results}) == len(results) < len(hits)
    for result in results:
        assert_cites(result)
    # The best child's score and id, and its span first among the matched ones.
    best = hits[0].text_segment.metadata
    assert results[0].score == hits[0].score
    assert results[0].embedding_id == hits[0].embedding_id
    assert results[0].metadata[MATCHED_SPANS][0] == (best["start"], best["end"])
    assert ParentDocumentRetriever(children, parents, max_results=1).retrieve(query) == results[:1]
    assert asyncio.run(retriever.aretrieve(query)) == results


def test_contents_without_a_stored_parent_pass_unchanged() -> None:
    stray = Content(TextSegment("stray", {PARENT_ID: "missing"}), {"score": 0.9})
    plain = Content.from_text("plain")
    retriever = ParentDocumentRetriever(Listed([stray, plain]), InMemoryParentStore())
    assert retriever.retrieve(Query("q")) == [stray, plain]
    with pytest.raises(InvalidArgumentError):
        ParentDocumentRetriever(Listed([]), InMemoryParentStore(), max_results=0)


# --- sentence window -------------------------------------------------------------------------


def test_sentence_windows_hold_the_neighbouring_sentences_and_their_offsets() -> None:
    segments = SentenceWindowSplitter(1).split(DOCUMENTS[1])
    assert [s.text for s in segments] == [
        "Bread needs flour, water, salt and yeast.",
        "Knead the dough until it is smooth.",
        "Let the dough rise for an hour.",
        "Bake the loaf in a hot oven until golden.",
    ]
    second = segments[1].metadata
    assert second[WINDOW] == BAKING[: BAKING.index("an hour.") + len("an hour.")]
    for segment in segments:
        meta = segment.metadata
        assert BAKING[int(meta["start"]) : int(meta["end"])] == segment.text
        assert BAKING[int(meta[WINDOW_START]) : int(meta[WINDOW_END])] == meta[WINDOW]
        assert meta["file_name"] == "baking.txt"
    assert segments[0].metadata[WINDOW_START] == 0
    assert segments[-1].metadata[WINDOW_END] == len(BAKING)


def test_sentence_windows_are_capped_keeping_the_sentence() -> None:
    segments = SentenceWindowSplitter(3, max_window_chars=80).split(DOCUMENTS[1])
    for segment in segments:
        window = str(segment.metadata[WINDOW])
        assert segment.text in window
        assert len(window) <= 80 or window == segment.text
    assert SentenceWindowSplitter(0).split(DOCUMENTS[1])[2].metadata[WINDOW] == (
        "Let the dough rise for an hour."
    )
    assert SentenceWindowSplitter().split(Document(" \n")) == []
    with pytest.raises(InvalidArgumentError):
        SentenceWindowSplitter(-1)


def test_sentence_window_retrieval_answers_with_the_window_citing_the_sentence() -> None:
    store, model = ingest(SentenceWindowSplitter(1))
    sentences_found = EmbeddingStoreContentRetriever(store, model, max_results=3)
    retriever = SentenceWindowRetriever(sentences_found)
    query = Query("How long does the dough rise?")
    hit = sentences_found.retrieve(query)[0]
    result = retriever.retrieve(query)[0]
    assert hit.text == "Let the dough rise for an hour."
    assert result.text == (
        "Knead the dough until it is smooth.\n\nLet the dough rise for an hour. "
        "Bake the loaf in a hot oven until golden."
    )
    assert_cites(result)
    assert result.metadata[MATCHED_SPANS] == (
        (hit.text_segment.metadata["start"], hit.text_segment.metadata["end"]),
    )
    assert result.score == hit.score
    assert WINDOW not in result.text_segment.metadata
    assert asyncio.run(retriever.aretrieve(query)) == retriever.retrieve(query)
    plain = Content.from_text("no window")
    assert SentenceWindowRetriever(Listed([plain])).retrieve(query) == [plain]


# --- auto-merging ----------------------------------------------------------------------------


def hierarchy() -> tuple[InMemoryParentStore, list[TextSegment]]:
    """The solar document as document > paragraphs > sentences."""
    parents = InMemoryParentStore()
    splitter = ParentChildSplitter(
        sentences(), parents, parent_splitters=[DocumentByParagraphSplitter(1000, 0), paragraphs()]
    )
    return parents, splitter.split(DOCUMENTS[0])


def scored(segments: list[TextSegment], *positions: int) -> list[Content]:
    """The children at ``positions``, as retrieved contents with falling scores."""
    return [Content(segments[p], {"score": 0.9 - 0.1 * rank}) for rank, p in enumerate(positions)]


def test_more_than_ratio_of_a_parents_children_merge_into_it_at_the_best_rank() -> None:
    parents, children = hierarchy()  # paragraphs of 3, 3 and 2 sentences
    contents = scored(children, 6, 1, 0)  # one sentence of paragraph 3, two of paragraph 1
    results = AutoMergingRetriever(Listed(contents), parents).retrieve(Query("q"))
    assert [r.text for r in results] == [children[6].text, SOLAR[: SOLAR.index("\n\n")]]
    merged = results[1]
    assert merged.score == pytest.approx(0.8)  # the best of its children
    assert merged.metadata[MATCHED_SPANS] == tuple(
        (c.metadata["start"], c.metadata["end"]) for c in (children[1], children[0])
    )
    for result in results:
        assert_cites(result)
    cut = AutoMergingRetriever(Listed(contents), parents, max_results=1)
    assert cut.retrieve(Query("q")) == results[:1]


def test_at_most_ratio_of_the_children_do_not_merge() -> None:
    parents, children = hierarchy()
    contents = scored(children, 0, 3)  # one of three sentences in two paragraphs
    assert AutoMergingRetriever(Listed(contents), parents).retrieve(Query("q")) == contents
    strict = AutoMergingRetriever(Listed(scored(children, 0, 1)), parents, ratio=0.7)
    assert [r.text for r in strict.retrieve(Query("q"))] == [children[0].text, children[1].text]


def test_merging_climbs_levels_and_drops_what_a_merged_parent_contains() -> None:
    parents, children = hierarchy()
    # Paragraphs 1 and 2 merge; then 2 of the document's 3 paragraphs merge into it, which
    # also contains the lone sentence of paragraph 3.
    contents = scored(children, 6, 0, 1, 3, 4)
    results = AutoMergingRetriever(Listed(contents), parents).retrieve(Query("q"))
    assert [r.text for r in results] == [SOLAR]
    assert results[0].text_segment.metadata["start"] == 0
    assert results[0].score == pytest.approx(0.9)
    spans = results[0].metadata[MATCHED_SPANS]
    assert spans[0] == (children[6].metadata["start"], children[6].metadata["end"])
    assert len(spans) == 5
    with pytest.raises(InvalidArgumentError):
        AutoMergingRetriever(Listed([]), parents, ratio=1.0)


def test_auto_merging_over_an_embedding_store() -> None:
    parents = InMemoryParentStore()
    store, model = ingest(
        ParentChildSplitter(sentences(), parents, parent_splitters=[paragraphs()])
    )
    children = EmbeddingStoreContentRetriever(store, model, max_results=3)
    retriever = AutoMergingRetriever(children, parents)
    query = Query("let the dough rise, then bake the loaf in a hot oven")
    results = retriever.retrieve(query)
    assert {r.text for r in children.retrieve(query)[:2]} == {
        "Let the dough rise for an hour.",
        "Bake the loaf in a hot oven until golden.",
    }
    assert results[0].text == BAKING[BAKING.index("Let") :]
    for result in results:
        assert_cites(result)
    assert asyncio.run(retriever.aretrieve(query)) == results
