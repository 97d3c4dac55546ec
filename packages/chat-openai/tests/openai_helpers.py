"""Helpers of the tests (a uniquely named module: see conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar

import pytest

from ragloom.chat_models.openai import (
    OpenAiChatModel,
    OpenAiChatModelError,
    OpenAiEmbeddingModel,
    OpenAiEmbeddingModelError,
    OpenAiError,
    RetryPolicy,
)
from ragloom.chat_models.openai.testing import CHAT_MODEL, EMBEDDING_MODEL, WireServer
from ragloom.core.kit.http import HttpErrorKind

API_KEY = "sk-wire-test-0123456789abcdef"

_Model = TypeVar("_Model", OpenAiChatModel, OpenAiEmbeddingModel)

OPEN_MODELS: list[OpenAiChatModel | OpenAiEmbeddingModel] = []
"""The models made by the running test, closed after it (conftest.py)."""


def closed_after_test(model: _Model) -> _Model:
    """``model``, closed (its pooled connections released) when the test ends."""
    OPEN_MODELS.append(model)
    return model


@contextmanager
def raises(
    error_type: type[OpenAiError],
    kind: HttpErrorKind | None,
    *,
    match: str | None = None,
    status: int | None = None,
) -> Iterator[pytest.ExceptionInfo[OpenAiError]]:
    """``pytest.raises(error_type)`` whose error has this ``kind`` (and ``status_code``,
    when ``status`` is given)."""
    with pytest.raises(error_type, match=match) as caught:
        yield caught
    assert caught.value.kind is kind
    if status is not None:
        assert caught.value.status_code == status


def chat_error(
    kind: HttpErrorKind | None, *, match: str | None = None, status: int | None = None
) -> AbstractContextManager[pytest.ExceptionInfo[OpenAiError]]:
    """:func:`raises` of the chat model's error."""
    return raises(OpenAiChatModelError, kind, match=match, status=status)


def embedding_error(
    kind: HttpErrorKind | None, *, match: str | None = None, status: int | None = None
) -> AbstractContextManager[pytest.ExceptionInfo[OpenAiError]]:
    """:func:`raises` of the embedding model's error."""
    return raises(OpenAiEmbeddingModelError, kind, match=match, status=status)


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
    """A chat model on ``server`` with the right key and, by default, recorded sleeps;
    closed when the test ends."""
    options.setdefault("api_key", API_KEY)
    options.setdefault("model_name", CHAT_MODEL)
    if "retry_policy" not in options:
        options["retry_policy"] = (sleeps if sleeps is not None else Sleeps()).policy()
    return closed_after_test(
        OpenAiChatModel(base_url=options.pop("base_url", server.url), **options)
    )


def embedding_model(
    server: WireServer, sleeps: Sleeps | None = None, **options: Any
) -> OpenAiEmbeddingModel:
    """An embedding model on ``server`` with the right key and recorded sleeps; closed
    when the test ends."""
    options.setdefault("api_key", API_KEY)
    options.setdefault("model_name", EMBEDDING_MODEL)
    if "retry_policy" not in options:
        options["retry_policy"] = (sleeps if sleeps is not None else Sleeps()).policy()
    return closed_after_test(
        OpenAiEmbeddingModel(base_url=options.pop("base_url", server.url), **options)
    )
