"""OpenAI-compatible chat and embedding models for ragloom (httpx, sync and async).

>>> from ragloom.chat_models.openai import OpenAiChatModel
>>> from ragloom.core.chat import UserMessage
>>> model = OpenAiChatModel(base_url="http://localhost:11434/v1", model_name="llama3.2")
>>> model.chat([UserMessage("Hello")]).text  # doctest: +SKIP

Works with OpenAI, vLLM, Ollama, the llama.cpp server, LM Studio and any other server
speaking the chat-completions (and ``/embeddings``) wire format.
"""

from ragloom.chat_models.openai._http import DEFAULT_BASE_URL
from ragloom.chat_models.openai.chat import (
    CHAT_API_KEY_ENV,
    DEFAULT_CHAT_MODEL_NAME,
    OpenAiChatModel,
    finish_reason,
)
from ragloom.chat_models.openai.embedding import EMBEDDING_API_KEY_ENV, OpenAiEmbeddingModel
from ragloom.chat_models.openai.errors import (
    OpenAiChatModelError,
    OpenAiEmbeddingModelError,
    OpenAiError,
    OpenAiPromptTooLongError,
)
from ragloom.chat_models.openai.tokenizer import OpenAiTokenizer
from ragloom.core.retry import RetryPolicy

__all__ = [
    "CHAT_API_KEY_ENV",
    "DEFAULT_BASE_URL",
    "DEFAULT_CHAT_MODEL_NAME",
    "EMBEDDING_API_KEY_ENV",
    "OpenAiChatModel",
    "OpenAiChatModelError",
    "OpenAiEmbeddingModel",
    "OpenAiEmbeddingModelError",
    "OpenAiError",
    "OpenAiPromptTooLongError",
    "OpenAiTokenizer",
    "RetryPolicy",
    "finish_reason",
]
