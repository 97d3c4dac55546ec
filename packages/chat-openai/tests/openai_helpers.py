"""Helpers of the tests (a uniquely named module: see conftest.py)."""

from __future__ import annotations

from typing import Any

from ragloom.chat_models.openai import OpenAiChatModel, OpenAiEmbeddingModel, RetryPolicy
from ragloom.chat_models.openai.testing import CHAT_MODEL, EMBEDDING_MODEL, WireServer

API_KEY = "sk-wire-test-0123456789abcdef"


class Sleeps(list[float]):
    """Records the waits of a RetryPolicy instead of sleeping."""

    def sleep(self, seconds: float) -> None:
        self.append(seconds)

    async def async_sleep(self, seconds: float) -> None:
        self.append(seconds)

    def policy(self, max_retries: int = 2, **settings: Any) -> RetryPolicy:
        """A policy that records instead of sleeping; no jitter unless asked for."""
        settings.setdefault("jitter", 0.0)
        return RetryPolicy(
            max_retries=max_retries, sleep=self.sleep, async_sleep=self.async_sleep, **settings
        )


def chat_model(server: WireServer, sleeps: Sleeps | None = None, **options: Any) -> OpenAiChatModel:
    """A chat model on ``server`` with the right key and, by default, recorded sleeps."""
    options.setdefault("api_key", API_KEY)
    options.setdefault("model_name", CHAT_MODEL)
    if "retry_policy" not in options:
        options["retry_policy"] = (sleeps if sleeps is not None else Sleeps()).policy()
    return OpenAiChatModel(base_url=options.pop("base_url", server.url), **options)


def embedding_model(
    server: WireServer, sleeps: Sleeps | None = None, **options: Any
) -> OpenAiEmbeddingModel:
    """An embedding model on ``server`` with the right key and recorded sleeps."""
    options.setdefault("api_key", API_KEY)
    options.setdefault("model_name", EMBEDDING_MODEL)
    if "retry_policy" not in options:
        options["retry_policy"] = (sleeps if sleeps is not None else Sleeps()).policy()
    return OpenAiEmbeddingModel(base_url=options.pop("base_url", server.url), **options)
