"""Chat: messages, tools, the ChatModel protocol with its streams, and chat memory."""

from typing import TYPE_CHECKING

from ragloom.core._lazy import lazy_exports

if TYPE_CHECKING:
    from ragloom.core.chat.memory import (
        DEFAULT_MEMORY_ID,
        ChatMemory,
        ChatMemoryProvider,
        ChatMemoryStore,
        InMemoryChatMemoryStore,
        MessageWindowChatMemory,
    )
    from ragloom.core.chat.messages import (
        AiMessage,
        ChatMessage,
        Role,
        SystemMessage,
        ToolExecutionResultMessage,
        UserMessage,
    )
    from ragloom.core.chat.model import (
        AsyncChatStream,
        ChatModel,
        ChatResponse,
        ChatStream,
        FinishReason,
    )
    from ragloom.core.chat.tools import ToolExecutionRequest, ToolSpecification

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
    "ToolExecutionRequest",
    "ToolExecutionResultMessage",
    "ToolSpecification",
    "UserMessage",
]

_EXPORTS = {
    "DEFAULT_MEMORY_ID": "memory",
    "ChatMemory": "memory",
    "ChatMemoryProvider": "memory",
    "ChatMemoryStore": "memory",
    "InMemoryChatMemoryStore": "memory",
    "MessageWindowChatMemory": "memory",
    "AiMessage": "messages",
    "ChatMessage": "messages",
    "Role": "messages",
    "SystemMessage": "messages",
    "ToolExecutionResultMessage": "messages",
    "UserMessage": "messages",
    "AsyncChatStream": "model",
    "ChatModel": "model",
    "ChatResponse": "model",
    "ChatStream": "model",
    "FinishReason": "model",
    "ToolExecutionRequest": "tools",
    "ToolSpecification": "tools",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
