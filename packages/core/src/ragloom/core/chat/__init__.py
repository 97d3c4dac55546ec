"""Chat: messages, the ChatModel protocol with its streams, and chat memory."""

from ragloom.core.chat.memory import (
    DEFAULT_MEMORY_ID,
    ChatMemory,
    ChatMemoryProvider,
    ChatMemoryStore,
    InMemoryChatMemoryStore,
    MessageWindowChatMemory,
)
from ragloom.core.chat.messages import AiMessage, ChatMessage, Role, SystemMessage, UserMessage
from ragloom.core.chat.model import (
    AsyncChatStream,
    ChatModel,
    ChatResponse,
    ChatStream,
    FinishReason,
)

__all__ = [
    "DEFAULT_MEMORY_ID",
    "AiMessage",
    "AsyncChatStream",
    "ChatMemory",
    "ChatMemoryProvider",
    "ChatMemoryStore",
    "ChatMessage",
    "ChatModel",
    "ChatResponse",
    "ChatStream",
    "FinishReason",
    "InMemoryChatMemoryStore",
    "MessageWindowChatMemory",
    "Role",
    "SystemMessage",
    "UserMessage",
]
