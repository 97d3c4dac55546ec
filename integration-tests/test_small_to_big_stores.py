"""Cross-package: small-to-big retrieval gives the same answers on every embedding store.

The same documents go through parent-document (paragraph parents of sentence children,
under a whole-document level, for auto-merging too) and sentence-window ingestion into the
in-memory store, pgvector, Qdrant (local mode) and Milvus (Lite); the same queries must
return the same parents and windows, in the same order, with the same matched spans, and
every text must be the exact slice of its original document that its offsets name. The
testkit's fake embedding model keeps it fast. pgvector needs its service
(`bash scripts/services/pgvector.sh start`).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from ragloom.core import (
    AutoMergingRetriever,
    Content,
    ContentRetriever,
    Document,
    DocumentByParagraphSplitter,
    DocumentBySentenceSplitter,
    EmbeddingStoreContentRetriever,
    EmbeddingStoreIngestor,
    InMemoryParentStore,
    ParentChildSplitter,
    ParentDocumentRetriever,
    Query,
    SentenceWindowRetriever,
    SentenceWindowSplitter,
)
from ragloom.core.retrievers.parent_document import matched_spans
from ragloom.testkit.fake_embedding_model import FakeEmbeddingModel
from ragloom.testkit.stores import STORES, open_store

TEXTS = {
    "solar": (
        "The Sun is a star at the centre of the Solar System. It is a nearly perfect ball of "
        "hot plasma. Its core fuses hydrogen into helium.\n\n"
        "Mercury is the smallest planet. It orbits closest to the Sun. A year on Mercury "
        "lasts 88 days.\n\n"
        "Jupiter is the largest planet. Its Great Red Spot is a storm bigger than Earth. "
        "Jupiter has dozens of moons."
    ),
    "baking": (
        "Bread needs flour, water, salt and yeast. Knead the dough until it is smooth.\n\n"
        "Let the dough rise for an hour. Bake the loaf in a hot oven until golden. "
        "Cool the bread on a rack before slicing."
    ),
    "café": (  # non-ASCII: offsets count characters, not bytes, on every store
        "Le café est torréfié à 220 °C. Les grains éclatent deux fois.\n\n"
        "L'espresso passe en 25 secondes. La crème doit être dorée."
    ),
}
QUERIES = [
    "Which planet is the smallest and how long is its year?",
    "let the dough rise, then bake the loaf in a hot oven",
    "Jupiter storm and moons",
    "torréfié café grains",
]
TOLERANCE = {"memory": 0.0, "pgvector": 1e-5, "milvus": 1e-6, "qdrant": 1e-6}

pytestmark = pytest.mark.integration


def documents() -> list[Document]:
    return [Document(text, {"document_id": name}) for name, text in TEXTS.items()]


Answer = list[tuple[str, str, int, int, tuple[tuple[int, int], ...], float | None]]


def answer(retriever: ContentRetriever, query: str) -> Answer:
    """What a retriever returns for ``query``, each content checked to cite exactly."""
    contents = retriever.retrieve(Query(query))
    assert contents
    return [cited(content) for content in contents]


def cited(content: Content) -> tuple[str, str, int, int, tuple[tuple[int, int], ...], float | None]:
    meta = content.text_segment.metadata
    document, start, end = str(meta["document_id"]), int(meta["start"]), int(meta["end"])
    assert TEXTS[document][start:end] == content.text
    spans = matched_spans(content)
    for lo, hi in spans:
        assert start <= lo < hi <= end
    return document, content.text, start, end, spans, content.score


def answers(store_name: str, directory: Path) -> dict[str, Answer]:
    """Per pattern and query, the answer on one kind of store (every kind ingested alike)."""
    model = FakeEmbeddingModel()
    with contextlib.ExitStack() as stack:
        stores = {
            name: stack.enter_context(
                open_store(store_name, model.dimension, directory, collection=name)
            )
            for name in ("children", "sentences")
        }
        parents = InMemoryParentStore()
        hierarchy = ParentChildSplitter(
            DocumentBySentenceSplitter(60, 0),
            parents,
            parent_splitters=[
                DocumentByParagraphSplitter(1000, 0),
                DocumentByParagraphSplitter(150, 0),
            ],
        )
        for name, splitter in (("children", hierarchy), ("sentences", SentenceWindowSplitter(1))):
            ingestor = EmbeddingStoreIngestor(stores[name], model, document_splitter=splitter)
            assert ingestor.ingest(documents()).failures == []
        children = EmbeddingStoreContentRetriever(stores["children"], model, max_results=4)
        sentences = EmbeddingStoreContentRetriever(stores["sentences"], model, max_results=3)
        retrievers: dict[str, ContentRetriever] = {
            "parent_document": ParentDocumentRetriever(children, parents),
            "auto_merging": AutoMergingRetriever(children, parents),
            "sentence_window": SentenceWindowRetriever(sentences),
        }
        return {
            f"{pattern}: {query}": answer(retriever, query)
            for pattern, retriever in retrievers.items()
            for query in QUERIES
        }


@pytest.fixture(scope="module")
def in_memory(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Answer]:
    return answers("memory", tmp_path_factory.mktemp("memory"))


@pytest.mark.parametrize("store", [name for name in STORES if name != "memory"])
def test_every_store_gives_the_in_memory_answers(
    in_memory: dict[str, Answer], store: str, tmp_path: Path
) -> None:
    found = answers(store, tmp_path)
    assert list(found) == list(in_memory)
    for key, contents in in_memory.items():
        assert [c[:5] for c in found[key]] == [c[:5] for c in contents], key
        for a, b in zip(contents, found[key], strict=True):
            assert a[5] is not None
            assert b[5] == pytest.approx(a[5], abs=TOLERANCE[store]), key


def test_the_patterns_answer_with_more_than_the_hit(in_memory: dict[str, Answer]) -> None:
    mercury = in_memory[f"parent_document: {QUERIES[0]}"][0]
    assert mercury[1].startswith("Mercury is the smallest planet.")
    assert mercury[1].endswith("lasts 88 days.")
    ((start, end),) = mercury[4][:1]  # the matched sentence, inside the paragraph
    assert TEXTS["solar"][start:end] in mercury[1]
    assert end - start < len(mercury[1])
    merged = in_memory[f"auto_merging: {QUERIES[1]}"][0]
    assert merged[1].startswith("Let the dough rise for an hour.")
    window = in_memory[f"sentence_window: {QUERIES[1]}"][0]
    assert window[1].count(".") == 3  # the hit and one sentence either side
