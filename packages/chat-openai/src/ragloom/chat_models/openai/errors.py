"""Errors of the OpenAI-compatible clients, on ragloom's error tree.

The tree (``+`` also derives from the core class named on the right)::

    RagloomError                               ragloom.core.errors
    └── OpenAiError                            kind, url, status_code
        ├── OpenAiChatModelError             + ChatModelError
        │   └── OpenAiPromptTooLongError     + InvalidArgumentError (a ValueError)
        └── OpenAiEmbeddingModelError        + EmbeddingModelError

Everything :class:`~ragloom.chat_models.openai.OpenAiChatModel` raises is an
:class:`OpenAiChatModelError`; everything
:class:`~ragloom.chat_models.openai.OpenAiEmbeddingModel` raises is an
:class:`OpenAiEmbeddingModelError`. What went wrong is ``kind``, core's
:class:`~ragloom.core.kit.http.HttpErrorKind` (authentication, rate limit, timeout,
connection, protocol, ...; ``None`` when no call was made: a missing configuration, a
prompt too long), with the ``url`` concerned and the HTTP ``status_code`` when the
server answered with one. No message ever contains the API key. A timeout is
``kind is HttpErrorKind.TIMEOUT``, not a builtin ``TimeoutError`` (an ``OSError``: an
``except OSError`` around file code would swallow it; code bounding its own calls with
``asyncio.timeout`` would mistake the model's deadline for its own).

:class:`OpenAiPromptTooLongError` is the one class with a second core base, and the
one justified: the prompt is the caller's input, refused before anything is sent, so
code telling bad input from a failing model (the server answers 400 for an
``InvalidArgumentError``, 502 for a ``ChatModelError``) must see an invalid argument,
while ``except ChatModelError`` around a chat call must still catch it; the counts it
carries fit no ``kind``.
"""

from __future__ import annotations

from ragloom.core.errors import (
    ChatModelError,
    EmbeddingModelError,
    InvalidArgumentError,
    RagloomError,
)
from ragloom.core.kit.http import HttpErrorKind

__all__ = [
    "OpenAiChatModelError",
    "OpenAiEmbeddingModelError",
    "OpenAiError",
    "OpenAiPromptTooLongError",
]


class OpenAiError(RagloomError):
    """A call to an OpenAI-compatible server failed (names the URL, never the API key).

    ``kind`` says what went wrong (``None``: no call was made); ``url`` is the endpoint
    (or base URL) concerned; ``status_code`` the HTTP status when the server answered
    with one.
    """

    def __init__(
        self,
        message: str,
        *,
        url: str | None = None,
        status_code: int | None = None,
        kind: HttpErrorKind | None = None,
    ) -> None:
        super().__init__(message)
        self.url = url
        self.status_code = status_code
        self.kind = kind


class OpenAiChatModelError(OpenAiError, ChatModelError):
    """Everything :class:`~ragloom.chat_models.openai.OpenAiChatModel` raises."""


class OpenAiPromptTooLongError(OpenAiChatModelError, InvalidArgumentError):
    """A prompt and its reserved answer tokens exceed the model's ``context_window``;
    raised before anything is sent. ``prompt_tokens``, ``reserved_tokens`` and
    ``context_window`` give the counts."""

    def __init__(
        self, message: str, *, prompt_tokens: int, reserved_tokens: int, context_window: int
    ) -> None:
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.reserved_tokens = reserved_tokens
        self.context_window = context_window


class OpenAiEmbeddingModelError(OpenAiError, EmbeddingModelError):
    """Everything :class:`~ragloom.chat_models.openai.OpenAiEmbeddingModel` raises."""
