"""Errors of the OpenAI-compatible clients, in ragloom's error hierarchy.

Every error is an :class:`OpenAiError` (a :class:`~ragloom.core.errors.RagloomError`)
carrying the ``url`` it concerns and, for HTTP errors, the ``status_code``. Catch a kind
(:class:`OpenAiAuthenticationError`, :class:`OpenAiNotFoundError`, ...) to handle it for
both models. What :class:`~ragloom.chat_models.openai.OpenAiChatModel` raises is in
addition a :class:`~ragloom.core.errors.ChatModelError`, as the ChatModel protocol
requires: each kind has a chat variant (``OpenAiChatAuthenticationError`` is an
``OpenAiAuthenticationError`` and an ``OpenAiChatModelError``). No message ever contains
the API key.
"""

from __future__ import annotations

from ragloom.core.errors import ChatModelError, RagloomError

__all__ = [
    "OpenAiAuthenticationError",
    "OpenAiChatAuthenticationError",
    "OpenAiChatConnectionError",
    "OpenAiChatModelError",
    "OpenAiChatNotConfiguredError",
    "OpenAiChatNotFoundError",
    "OpenAiChatRateLimitError",
    "OpenAiChatResponseError",
    "OpenAiChatStatusError",
    "OpenAiChatTimeoutError",
    "OpenAiConnectionError",
    "OpenAiError",
    "OpenAiNotConfiguredError",
    "OpenAiNotFoundError",
    "OpenAiRateLimitError",
    "OpenAiResponseError",
    "OpenAiStatusError",
    "OpenAiTimeoutError",
]


class OpenAiError(RagloomError):
    """A call to an OpenAI-compatible server failed (names the URL, never the API key).

    ``url`` is the endpoint (or base URL) concerned; ``status_code`` the HTTP status
    when the server answered with one.
    """

    def __init__(
        self, message: str, *, url: str | None = None, status_code: int | None = None
    ) -> None:
        super().__init__(message)
        self.url = url
        self.status_code = status_code


class OpenAiStatusError(OpenAiError):
    """The server answered with an HTTP error status (after any retries)."""


class OpenAiAuthenticationError(OpenAiStatusError):
    """HTTP 401 or 403: the API key is missing, wrong or not allowed (names the base URL)."""


class OpenAiNotFoundError(OpenAiStatusError):
    """HTTP 404: unknown model, or a base URL that does not point at the API root."""


class OpenAiRateLimitError(OpenAiStatusError):
    """HTTP 429 on every attempt, or a Retry-After longer than the retry policy allows."""


class OpenAiConnectionError(OpenAiError):
    """No connection to the server (refused, reset, DNS) or it broke off mid-answer."""


class OpenAiTimeoutError(OpenAiConnectionError, TimeoutError):
    """The server did not answer (or stalled mid-stream) within the timeout."""


class OpenAiResponseError(OpenAiError):
    """The server's answer is not the documented wire format (bad JSON, missing fields)."""


class OpenAiNotConfiguredError(OpenAiError, ValueError):
    """``from_env()`` found no configuration (names the environment variables to set)."""


class OpenAiChatModelError(OpenAiError, ChatModelError):
    """Base of everything :class:`~ragloom.chat_models.openai.OpenAiChatModel` raises."""


class OpenAiChatStatusError(OpenAiStatusError, OpenAiChatModelError):
    """:class:`OpenAiStatusError` raised by the chat model."""


class OpenAiChatAuthenticationError(OpenAiAuthenticationError, OpenAiChatStatusError):
    """:class:`OpenAiAuthenticationError` raised by the chat model."""


class OpenAiChatNotFoundError(OpenAiNotFoundError, OpenAiChatStatusError):
    """:class:`OpenAiNotFoundError` raised by the chat model."""


class OpenAiChatRateLimitError(OpenAiRateLimitError, OpenAiChatStatusError):
    """:class:`OpenAiRateLimitError` raised by the chat model."""


class OpenAiChatConnectionError(OpenAiConnectionError, OpenAiChatModelError):
    """:class:`OpenAiConnectionError` raised by the chat model."""


class OpenAiChatTimeoutError(OpenAiTimeoutError, OpenAiChatConnectionError):
    """:class:`OpenAiTimeoutError` raised by the chat model."""


class OpenAiChatResponseError(OpenAiResponseError, OpenAiChatModelError):
    """:class:`OpenAiResponseError` raised by the chat model."""


class OpenAiChatNotConfiguredError(OpenAiNotConfiguredError, OpenAiChatModelError):
    """:class:`OpenAiNotConfiguredError` raised by ``OpenAiChatModel.from_env()``."""


_CHAT_VARIANTS: dict[type[OpenAiError], type[OpenAiError]] = {
    OpenAiError: OpenAiChatModelError,
    OpenAiStatusError: OpenAiChatStatusError,
    OpenAiAuthenticationError: OpenAiChatAuthenticationError,
    OpenAiNotFoundError: OpenAiChatNotFoundError,
    OpenAiRateLimitError: OpenAiChatRateLimitError,
    OpenAiConnectionError: OpenAiChatConnectionError,
    OpenAiTimeoutError: OpenAiChatTimeoutError,
    OpenAiResponseError: OpenAiChatResponseError,
    OpenAiNotConfiguredError: OpenAiChatNotConfiguredError,
}


def chat_variant(kind: type[OpenAiError]) -> type[OpenAiError]:
    """The class the chat model raises for an error of ``kind`` (internal)."""
    return _CHAT_VARIANTS[kind]
