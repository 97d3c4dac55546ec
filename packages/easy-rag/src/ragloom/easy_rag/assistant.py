"""The Easy RAG flow: load documents, and an assistant with or without a chat model."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import cast

from ragloom.core import (
    ChatModel,
    ContentRetriever,
    FileSystemDocumentLoader,
    LoadedDocuments,
    MessageWindowChatMemory,
    RagAssistant,
    RagloomError,
    plugins,
)
from ragloom.easy_rag.extractive import ExtractiveAssistant

__all__ = [
    "CHAT_ENV_VARS",
    "MEMORY_WINDOW",
    "load_documents",
    "chat_model_from_env",
    "create_assistant",
]

CHAT_ENV_VARS = (
    "RAGLOOM_CHAT_BASE_URL",
    "RAGLOOM_CHAT_MODEL_NAME",
    "RAGLOOM_CHAT_API_KEY",
    "OPENAI_API_KEY",
)
MEMORY_WINDOW = 10
logger = logging.getLogger("ragloom.easy_rag")


def load_documents(
    path: str | os.PathLike[str],
    *,
    glob: str | None = None,
    regex: str | None = None,
    exclude: str | Sequence[str] = (),
) -> LoadedDocuments:
    """Every file under ``path`` (only those matching ``glob``, e.g. ``"*.md"``, or
    ``regex``; minus the gitignore-style ``exclude`` patterns), recursively, each with the
    parser for its type. Hidden files and folders (``.env``, ``.git/``), ``node_modules``,
    virtualenvs and git-ignored files are skipped, as ``ragloom ingest`` skips them."""
    return FileSystemDocumentLoader.load_documents(
        path, glob=glob, regex=regex, exclude=exclude, recursive=True
    )


def chat_model_from_env() -> ChatModel | None:
    """The chat model the environment configures, else ``None`` (answer extractively).

    The rule: none of ``CHAT_ENV_VARS`` set means no chat model. Otherwise the installed
    chat-model plugin builds one (ragloom-chat-openai: ``RAGLOOM_CHAT_BASE_URL`` with
    ``RAGLOOM_CHAT_MODEL_NAME``, or ``OPENAI_API_KEY`` alone for OpenAI's
    ``gpt-4o-mini``); when a piece is missing, a one-line warning on the
    ``ragloom.easy_rag`` logger (stderr by default) names it, and the result is ``None``.
    """
    if not any(os.environ.get(name) for name in CHAT_ENV_VARS):
        return None
    try:
        return cast(ChatModel, plugins.load_default(plugins.CHAT_MODELS))
    except RagloomError as exc:
        logger.warning("ragloom: no chat model, answering extractively: %s", exc.__cause__ or exc)
        return None


def create_assistant(
    content_retriever: ContentRetriever, chat_model: ChatModel | None = None
) -> RagAssistant | ExtractiveAssistant:
    """A :class:`RagAssistant` remembering 10 messages per memory id, as in the spec.

    ``chat_model`` defaults to :func:`chat_model_from_env`. Without one, an
    :class:`ExtractiveAssistant` that answers with the best passages and their sources,
    and says that no chat model is configured.
    """
    if chat_model is None:
        chat_model = chat_model_from_env()
    if chat_model is None:
        return ExtractiveAssistant(content_retriever)
    return RagAssistant(
        chat_model,
        content_retriever=content_retriever,
        chat_memory_provider=lambda memory_id: MessageWindowChatMemory(
            id=memory_id, max_messages=MEMORY_WINDOW
        ),
    )
