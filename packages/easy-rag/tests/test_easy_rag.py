"""The Python Easy RAG flow, with the real defaults."""

from pathlib import Path

import pytest

from ragloom.core import (
    Document,
    EmbeddingStoreContentRetriever,
    EmbeddingStoreIngestor,
    InMemoryEmbeddingStore,
    RagAssistant,
)
from ragloom.easy_rag import ExtractiveAssistant, create_assistant, load_documents
from ragloom.easy_rag.defaults import default_document_splitter
from ragloom.embeddings.onnx import AllMiniLmL6V2Tokenizer
from ragloom.testkit.scripted_chat_model import ScriptedChatModel

DOCS = Path(__file__).resolve().parents[3] / "docs"


def test_default_splitter_counts_model_tokens() -> None:
    tokenizer = AllMiniLmL6V2Tokenizer()
    text = (DOCS / "architecture.md").read_text()
    segments = default_document_splitter().split(Document(text))
    assert len(segments) > 1
    assert all(tokenizer.count_tokens(s.text) <= 254 for s in segments)
    assert max(tokenizer.count_tokens(s.text) for s in segments) > 200  # segments are filled


def test_default_segments_are_embedded_whole() -> None:
    """No default segment exceeds the model's window: strict mode would raise if one did."""
    from ragloom.embeddings.onnx import AllMiniLmL6V2QuantizedEmbeddingModel

    text = (DOCS / "architecture.md").read_text()
    segments = default_document_splitter().split(Document(text))
    AllMiniLmL6V2QuantizedEmbeddingModel(strict=True).embed_all(segments)


@pytest.fixture(scope="module")
def store() -> InMemoryEmbeddingStore:
    """The spec's first two steps: load the shipped docs, ingest with the defaults."""
    documents = load_documents(DOCS, glob="*.md")  # the pages, not their images
    assert documents.failures == []
    store = InMemoryEmbeddingStore()
    result = EmbeddingStoreIngestor.from_defaults(store).ingest(documents)
    assert result.failures == []
    return store


def test_three_steps_over_the_shipped_docs(store: InMemoryEmbeddingStore) -> None:
    assistant = create_assistant(EmbeddingStoreContentRetriever.from_defaults(store))
    assert isinstance(assistant, ExtractiveAssistant)
    answer = assistant.chat("How do I filter by metadata?")
    assert answer.sources
    assert answer.sources[0].text_segment.metadata["file_name"] == "filters.md"
    assert "No chat model is configured" in answer.content


def test_with_a_chat_model_remembers_ten_messages(store: InMemoryEmbeddingStore) -> None:
    model = ScriptedChatModel(["first answer", "second answer"])
    assistant = create_assistant(EmbeddingStoreContentRetriever.from_defaults(store), model)
    assert isinstance(assistant, RagAssistant)
    assert assistant.chat("How do I filter by metadata?", memory_id="u1").content == "first answer"
    assistant.chat("And by file name?", memory_id="u1")
    memory = assistant.chat_memory("u1")
    assert memory is not None
    assert len(memory.messages()) == 4
    assert getattr(memory, "max_messages", None) == 10


def test_load_documents_skips_what_ragloom_ingest_skips(tmp_path: Path) -> None:
    files = {
        "guide.md": "the guide",
        "notes/todo.txt": "a note",
        "notes/scratch.txt": "ignored",
        ".gitignore": "scratch.txt\n",
        ".env": "OPENAI_API_KEY=sk-secret",
        ".git/HEAD": "ref: refs/heads/main",
        "node_modules/dep/index.md": "a dependency",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    loaded = load_documents(tmp_path)
    assert sorted(d.metadata["file_name"] for d in loaded) == ["guide.md", "todo.txt"]
    assert loaded.failures == []
    assert [d.metadata["file_name"] for d in load_documents(tmp_path, regex=r"^notes/")] == [
        "todo.txt"
    ]
    assert [d.metadata["file_name"] for d in load_documents(tmp_path, exclude="notes/")] == [
        "guide.md"
    ]
