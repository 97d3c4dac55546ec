"""ragloom.chat_models.openai: __all__ is pinned and importable; its errors are RagloomErrors."""

import ragloom.chat_models.openai
from ragloom.testkit.public_api import check_public_api


def test_public_api() -> None:
    check_public_api(
        ragloom.chat_models.openai,
        [
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
        ],
    )
