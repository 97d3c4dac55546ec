"""Errors of the OpenAI-compatible clients, on ragloom's error tree.

What :class:`~ragloom.chat_models.openai.OpenAiChatModel` raises is an
:class:`OpenAiChatModelError` (a :class:`~ragloom.core.errors.ChatModelError`); what
:class:`~ragloom.chat_models.openai.OpenAiEmbeddingModel` raises is an
:class:`OpenAiEmbeddingModelError` (an :class:`~ragloom.core.errors.EmbeddingModelError`).
Both are :class:`OpenAiError` s and carry ``kind`` (an
:class:`~ragloom.core.kit.http.HttpErrorKind`: authentication, rate limit, timeout, ...,
``None`` for a missing configuration), the ``url`` concerned and the HTTP
``status_code`` when there was one: catch the component's error and look at ``kind``.
No message ever contains the API key.

The kind classes (:class:`OpenAiAuthenticationError`, :class:`OpenAiTimeoutError`, ...)
and their ``OpenAiChat*`` twins stay so that existing ``except`` clauses keep catching
what they caught; they are deprecated in favour of ``kind``. Each error a model raises
is the twin of its kind for its component, built from one table.
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
    "OpenAiEmbeddingModelError",
    "OpenAiError",
    "OpenAiNotConfiguredError",
    "OpenAiNotFoundError",
    "OpenAiPromptTooLongError",
    "OpenAiRateLimitError",
    "OpenAiResponseError",
    "OpenAiStatusError",
    "OpenAiTimeoutError",
]


class OpenAiError(RagloomError):
    """A call to an OpenAI-compatible server failed (names the URL, never the API key).

    ``kind`` says what went wrong (``None``: no configuration); ``url`` is the endpoint
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
    """Base of everything :class:`~ragloom.chat_models.openai.OpenAiChatModel` raises."""


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
    """Base of everything :class:`~ragloom.chat_models.openai.OpenAiEmbeddingModel` raises."""


# -- the kind classes (deprecated: catch the component's error and look at ``kind``) ------


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


_KINDS: tuple[type[OpenAiError], ...] = (
    OpenAiStatusError,
    OpenAiAuthenticationError,
    OpenAiNotFoundError,
    OpenAiRateLimitError,
    OpenAiConnectionError,
    OpenAiTimeoutError,
    OpenAiResponseError,
    OpenAiNotConfiguredError,
)
"""Each after its parent: the twins are built in this order."""


def _twins(component: type[OpenAiError], prefix: str) -> dict[type[OpenAiError], type[OpenAiError]]:
    """For each kind class, the class ``component`` raises for it: a subclass of the kind
    and of the twin of the kind's parent (so ``except`` by kind, by component or both
    works), named ``OpenAi<prefix><Kind>Error`` in this module (so it pickles)."""
    twins: dict[type[OpenAiError], type[OpenAiError]] = {OpenAiError: component}
    for kind in _KINDS:
        parent = twins[kind.__mro__[1]]
        name = "OpenAi" + prefix + kind.__name__.removeprefix("OpenAi")
        doc = f":class:`{kind.__name__}` raised by the {prefix.lower()} model."
        twin = type(name, (kind, parent), {"__module__": __name__, "__doc__": doc})
        twins[kind] = globals()[name] = twin
    return twins


_CHAT = _twins(OpenAiChatModelError, "Chat")
_EMBEDDING = _twins(OpenAiEmbeddingModelError, "Embedding")

OpenAiChatStatusError = _CHAT[OpenAiStatusError]
OpenAiChatAuthenticationError = _CHAT[OpenAiAuthenticationError]
OpenAiChatNotFoundError = _CHAT[OpenAiNotFoundError]
OpenAiChatRateLimitError = _CHAT[OpenAiRateLimitError]
OpenAiChatConnectionError = _CHAT[OpenAiConnectionError]
OpenAiChatTimeoutError = _CHAT[OpenAiTimeoutError]
OpenAiChatResponseError = _CHAT[OpenAiResponseError]
OpenAiChatNotConfiguredError = _CHAT[OpenAiNotConfiguredError]


def raised_class(kind: type[OpenAiError], *, chat: bool) -> type[OpenAiError]:
    """The class the chat (``chat``) or the embedding model raises for ``kind`` (internal)."""
    return (_CHAT if chat else _EMBEDDING)[kind]
