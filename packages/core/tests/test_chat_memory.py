"""MessageWindowChatMemory and InMemoryChatMemoryStore."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from ragloom.core import (
    AiMessage,
    ChatMemory,
    ChatMemoryStore,
    ChatMessage,
    InMemoryChatMemoryStore,
    MessageWindowChatMemory,
    SystemMessage,
    UserMessage,
)


def turns(count: int) -> list[ChatMessage]:
    """``count`` alternating user / AI messages: u0, a1, u2, ..."""
    return [UserMessage(f"u{i}") if i % 2 == 0 else AiMessage(f"a{i}") for i in range(count)]


def texts(memory: ChatMemory) -> list[str]:
    return [message.text for message in memory.messages()]


def test_protocols_are_implemented() -> None:
    assert isinstance(MessageWindowChatMemory(), ChatMemory)
    assert isinstance(InMemoryChatMemoryStore(), ChatMemoryStore)


def test_window_keeps_the_last_ten_messages_by_default() -> None:
    memory = MessageWindowChatMemory()
    for message in turns(13):
        memory.add(message)
    assert memory.max_messages == 10
    assert texts(memory) == [m.text for m in turns(13)[3:]]


def test_system_message_is_kept_first_and_counts_towards_the_window() -> None:
    memory = MessageWindowChatMemory(4)
    memory.add(UserMessage("early"))
    memory.add(SystemMessage("be brief"))
    for message in turns(5):
        memory.add(message)
    assert texts(memory) == ["be brief", "u2", "a3", "u4"]
    assert isinstance(memory.messages()[0], SystemMessage)


def test_same_system_message_is_ignored_and_a_new_one_replaces_it() -> None:
    memory = MessageWindowChatMemory(5)
    memory.add(SystemMessage("v1"))
    memory.add(UserMessage("hi"))
    memory.add(SystemMessage("v1"))
    assert texts(memory) == ["v1", "hi"]
    memory.add(SystemMessage("v2"))
    assert texts(memory) == ["v2", "hi"]


def test_window_of_one_with_a_system_message_keeps_only_the_system_message() -> None:
    memory = MessageWindowChatMemory(1)
    memory.add(SystemMessage("rules"))
    memory.add(UserMessage("hi"))
    assert texts(memory) == ["rules"]


def test_memories_sharing_a_store_are_isolated_by_id() -> None:
    store = InMemoryChatMemoryStore()
    alice = MessageWindowChatMemory(id="alice", store=store)
    bob = MessageWindowChatMemory(id="bob", store=store)
    alice.add(UserMessage("I am Alice"))
    bob.add(UserMessage("I am Bob"))
    assert texts(alice) == ["I am Alice"]
    assert texts(bob) == ["I am Bob"]
    assert store.memory_ids() == ["alice", "bob"]
    alice.clear()
    assert alice.messages() == []
    assert texts(bob) == ["I am Bob"]
    assert store.memory_ids() == ["bob"]
    # A new memory object over the same store and id sees the same conversation.
    assert texts(MessageWindowChatMemory(id="bob", store=store)) == ["I am Bob"]


def test_store_returns_copies() -> None:
    store = InMemoryChatMemoryStore()
    messages: list[ChatMessage] = [UserMessage("a")]
    store.update_messages(1, messages)
    messages.append(UserMessage("b"))
    store.get_messages(1).append(UserMessage("c"))
    assert store.get_messages(1) == [UserMessage("a")]
    assert store.get_messages("unknown") == []
    store.delete_messages("unknown")  # no error


def test_concurrent_adds_lose_nothing() -> None:
    memory = MessageWindowChatMemory(1000)
    barrier = threading.Barrier(8)

    def add_many(worker: int) -> None:
        barrier.wait()
        for i in range(50):
            memory.add(UserMessage(f"{worker}-{i}"))

    threads = [threading.Thread(target=add_many, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(texts(memory)) == sorted(f"{w}-{i}" for w in range(8) for i in range(50))


def test_bad_input_is_rejected() -> None:
    with pytest.raises(ValueError, match="max_messages must be a positive int"):
        MessageWindowChatMemory(0)
    with pytest.raises(ValueError, match="max_messages"):
        MessageWindowChatMemory(True)
    with pytest.raises(TypeError, match="message must be a ChatMessage, got str"):
        MessageWindowChatMemory().add("hello")  # type: ignore[arg-type]


def test_messages_round_trip_through_a_serializing_store() -> None:
    class JsonStore(ChatMemoryStore):
        """A store that keeps dicts, as a database-backed store would."""

        def __init__(self) -> None:
            self.rows: dict[object, list[dict[str, str]]] = {}

        def get_messages(self, memory_id: object) -> list[ChatMessage]:
            return [ChatMessage.from_dict(row) for row in self.rows.get(memory_id, [])]

        def update_messages(self, memory_id: object, messages: Sequence[ChatMessage]) -> None:
            self.rows[memory_id] = [message.to_dict() for message in messages]

        def delete_messages(self, memory_id: object) -> None:
            self.rows.pop(memory_id, None)

    store = JsonStore()
    memory = MessageWindowChatMemory(3, id=("tenant", 7), store=store)
    for message in [SystemMessage("s"), UserMessage("q", name="ann"), AiMessage("a")]:
        memory.add(message)
    assert memory.messages() == [SystemMessage("s"), UserMessage("q", name="ann"), AiMessage("a")]
    assert store.rows[("tenant", 7)][1] == {"role": "user", "text": "q", "name": "ann"}
