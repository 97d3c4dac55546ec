"""Chat memory: the conversation an assistant remembers, one per memory id.

A :class:`ChatMemory` decides what to keep (:class:`MessageWindowChatMemory` keeps the
last N messages); a :class:`ChatMemoryStore` decides where it is kept
(:class:`InMemoryChatMemoryStore` here; a database elsewhere). Memories are keyed by a
memory id, so that two users' conversations never mix.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Protocol, runtime_checkable

from ragloom.core.chat.messages import ChatMessage, SystemMessage
from ragloom.core.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = [
    "DEFAULT_MEMORY_ID",
    "ChatMemoryStore",
    "InMemoryChatMemoryStore",
    "ChatMemory",
    "ChatMemoryProvider",
    "MessageWindowChatMemory",
]

DEFAULT_MEMORY_ID = "default"
"""The memory id used when the caller gives none (as in the spec)."""


@runtime_checkable
class ChatMemoryStore(Protocol):
    """Persists the messages of each memory id; a missing id reads as no messages."""

    def get_messages(self, memory_id: Hashable) -> list[ChatMessage]:
        """The stored messages of ``memory_id``, oldest first (empty when unknown)."""
        ...

    def update_messages(self, memory_id: Hashable, messages: Sequence[ChatMessage]) -> None:
        """Replace the stored messages of ``memory_id``."""
        ...

    def delete_messages(self, memory_id: Hashable) -> None:
        """Forget ``memory_id`` (no error when unknown)."""
        ...


class InMemoryChatMemoryStore(ChatMemoryStore):
    """A thread-safe dict of memory id -> messages, lost when the process ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._messages: dict[Hashable, tuple[ChatMessage, ...]] = {}

    def get_messages(self, memory_id: Hashable) -> list[ChatMessage]:
        with self._lock:
            return list(self._messages.get(memory_id, ()))

    def update_messages(self, memory_id: Hashable, messages: Sequence[ChatMessage]) -> None:
        stored = tuple(messages)
        with self._lock:
            self._messages[memory_id] = stored

    def delete_messages(self, memory_id: Hashable) -> None:
        with self._lock:
            self._messages.pop(memory_id, None)

    def memory_ids(self) -> list[Hashable]:
        """The ids that currently have messages, in insertion order."""
        with self._lock:
            return list(self._messages)


@runtime_checkable
class ChatMemory(Protocol):
    """The messages of one conversation, as they will be sent to the model."""

    @property
    def id(self) -> Hashable:
        """The memory id of this conversation."""
        ...

    def add(self, message: ChatMessage) -> None:
        """Remember ``message`` (possibly forgetting older ones)."""
        ...

    def messages(self) -> list[ChatMessage]:
        """The remembered messages, oldest first (a system message, if any, first)."""
        ...

    def clear(self) -> None:
        """Forget the whole conversation."""
        ...


ChatMemoryProvider = Callable[[Hashable], ChatMemory]
"""Builds the :class:`ChatMemory` of a memory id (the spec's ``ChatMemoryProvider``)."""


class MessageWindowChatMemory(ChatMemory):
    """Keeps the last ``max_messages`` messages (10 by default), evicting the oldest.

    The system message is never evicted and counts towards the window. There is at most
    one: adding the same one again is a no-op, adding a different one replaces it. It is
    always kept first, where chat models expect it.
    """

    def __init__(
        self,
        max_messages: int = 10,
        *,
        id: Hashable = DEFAULT_MEMORY_ID,
        store: ChatMemoryStore | None = None,
    ) -> None:
        if type(max_messages) is not int or max_messages < 1:
            raise InvalidArgumentError(f"max_messages must be a positive int, got {max_messages!r}")
        self.max_messages = max_messages
        self._id = id
        self.store: ChatMemoryStore = store if store is not None else InMemoryChatMemoryStore()
        self._lock = threading.Lock()

    @property
    def id(self) -> Hashable:
        return self._id

    def add(self, message: ChatMessage) -> None:
        if not isinstance(message, ChatMessage):
            raise InvalidArgumentTypeError(
                f"message must be a ChatMessage, got {type(message).__name__}"
            )
        with self._lock:
            messages = self.store.get_messages(self._id)
            if isinstance(message, SystemMessage):
                if messages and messages[0] == message:
                    return
                messages = [m for m in messages if not isinstance(m, SystemMessage)]
                messages.insert(0, message)
            else:
                messages.append(message)
            while len(messages) > self.max_messages:
                del messages[1 if isinstance(messages[0], SystemMessage) else 0]
            self.store.update_messages(self._id, messages)

    def messages(self) -> list[ChatMessage]:
        return self.store.get_messages(self._id)

    def clear(self) -> None:
        with self._lock:
            self.store.delete_messages(self._id)

    def __repr__(self) -> str:
        return f"MessageWindowChatMemory(max_messages={self.max_messages}, id={self._id!r})"
