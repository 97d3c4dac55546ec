"""ragloom.chat_models.openai: __all__ is pinned and importable; its errors are RagloomErrors."""

import ragloom.chat_models.openai as package
from ragloom.core.errors import RagloomError

EXPECTED_ALL = [
    "CHAT_API_KEY_ENV",
    "DEFAULT_BASE_URL",
    "DEFAULT_CHAT_MODEL_NAME",
    "EMBEDDING_API_KEY_ENV",
    "OpenAiAuthenticationError",
    "OpenAiChatModel",
    "OpenAiChatModelError",
    "OpenAiConnectionError",
    "OpenAiEmbeddingModel",
    "OpenAiError",
    "OpenAiNotConfiguredError",
    "OpenAiNotFoundError",
    "OpenAiRateLimitError",
    "OpenAiResponseError",
    "OpenAiStatusError",
    "OpenAiTimeoutError",
    "RetryPolicy",
    "finish_reason",
]


def test_all_is_pinned_and_importable() -> None:
    assert sorted(package.__all__) == EXPECTED_ALL
    namespace: dict[str, object] = {}
    exec(f"from {package.__name__} import *", namespace)
    assert set(EXPECTED_ALL) <= set(namespace)


def test_every_public_error_is_a_ragloom_error() -> None:
    public = [getattr(package, name) for name in package.__all__]
    errors = [v for v in public if isinstance(v, type) and issubclass(v, BaseException)]
    assert [e for e in errors if not issubclass(e, RagloomError)] == []
