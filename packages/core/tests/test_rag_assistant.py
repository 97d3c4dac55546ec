"""RagAssistant end to end: sources, memory per id, query compression, streaming, asyncio.

The chat model is the testkit's ScriptedChatModel; retrieval is real (FakeEmbeddingModel
embeddings in an InMemoryEmbeddingStore).
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from typing import Any

import pytest

from ragloom.core import (
    AiMessage,
    ChatMessage,
    ChatModelError,
    CompressingQueryTransformer,
    Content,
    DefaultRetrievalAugmentor,
    Document,
    EmbeddingStoreContentRetriever,
    EmbeddingStoreIngestor,
    FinishReason,
    InMemoryChatMemoryStore,
    InMemoryEmbeddingStore,
    MessageWindowChatMemory,
    Query,
    RagAssistant,
    RagloomError,
    Result,
    SystemMessage,
    TokenStream,
    TokenUsage,
    UserMessage,
    document_splitters,
    metadata_key,
)
from ragloom.testkit import FakeEmbeddingModel, ScriptedChatModel
from ragloom.testkit.content_retriever import CORPUS, QUESTIONS

ANSWER = "Magma rises and erupts as lava."


@pytest.fixture(scope="module")
def retriever() -> EmbeddingStoreContentRetriever:
    model = FakeEmbeddingModel(256)
    store = InMemoryEmbeddingStore()
    EmbeddingStoreIngestor(
        store, model, document_splitter=document_splitters.recursive(300, 0)
    ).ingest([Document(text, {"topic": topic}) for topic, text in CORPUS.items()])
    return EmbeddingStoreContentRetriever(store, model, max_results=2)


def window_per_id(store: InMemoryChatMemoryStore) -> Any:
    return lambda memory_id: MessageWindowChatMemory(id=memory_id, store=store)


def roles_and_texts(messages: tuple[ChatMessage, ...]) -> list[tuple[str, str]]:
    return [(message.role, message.text.split("\n")[0]) for message in messages]


# --- chat -------------------------------------------------------------------------------


def test_naive_rag_answers_with_the_right_sources(
    retriever: EmbeddingStoreContentRetriever,
) -> None:
    model = ScriptedChatModel([ANSWER])
    assistant = RagAssistant(model, content_retriever=retriever)
    result = assistant.chat(QUESTIONS["volcanoes"])
    assert isinstance(result, Result)
    assert result.content == ANSWER
    assert result.sources[0].text == CORPUS["volcanoes"]
    assert len(result.sources) == 2
    assert result.finish_reason is FinishReason.STOP
    [request] = model.requests
    injected = f"\n\nAnswer using the following information:\n{CORPUS['volcanoes']}"
    assert request.messages[-1].text.startswith(QUESTIONS["volcanoes"] + injected)
    words_sent = len(request.messages[-1].text.split())
    assert result.token_usage == TokenUsage(words_sent, len(ANSWER.split()))


def test_system_prompt_comes_first(retriever: EmbeddingStoreContentRetriever) -> None:
    model = ScriptedChatModel(["ok", "ok"])
    assistant = RagAssistant(model, content_retriever=retriever, system_prompt="Be brief.")
    assistant.chat("bread?")
    assert [m.role for m in model.requests[0].messages] == ["system", "user"]
    assert model.requests[0].messages[0] == SystemMessage("Be brief.")


def test_memory_keeps_the_users_own_messages_and_the_answers(
    retriever: EmbeddingStoreContentRetriever,
) -> None:
    model = ScriptedChatModel(["Telescopes.", "Yeast."])
    memory = MessageWindowChatMemory()
    assistant = RagAssistant(
        model, content_retriever=retriever, chat_memory=memory, system_prompt="Be brief."
    )
    assistant.chat(QUESTIONS["astronomy"])
    assistant.chat(QUESTIONS["baking"])
    assert roles_and_texts(model.requests[1].messages) == [
        ("system", "Be brief."),
        ("user", QUESTIONS["astronomy"]),
        ("assistant", "Telescopes."),
        ("user", QUESTIONS["baking"]),
    ]
    assert "Answer using the following information" in model.requests[1].messages[-1].text
    assert memory.messages() == [
        SystemMessage("Be brief."),
        UserMessage(QUESTIONS["astronomy"]),
        AiMessage("Telescopes."),
        UserMessage(QUESTIONS["baking"]),
        AiMessage("Yeast."),
    ]
    assert assistant.chat_memory() is memory


def test_window_of_ten_bounds_what_the_model_sees(
    retriever: EmbeddingStoreContentRetriever,
) -> None:
    model = ScriptedChatModel(lambda messages: "ok")
    assistant = RagAssistant(
        model, content_retriever=retriever, chat_memory=MessageWindowChatMemory()
    )
    for i in range(8):
        assistant.chat(f"question {i}")
    assert len(model.requests[-1].messages) == 10 + 1  # the window, then this turn's message
    assert model.requests[-1].messages[0] == UserMessage("question 2")


def test_two_memory_ids_do_not_see_each_others_history(
    retriever: EmbeddingStoreContentRetriever,
) -> None:
    store = InMemoryChatMemoryStore()
    model = ScriptedChatModel(lambda messages: f"noted: {messages[-1].text.splitlines()[0]}")
    assistant = RagAssistant(
        model, content_retriever=retriever, chat_memory_provider=window_per_id(store)
    )
    assistant.chat("My name is Alice.", memory_id="alice")
    assistant.chat("My name is Bob.", memory_id="bob")
    assistant.chat("What is my name?", memory_id="alice")
    assistant.chat("What is my name?", memory_id="bob")
    alice_sees = " ".join(m.text for m in model.requests[2].messages)
    bob_sees = " ".join(m.text for m in model.requests[3].messages)
    assert "Alice" in alice_sees
    assert "Bob" not in alice_sees
    assert "Bob" in bob_sees
    assert "Alice" not in bob_sees
    assert store.memory_ids() == ["alice", "bob"]
    assert [m.text for m in store.get_messages("bob")] == [
        "My name is Bob.",
        "noted: My name is Bob.",
        "What is my name?",
        "noted: What is my name?",
    ]
    assert assistant.chat_memory("alice") is assistant.chat_memory("alice")


def test_memory_id_selects_the_tenants_documents() -> None:
    model = FakeEmbeddingModel(256)
    store = InMemoryEmbeddingStore()
    EmbeddingStoreIngestor(
        store, model, document_splitter=document_splitters.recursive(300, 0)
    ).ingest(
        [
            Document("Alice's invoice number is 1001.", {"user": "alice"}),
            Document("Bob's invoice number is 2002.", {"user": "bob"}),
        ]
    )
    per_user = EmbeddingStoreContentRetriever(
        store,
        model,
        filter=lambda query: metadata_key("user").is_equal_to(str(query.metadata.chat_memory_id)),
    )
    assistant = RagAssistant(
        ScriptedChatModel(lambda messages: "ok"),
        content_retriever=per_user,
        chat_memory_provider=window_per_id(InMemoryChatMemoryStore()),
    )
    for user, number in (("alice", "1001"), ("bob", "2002")):
        sources = assistant.chat("what is my invoice number", memory_id=user).sources
        assert [number in s.text for s in sources] == [True]


def test_default_memory_id_is_used_without_one(retriever: EmbeddingStoreContentRetriever) -> None:
    seen: list[Hashable] = []

    class Spy:
        def retrieve(self, query: Query) -> list[Content]:
            seen.append(query.metadata.chat_memory_id)
            return []

    store = InMemoryChatMemoryStore()
    assistant = RagAssistant(
        ScriptedChatModel(lambda m: "ok"),
        content_retriever=Spy(),
        chat_memory_provider=window_per_id(store),
    )
    assistant.chat("hi")
    stateless = RagAssistant(ScriptedChatModel(lambda m: "ok"), content_retriever=Spy())
    stateless.chat("hi")
    stateless.chat("hi", memory_id="user-9")
    assert seen == ["default", None, "user-9"]
    assert store.memory_ids() == ["default"]


def test_compressing_transformer_uses_the_conversation(
    retriever: EmbeddingStoreContentRetriever,
) -> None:
    def respond(messages: list[ChatMessage]) -> str:
        if messages[-1].text.startswith("Read and understand the conversation"):
            return QUESTIONS["volcanoes"]
        return "Volcanoes erupt." if len(messages) == 1 else "Magma erupts as lava."

    model = ScriptedChatModel(respond)
    augmentor = DefaultRetrievalAugmentor(
        content_retriever=retriever, query_transformer=CompressingQueryTransformer(model)
    )
    assistant = RagAssistant(
        model, retrieval_augmentor=augmentor, chat_memory=MessageWindowChatMemory()
    )
    assistant.chat("Tell me about volcanoes")
    assert len(model.requests) == 1  # no history yet: the query is not compressed
    result = assistant.chat("How does it happen?")
    compression = model.requests[1].prompt
    assert "User: Tell me about volcanoes\nAI: Volcanoes erupt." in compression
    assert "User query: How does it happen?" in compression
    assert result.sources[0].text == CORPUS["volcanoes"]
    assert result.content == "Magma erupts as lava."


def test_memory_is_not_changed_when_the_model_fails(
    retriever: EmbeddingStoreContentRetriever,
) -> None:
    memory = MessageWindowChatMemory()
    assistant = RagAssistant(
        ScriptedChatModel([ChatModelError("quota exceeded")]),
        content_retriever=retriever,
        chat_memory=memory,
    )
    with pytest.raises(ChatModelError, match="quota exceeded"):
        assistant.chat("bread?")
    assert memory.messages() == []


def test_evict_chat_memory(retriever: EmbeddingStoreContentRetriever) -> None:
    store = InMemoryChatMemoryStore()
    assistant = RagAssistant(
        ScriptedChatModel(lambda m: "ok"),
        content_retriever=retriever,
        chat_memory_provider=window_per_id(store),
    )
    assistant.chat("hello", memory_id="carol")
    first = assistant.chat_memory("carol")
    assistant.evict_chat_memory("carol")
    assert store.memory_ids() == []
    assert assistant.chat_memory("carol") is not first


# --- streaming --------------------------------------------------------------------------


def test_stream_calls_on_retrieved_before_the_first_token(
    retriever: EmbeddingStoreContentRetriever,
) -> None:
    events: list[tuple[str, Any]] = []
    model = ScriptedChatModel([ANSWER])
    assistant = RagAssistant(model, content_retriever=retriever)
    stream = assistant.stream(
        QUESTIONS["volcanoes"],
        on_retrieved=lambda sources: events.append(("retrieved", sources)),
        on_partial_response=lambda text: events.append(("partial", text)),
        on_complete=lambda result: events.append(("complete", result)),
    )
    assert isinstance(stream, TokenStream)
    assert model.requests == []  # lazy: nothing runs before the stream is consumed
    tokens = list(stream)
    kinds = [kind for kind, _ in events]
    assert kinds == ["retrieved"] + ["partial"] * len(tokens) + ["complete"]
    assert len(tokens) == len(ANSWER.split()) > 1
    assert "".join(tokens) == ANSWER
    assert [text for kind, text in events if kind == "partial"] == tokens
    sources = events[0][1]
    assert sources[0].text == CORPUS["volcanoes"]
    result = events[-1][1]
    assert result is stream.result
    assert result.content == ANSWER
    assert result.sources == sources
    assert model.requests[0].streamed


def test_stream_start_runs_through_the_callbacks(retriever: EmbeddingStoreContentRetriever) -> None:
    parts: list[str] = []
    memory = MessageWindowChatMemory()
    assistant = RagAssistant(
        ScriptedChatModel(["Knead, rise, bake."]), content_retriever=retriever, chat_memory=memory
    )
    stream = assistant.stream(QUESTIONS["baking"], on_partial_response=parts.append)
    stream.start()
    assert "".join(parts) == "Knead, rise, bake."
    assert stream.result.sources[0].text == CORPUS["baking"]
    assert memory.messages()[-1] == AiMessage("Knead, rise, bake.")
    assert list(stream) == []  # consumed once


def test_stream_error_goes_to_on_error(retriever: EmbeddingStoreContentRetriever) -> None:
    errors: list[Exception] = []
    memory = MessageWindowChatMemory()
    assistant = RagAssistant(
        ScriptedChatModel([ChatModelError("connection reset")]),
        content_retriever=retriever,
        chat_memory=memory,
    )
    retrieved: list[list[Content]] = []
    stream = assistant.stream("bread?", on_retrieved=retrieved.append, on_error=errors.append)
    assert list(stream) == []
    assert [str(e) for e in errors] == ["connection reset"]
    assert len(retrieved) == 1  # retrieval happened before the model failed
    with pytest.raises(RagloomError, match="the token stream failed"):
        _ = stream.result
    assert memory.messages() == []


def test_stream_error_without_on_error_is_raised(retriever: EmbeddingStoreContentRetriever) -> None:
    assistant = RagAssistant(
        ScriptedChatModel([ChatModelError("connection reset")]), content_retriever=retriever
    )
    with pytest.raises(ChatModelError, match="connection reset"):
        assistant.stream("bread?").start()


def test_a_failing_callback_ends_the_stream_and_closes_the_model_stream(
    retriever: EmbeddingStoreContentRetriever,
) -> None:
    errors: list[Exception] = []

    def explode(text: str) -> None:
        raise ValueError(f"cannot display {text!r}")

    memory = MessageWindowChatMemory()
    assistant = RagAssistant(
        ScriptedChatModel(["one two three"]), content_retriever=retriever, chat_memory=memory
    )
    stream = assistant.stream("q", on_partial_response=explode, on_error=errors.append)
    assert list(stream) == []
    assert [str(e) for e in errors] == ["cannot display 'one '"]
    assert memory.messages() == []


def test_closing_a_stream_early_keeps_memory_unchanged(
    retriever: EmbeddingStoreContentRetriever,
) -> None:
    memory = MessageWindowChatMemory()
    assistant = RagAssistant(
        ScriptedChatModel(["one two three"]), content_retriever=retriever, chat_memory=memory
    )
    with assistant.stream("q") as stream:
        assert next(stream) == "one "
    assert list(stream) == []
    assert memory.messages() == []
    with pytest.raises(RagloomError, match="has not completed"):
        _ = stream.result


# --- asyncio ----------------------------------------------------------------------------


def test_achat_matches_chat(retriever: EmbeddingStoreContentRetriever) -> None:
    sync = RagAssistant(ScriptedChatModel([ANSWER]), content_retriever=retriever)
    async_ = RagAssistant(ScriptedChatModel([ANSWER]), content_retriever=retriever)
    question = QUESTIONS["volcanoes"]
    assert asyncio.run(async_.achat(question)) == sync.chat(question)


def test_astream_order_and_memory_ids(retriever: EmbeddingStoreContentRetriever) -> None:
    store = InMemoryChatMemoryStore()
    assistant = RagAssistant(
        ScriptedChatModel(lambda messages: f"{len(messages)} messages seen"),
        content_retriever=retriever,
        chat_memory_provider=window_per_id(store),
    )
    events: list[str] = []

    async def run(memory_id: str) -> list[str]:
        stream = assistant.astream(
            QUESTIONS["sailing"],
            memory_id,
            on_retrieved=lambda sources: events.append("retrieved"),
            on_partial_response=lambda text: events.append("partial"),
            on_complete=lambda result: events.append("complete"),
        )
        async with stream:
            tokens = [token async for token in stream]
        assert stream.result.sources[0].text == CORPUS["sailing"]
        return tokens

    assert "".join(asyncio.run(run("x"))) == "1 messages seen"
    assert events[0] == "retrieved"
    assert events[-1] == "complete"
    assert set(events[1:-1]) == {"partial"}
    assert "".join(asyncio.run(run("x"))) == "3 messages seen"
    assert "".join(asyncio.run(run("y"))) == "1 messages seen"


def test_astream_error_handling(retriever: EmbeddingStoreContentRetriever) -> None:
    errors: list[Exception] = []
    assistant = RagAssistant(
        ScriptedChatModel([ChatModelError("down"), ChatModelError("down again")]),
        content_retriever=retriever,
    )

    async def run() -> None:
        await assistant.astream("q", on_error=errors.append).start()
        with pytest.raises(ChatModelError, match="down again"):
            await assistant.astream("q").start()

    asyncio.run(run())
    assert [str(e) for e in errors] == ["down"]


# --- configuration ----------------------------------------------------------------------


def test_configuration_errors(retriever: EmbeddingStoreContentRetriever) -> None:
    model = ScriptedChatModel()
    augmentor = DefaultRetrievalAugmentor(content_retriever=retriever)
    with pytest.raises(
        ValueError,
        match="exactly one of content_retriever, retrieval_augmentor and retriever_tools",
    ):
        RagAssistant(model)
    with pytest.raises(ValueError, match="exactly one"):
        RagAssistant(model, content_retriever=retriever, retrieval_augmentor=augmentor)
    with pytest.raises(ValueError, match="chat_memory or chat_memory_provider, not both"):
        RagAssistant(
            model,
            content_retriever=retriever,
            chat_memory=MessageWindowChatMemory(),
            chat_memory_provider=lambda memory_id: MessageWindowChatMemory(id=memory_id),
        )
    with pytest.raises(ValueError, match="system_prompt must be a non-blank str"):
        RagAssistant(model, content_retriever=retriever, system_prompt="  ")
    with pytest.raises(TypeError, match="chat_model must be a ChatModel"):
        RagAssistant("gpt", content_retriever=retriever)  # type: ignore[arg-type]


def test_call_errors(retriever: EmbeddingStoreContentRetriever) -> None:
    single = RagAssistant(
        ScriptedChatModel(lambda m: "ok"),
        content_retriever=retriever,
        chat_memory=MessageWindowChatMemory(id="shared"),
    )
    with pytest.raises(ValueError, match="single chat_memory shared by every caller"):
        single.chat("hi", memory_id="alice")
    assert single.chat("hi", memory_id="shared").content == "ok"
    with pytest.raises(ValueError, match="must not be blank"):
        single.chat("   ")
    with pytest.raises(TypeError, match="message must be a str or UserMessage"):
        single.chat(42)  # type: ignore[arg-type]
    per_id = RagAssistant(
        ScriptedChatModel(lambda m: "ok"),
        content_retriever=retriever,
        chat_memory_provider=lambda memory_id: MessageWindowChatMemory(id=memory_id),
    )
    with pytest.raises(TypeError, match="memory_id must be hashable"):
        per_id.chat("hi", memory_id=["alice"])  # type: ignore[arg-type]


def test_close_releases_the_owned_pool_only(retriever: EmbeddingStoreContentRetriever) -> None:
    with RagAssistant(ScriptedChatModel(lambda m: "ok"), content_retriever=retriever) as owned:
        assert isinstance(owned.retrieval_augmentor, DefaultRetrievalAugmentor)
        pool = owned.retrieval_augmentor.executor
    with pytest.raises(RuntimeError, match="shutdown"):
        pool.submit(print)
    given = DefaultRetrievalAugmentor(content_retriever=retriever)
    given_pool = given.executor
    with RagAssistant(ScriptedChatModel(lambda m: "ok"), retrieval_augmentor=given):
        pass
    assert given_pool.submit(lambda: 1).result() == 1
    given.close()
