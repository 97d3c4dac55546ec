"""LangChain components used by ragloom: a loader feeding the ingestor, a chat model's
usage, finish reason and errors, an embeddings object's errors."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document as LcDocument
from langchain_core.embeddings import Embeddings
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

from ragloom.core.chat.messages import AiMessage, SystemMessage, UserMessage
from ragloom.core.chat.model import FinishReason
from ragloom.core.embedding import TokenUsage
from ragloom.core.errors import ChatModelError, DocumentLoadError, EmbeddingModelError
from ragloom.core.ingestor import EmbeddingStoreIngestor
from ragloom.core.query import Query
from ragloom.core.retrievers.embedding_store import EmbeddingStoreContentRetriever
from ragloom.core.stores.in_memory import InMemoryEmbeddingStore
from ragloom.langchain import (
    LangChainChatModel,
    LangChainDocumentLoader,
    LangChainEmbeddingModel,
    RagloomEmbeddings,
)
from ragloom.testkit import FakeEmbeddingModel

MODIFIED = datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.UTC)


class TextFilesLoader(BaseLoader):
    """A LangChain loader of the .txt files of a directory, with LangChain-style metadata
    (a datetime, a list, a None) and, optionally, a failure after ``fail_after`` files."""

    def __init__(self, directory: Path, fail_after: int | None = None) -> None:
        self.directory = directory
        self.fail_after = fail_after

    def lazy_load(self) -> Iterator[LcDocument]:
        for count, path in enumerate(sorted(self.directory.glob("*.txt"))):
            if count == self.fail_after:
                raise OSError(f"permission denied: {path}")
            yield LcDocument(
                page_content=path.read_text(),
                metadata={
                    "source": str(path),
                    "modified": MODIFIED,
                    "tags": ["a", "b"],
                    "page": None,
                    "words": len(path.read_text().split()),
                },
            )


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text("Ragloom ingests documents from LangChain loaders.")
    (tmp_path / "b.txt").write_text("The weather in Paris is mild in spring.")
    return tmp_path


def test_a_langchain_loader_feeds_the_ingestor(directory: Path) -> None:
    documents = LangChainDocumentLoader(TextFilesLoader(directory)).load_documents()
    assert documents.failures == []
    assert documents[0].metadata.to_dict() == {
        "source": str(directory / "a.txt"),
        "modified": "2024-05-01 12:00:00+00:00",
        "tags": '["a", "b"]',
        "words": 6,
    }
    model = FakeEmbeddingModel()
    store = InMemoryEmbeddingStore()
    EmbeddingStoreIngestor(store, model).ingest(documents)
    retriever = EmbeddingStoreContentRetriever(store, model, max_results=1)
    [content] = retriever.retrieve(Query("weather in Paris"))
    assert content.text == "The weather in Paris is mild in spring."
    assert content.text_segment.metadata["source"] == str(directory / "b.txt")


def test_a_failing_loader_keeps_what_it_loaded(directory: Path) -> None:
    loader = LangChainDocumentLoader(TextFilesLoader(directory, fail_after=1))
    documents = loader.load_documents()
    assert [d.text for d in documents] == ["Ragloom ingests documents from LangChain loaders."]
    [failure] = documents.failures
    assert failure.source == "TextFilesLoader"
    assert "permission denied" in str(failure.error)
    with pytest.raises(DocumentLoadError, match="permission denied"):
        loader.load_documents(strict=True)
    assert len(asyncio.run(loader.aload_documents())) == 1


class _BadKeyLoader(BaseLoader):
    def lazy_load(self) -> Iterator[LcDocument]:
        yield LcDocument(page_content="kept", metadata={"source": "good"})
        yield LcDocument(page_content="dropped", metadata={"source": "bad", 7: "x"})


def test_a_document_with_bad_metadata_becomes_a_failure() -> None:
    documents = LangChainDocumentLoader(_BadKeyLoader()).load_documents()
    assert [d.text for d in documents] == ["kept"]
    assert [f.source for f in documents.failures] == ["bad"]
    with pytest.raises(DocumentLoadError, match="bad"):
        LangChainDocumentLoader(_BadKeyLoader()).load_documents(strict=True)


class UsageStreamingChatModel(BaseChatModel):
    """Streams its answer word by word and reports usage and the finish reason in the last
    chunk, as OpenAI's and Anthropic's LangChain models do."""

    answer: str = "Hello Ada, good to see you."

    @property
    def _llm_type(self) -> str:
        return "usage-streaming"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        message = AIMessage(
            self.answer,
            usage_metadata={"input_tokens": 7, "output_tokens": 6, "total_tokens": 13},
            response_metadata={"stop_reason": "max_tokens"},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        words = self.answer.split(" ")
        for i, word in enumerate(words):
            last = i == len(words) - 1
            yield ChatGenerationChunk(
                message=AIMessageChunk(
                    word if last else word + " ",
                    usage_metadata=(
                        {"input_tokens": 7, "output_tokens": 6, "total_tokens": 13}
                        if last
                        else None
                    ),
                    response_metadata={"finish_reason": "stop"} if last else {},
                )
            )


def test_chat_usage_and_finish_reason_are_mapped() -> None:
    model = LangChainChatModel(UsageStreamingChatModel())
    response = model.chat([UserMessage("hi")])
    assert response.text == "Hello Ada, good to see you."
    assert response.token_usage == TokenUsage(7, 6, 13)
    assert response.finish_reason is FinishReason.LENGTH
    stream = model.stream([UserMessage("hi")])
    parts = list(stream)
    assert parts == ["Hello ", "Ada, ", "good ", "to ", "see ", "you."]
    assert stream.response.token_usage == TokenUsage(7, 6, 13)
    assert stream.response.finish_reason is FinishReason.STOP


def test_chat_messages_keep_their_roles() -> None:
    seen: list[list[BaseMessage]] = []

    class Recording(GenericFakeChatModel):
        def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
            seen.append(messages)
            return super()._generate(messages, *args, **kwargs)

    model = LangChainChatModel(Recording(messages=iter(["ok"])))
    model.chat([SystemMessage("be brief"), UserMessage("hi", name="ada"), AiMessage("hello")])
    assert [(m.type, m.content, m.name) for m in seen[0]] == [
        ("system", "be brief", None),
        ("human", "hi", "ada"),
        ("ai", "hello", None),
    ]


def test_chat_failures_are_chat_model_errors() -> None:
    empty = LangChainChatModel(FakeListChatModel(responses=[]))
    with pytest.raises(ChatModelError, match="FakeListChatModel.invoke failed") as info:
        empty.chat([UserMessage("hi")])
    assert isinstance(info.value.__cause__, IndexError)
    breaking = LangChainChatModel(FakeListChatModel(responses=["abcdef"], error_on_chunk_number=2))
    stream = breaking.stream([UserMessage("hi")])
    assert [next(stream), next(stream)] == ["a", "b"]
    with pytest.raises(ChatModelError, match="FakeListChatModel.stream failed"):
        next(stream)

    async def astream() -> list[str]:
        return [part async for part in breaking.astream([UserMessage("hi")])]

    with pytest.raises(ChatModelError, match="FakeListChatModel.astream failed"):
        asyncio.run(astream())


class _BrokenEmbeddings(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0]]  # one vector, whatever the number of texts

    def embed_query(self, text: str) -> list[float]:
        raise ConnectionError("provider unreachable")


def test_embedding_failures_are_embedding_model_errors() -> None:
    model = LangChainEmbeddingModel(_BrokenEmbeddings())
    with pytest.raises(EmbeddingModelError, match="returned 1 embeddings for 2 texts"):
        model.embed_all(["a", "b"])
    assert model.dimension == 2
    assert LangChainEmbeddingModel(_BrokenEmbeddings(), dimension=9).dimension == 9


def test_a_langchain_model_embeds_for_ragloom_like_the_wrapped_one() -> None:
    fake = FakeEmbeddingModel()
    through = LangChainEmbeddingModel(RagloomEmbeddings(fake))
    assert through.embed_all(["a b", "c"]).embeddings == fake.embed_all(["a b", "c"]).embeddings
    result = asyncio.run(through.aembed_all(["a b"]))
    assert result.embeddings == fake.embed_all(["a b"]).embeddings
