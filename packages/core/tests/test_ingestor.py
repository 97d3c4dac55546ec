from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloom.core import (
    Document,
    DocumentTransformer,
    EmbeddingSearchRequest,
    EmbeddingStoreContentRetriever,
    EmbeddingStoreError,
    EmbeddingStoreIngestor,
    FileSystemDocumentLoader,
    InMemoryEmbeddingStore,
    InvalidArgumentTypeError,
    PluginError,
    Query,
    TextSegment,
    TextSegmentTransformer,
    document_splitters,
    metadata_key,
    plugins,
)
from ragloom.core.ingestor import DOCUMENT_ID, document_identity, segment_id
from ragloom.testkit import ContentRetrieverSuite, FakeEmbeddingModel

PARAGRAPHS = [
    "Telescopes observe distant galaxies and nebulae.",
    "Bread dough rises with yeast before baking.",
    "Sailboats tack upwind while the crew trims the sails.",
    "Volcanoes erupt lava, ash and volcanic gas.",
]


@pytest.fixture
def model() -> FakeEmbeddingModel:
    return FakeEmbeddingModel(64)


@pytest.fixture
def store() -> InMemoryEmbeddingStore:
    return InMemoryEmbeddingStore()


def ingestor(
    store: InMemoryEmbeddingStore, model: FakeEmbeddingModel, **kwargs: object
) -> EmbeddingStoreIngestor:
    return EmbeddingStoreIngestor(
        store,
        model,
        document_splitter=document_splitters.recursive(60, 0),
        **kwargs,  # type: ignore[arg-type]
    )


def all_entries(store: InMemoryEmbeddingStore) -> list[TextSegment]:
    matches = store.search(EmbeddingSearchRequest([1.0] * 64, max_results=1000)).matches
    return [m.embedded for m in matches if m.embedded is not None]


def doc(text: str, name: str = "a.txt") -> Document:
    return Document(text, {"file_name": name, "absolute_directory_path": "/data"})


def test_ingest_splits_embeds_stores_with_usage(
    store: InMemoryEmbeddingStore, model: FakeEmbeddingModel
) -> None:
    result = ingestor(store, model).ingest([doc("\n\n".join(PARAGRAPHS))])
    assert len(result.ids) == 4
    assert result.failures == []
    assert result.token_usage is not None
    assert result.token_usage.input_token_count > 0
    texts = sorted(s.text for s in all_entries(store))
    assert texts == sorted(PARAGRAPHS)
    assert {s.metadata[DOCUMENT_ID] for s in all_entries(store)} == {"file:/data/a.txt"}


def test_reingesting_creates_no_duplicates(
    store: InMemoryEmbeddingStore, model: FakeEmbeddingModel
) -> None:
    pipeline = ingestor(store, model)
    first = pipeline.ingest(doc("\n\n".join(PARAGRAPHS)))
    second = pipeline.ingest(doc("\n\n".join(PARAGRAPHS)))
    assert first.ids == second.ids
    assert len(all_entries(store)) == 4


def test_edited_document_replaces_its_segments(
    store: InMemoryEmbeddingStore, model: FakeEmbeddingModel
) -> None:
    pipeline = ingestor(store, model)
    pipeline.ingest([doc("\n\n".join(PARAGRAPHS)), doc("Other file text.", "b.txt")])
    pipeline.ingest(doc("Only one new paragraph now."))
    texts = sorted(s.text for s in all_entries(store))
    assert texts == ["Only one new paragraph now.", "Other file text."]


def test_identity_rules() -> None:
    assert document_identity(Document("x", {"document_id": "42"})) == "42"
    assert document_identity(Document("x", {"url": "http://h/p"})) == "url:http://h/p"
    assert (
        document_identity(Document("x", {"package": "p", "resource": "r.md"})) == "resource:p:r.md"
    )
    assert document_identity(Document("x")) == document_identity(Document("x"))
    assert document_identity(Document("x")) != document_identity(Document("y"))
    assert segment_id("a", 0) == segment_id("a", 0) != segment_id("a", 1)


def test_transformers_and_dropping(
    store: InMemoryEmbeddingStore, model: FakeEmbeddingModel
) -> None:
    class SkipDrafts(DocumentTransformer):
        def transform(self, document: Document) -> Document | None:
            return None if document.metadata.get("draft") else document

    class Title(TextSegmentTransformer):
        def transform(self, segment: TextSegment) -> TextSegment | None:
            return TextSegment(f"{segment.metadata['file_name']}: {segment.text}", segment.metadata)

    pipeline = ingestor(
        store, model, document_transformer=SkipDrafts(), text_segment_transformer=Title()
    )
    result = pipeline.ingest([doc("kept text", "k.txt"), Document("draft", {"draft": True})])
    assert [o.dropped for o in result.outcomes] == [False, True]
    assert [s.text for s in all_entries(store)] == ["k.txt: kept text"]


def test_plain_functions_are_transformers(
    store: InMemoryEmbeddingStore, model: FakeEmbeddingModel
) -> None:
    # the spec's lambda form: documentTransformer(document -> ...), textSegmentTransformer(...)
    def tag_user(document: Document) -> Document:
        document.metadata["user_id"] = "12345"
        return document

    pipeline = ingestor(
        store,
        model,
        document_transformer=tag_user,
        text_segment_transformer=lambda s: TextSegment(
            f"{s.metadata['file_name']}\n{s.text}", s.metadata
        ),
    )
    result = pipeline.ingest([doc("kept text", "k.txt")])
    assert result.failures == []
    [entry] = all_entries(store)
    assert entry.text == "k.txt\nkept text"
    assert entry.metadata["user_id"] == "12345"


