"""The Easy RAG flow: load documents, and an assistant with or without a chat model."""

from __future__ import annotations

import os
from typing import cast

from ragloom.core import (
    ChatModel,
    ContentRetriever,
    FileSystemDocumentLoader,
    LoadedDocuments,
    MessageWindowChatMemory,
    RagAssistant,
    plugins,
)
from ragloom.easy_rag.extractive import ExtractiveAssistant

CHAT_ENV_VARS = ("RAGLOOM_CHAT_BASE_URL", "OPENAI_API_KEY")
MEMORY_WINDOW = 10


def load_documents(path: str | os.PathLike[str]) -> LoadedDocuments:
    """Every file under ``path``, recursively, each with the parser for its type."""
    return FileSystemDocumentLoader.load_documents(path, recursive=True)


def chat_model_from_env() -> ChatModel | None:
    """The installed chat model when one of ``CHAT_ENV_VARS`` is set, else ``None``."""
    if not any(os.environ.get(name) for name in CHAT_ENV_VARS):
        return None
    return cast(ChatModel, plugins.load_default(plugins.CHAT_MODELS))


def create_assistant(
    content_retriever: ContentRetriever, chat_model: ChatModel | None = None
) -> RagAssistant | ExtractiveAssistant:
    """A :class:`RagAssistant` remembering 10 messages per memory id, as in the spec.

    Without a chat model, an :class:`ExtractiveAssistant` that answers with the best
    passages and their sources, and says that no chat model is configured.
    """
    if chat_model is None:
        return ExtractiveAssistant(content_retriever)
    return RagAssistant(
        chat_model,
        content_retriever=content_retriever,
        chat_memory_provider=lambda memory_id: MessageWindowChatMemory(
            id=memory_id, max_messages=MEMORY_WINDOW
        ),
    )