def test_a_function_returning_the_wrong_type_fails_its_document_by_name(
    store: InMemoryEmbeddingStore, model: FakeEmbeddingModel
) -> None:
    def to_text(segment: TextSegment) -> str:
        return segment.text

    pipeline = ingestor(store, model, text_segment_transformer=to_text)
    [failure] = pipeline.ingest([doc("some text")]).failures
    assert isinstance(failure.error, InvalidArgumentTypeError)
    assert "to_text" in str(failure.error)
    assert "returned str, not a TextSegment or None" in str(failure.error)
    assert all_entries(store) == []


def test_a_transformer_that_is_not_callable_is_refused(
    store: InMemoryEmbeddingStore, model: FakeEmbeddingModel
) -> None:
    with pytest.raises(InvalidArgumentTypeError, match="document_transformer must be .* got str"):
        ingestor(store, model, document_transformer="strip")


def test_batches_and_progress(store: InMemoryEmbeddingStore, model: FakeEmbeddingModel) -> None:
    seen: list[tuple[int, int]] = []
    documents = [doc(f"document number {i} text", f"{i}.txt") for i in range(10)]
    ingestor(store, model, batch_size=4, on_progress=lambda d, t: seen.append((d, t))).ingest(
        documents
    )
    assert max(model.calls) <= 4
    assert seen[-1] == (10, 10)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_store_failure_is_reported_and_keeps_old_state(model: FakeEmbeddingModel) -> None:
    class FailingStore(InMemoryEmbeddingStore):
        fail = False

        def add_all(self, embeddings, segments=None, *, ids=None):  # type: ignore[no-untyped-def]
            if self.fail:
                raise EmbeddingStoreError("disk full")
            return super().add_all(embeddings, segments, ids=ids)

    store = FailingStore()
    pipeline = ingestor(store, model)
    pipeline.ingest(doc("\n\n".join(PARAGRAPHS)))
    store.fail = True
    result = pipeline.ingest(doc("replacement text"))
    assert [str(f.error) for f in result.failures] == ["disk full"]
    assert sorted(s.text for s in all_entries(store)) == sorted(PARAGRAPHS)


@pytest.fixture
def no_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr("sys.path", [p for p in __import__("sys").path if "site-packages" not in p])
    plugins.refresh()
    yield
    plugins.refresh()


def test_missing_default_plugins_are_a_clear_error(
    store: InMemoryEmbeddingStore, no_plugins: None
) -> None:
    with pytest.raises(PluginError, match="ragloom.embedding_models"):
        EmbeddingStoreIngestor(store)


def test_retriever_dynamic_settings_and_filter(
    store: InMemoryEmbeddingStore, model: FakeEmbeddingModel
) -> None:
    documents = [Document(p, {"user": "u1" if i % 2 else "u2"}) for i, p in enumerate(PARAGRAPHS)]
    ingestor(store, model).ingest(documents)
    retriever = EmbeddingStoreContentRetriever(
        store,
        model,
        max_results=lambda q: 1,
        filter=lambda q: metadata_key("user").is_equal_to(str(q.metadata.chat_memory_id)),
    )
    from ragloom.core import QueryMetadata

    found = retriever.retrieve(Query("volcanoes erupt lava", QueryMetadata(chat_memory_id="u1")))
    assert [c.text for c in found] == [PARAGRAPHS[3]]
    assert found[0].score is not None
    assert 0.5 < found[0].score <= 1.0
    assert found[0].embedding_id in result_ids(store)
    other_user = retriever.retrieve(
        Query("volcanoes erupt lava", QueryMetadata(chat_memory_id="u2"))
    )
    assert other_user[0].text != PARAGRAPHS[3]


def test_retriever_validates_static_settings(
    store: InMemoryEmbeddingStore, model: FakeEmbeddingModel
) -> None:
    with pytest.raises(EmbeddingStoreError, match="max_results"):
        EmbeddingStoreContentRetriever(store, model, max_results=0)
    with pytest.raises(EmbeddingStoreError, match="min_score"):
        EmbeddingStoreContentRetriever(store, model, min_score=1.5)


def test_load_ingest_retrieve_end_to_end(
    tmp_path: Path, store: InMemoryEmbeddingStore, model: FakeEmbeddingModel
) -> None:
    for i, paragraph in enumerate(PARAGRAPHS):
        (tmp_path / f"{i}.txt").write_text(paragraph)
    ingestor(store, model).ingest(FileSystemDocumentLoader.load_documents(tmp_path))
    top = EmbeddingStoreContentRetriever(store, model).retrieve(Query("bread dough and yeast"))
    assert top[0].text_segment.metadata["file_name"] == "1.txt"
    segment = top[0].text_segment
    assert segment.metadata["start"] == 0
    assert segment.metadata["end"] == len(PARAGRAPHS[1])


class TestEmbeddingStoreContentRetriever(ContentRetrieverSuite):
    @pytest.fixture
    def retriever(self, corpus: list[Document]) -> EmbeddingStoreContentRetriever:
        store = InMemoryEmbeddingStore()
        model = FakeEmbeddingModel(256)
        EmbeddingStoreIngestor(
            store, model, document_splitter=document_splitters.recursive(500)
        ).ingest(corpus)
        return EmbeddingStoreContentRetriever(store, model, max_results=5)


def result_ids(store: InMemoryEmbeddingStore) -> set[str]:
    matches = store.search(EmbeddingSearchRequest([1.0] * 64, max_results=1000)).matches
    return {m.embedding_id for m in matches}
