"""The ragloom error hierarchy: every error names the argument, key, file or value at fault.

Catch :class:`RagloomError` for anything ragloom raises on purpose. Errors for bad input
keep the Python convention as a second base (``ValueError`` or ``TypeError``, in
brackets below), so ``except ValueError`` still works::

    RagloomError
    ├── InvalidArgumentError (ValueError)
    │   ├── InvalidMetadataError
    │   ├── InvalidFilterError
    │   │   └── UnsupportedFilterError
    │   ├── PromptTemplateError
    │   └── DocumentSplitError
    ├── InvalidArgumentTypeError (TypeError)
    ├── EvaluationDataError (ValueError)
    ├── DocumentLoadError
    │   ├── BucketNotFoundError
    │   ├── ObjectNotFoundError
    │   ├── ObjectStoreAccessError
    │   ├── ObjectStoreUnavailableError
    │   └── ObjectTooLargeError
    ├── DocumentParseError
    │   ├── UnsupportedDocumentError
    │   ├── EmptyDocumentError
    │   └── EncryptedDocumentError
    ├── EmbeddingModelError
    ├── EmbeddingStoreError
    │   └── MetadataTypeError (TypeError)
    ├── BM25IndexError
    ├── ChatModelError
    ├── RetrievalError
    │   └── ScoringModelError
    │       ├── ScoringStatusError
    │       │   ├── ScoringAuthenticationError
    │       │   ├── ScoringRateLimitError
    │       │   └── ScoringServerError
    │       ├── ScoringConnectionError
    │       │   └── ScoringTimeoutError (TimeoutError)
    │       └── ScoringResponseError
    ├── PluginError
    ├── RagIndexError
    └── EgressRefusedError (PermissionError)

Integration packages subclass these (``OpenAiChatModelError`` is a ``ChatModelError``,
``EncryptedPdfError`` an ``EncryptedDocumentError``); docs/errors.md lists them all.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BM25IndexError",
    "BucketNotFoundError",
    "ChatModelError",
    "DocumentLoadError",
    "DocumentParseError",
    "DocumentSplitError",
    "EmbeddingModelError",
    "EgressRefusedError",
    "EmbeddingStoreError",
    "EmptyDocumentError",
    "EncryptedDocumentError",
    "EvaluationDataError",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "InvalidFilterError",
    "InvalidMetadataError",
    "MetadataTypeError",
    "ObjectNotFoundError",
    "ObjectStoreAccessError",
    "ObjectStoreUnavailableError",
    "ObjectTooLargeError",
    "PluginError",
    "PromptTemplateError",
    "RagIndexError",
    "RagloomError",
    "RetrievalError",
    "ScoringAuthenticationError",
    "ScoringConnectionError",
    "ScoringModelError",
    "ScoringRateLimitError",
    "ScoringResponseError",
    "ScoringServerError",
    "ScoringStatusError",
    "ScoringTimeoutError",
    "UnsupportedDocumentError",
    "UnsupportedFilterError",
]


class RagloomError(Exception):
    """Base class of every error raised by ragloom.

    Every ragloom error survives pickling (Ray, multiprocessing and the server's workers
    move errors between processes): Exception's own unpickling calls ``cls(*args)``, which
    fails for a subclass whose ``__init__`` takes other arguments (``OpenAiError``'s
    keyword-only ``url``...), so the error is made without ``__init__`` and its ``args``
    and attributes are restored as they were (``args`` set again: ``OSError.__new__``
    leaves them to ``__init__`` in a subclass that has its own).
    """

    def __reduce__(self) -> tuple[Any, ...]:
        return (_new_error, (type(self), *self.args), {**vars(self), "args": self.args})


def _new_error(cls: type[RagloomError], *args: object) -> RagloomError:
    """An instance of ``cls`` made without ``__init__``, for unpickling: a ragloom error
    class only, so this function is no gadget to make other objects from a pickle."""
    if not (isinstance(cls, type) and issubclass(cls, RagloomError)):
        raise TypeError(f"unpickling a ragloom error: {cls!r} is not a ragloom error class")
    return cls.__new__(cls, *args)


class InvalidArgumentError(RagloomError, ValueError):
    """An argument or field has a value ragloom does not accept (names it and the value)."""


class InvalidArgumentTypeError(RagloomError, TypeError):
    """An argument or field has the wrong type (names it and the type it got)."""


class InvalidMetadataError(InvalidArgumentError):
    """A metadata key or value is not allowed (names the key and the value's type)."""


class InvalidFilterError(InvalidArgumentError):
    """A metadata filter is malformed or compares incompatible types (names key and value)."""


class PromptTemplateError(InvalidArgumentError):
    """A prompt template is malformed, lacks a required variable, or a value is missing."""


class DocumentSplitError(InvalidArgumentError):
    """A splitter was misconfigured or got an input it cannot split."""


class EvaluationDataError(RagloomError, ValueError):
    """An evaluation data set is missing, malformed or inconsistent (names file and line)."""


class DocumentLoadError(RagloomError):
    """A document could not be read from its source (names the source)."""


class DocumentParseError(RagloomError):
    """A document's content could not be parsed (names the source)."""


class UnsupportedDocumentError(DocumentParseError):
    """No parser handles this kind of document (names the source and its type)."""


class EmptyDocumentError(DocumentParseError):
    """A document has no text (names the source); the spec's parsers refuse blank input."""


class EncryptedDocumentError(DocumentParseError):
    """A document is password-protected and no (or a wrong) password was given."""


class EmbeddingModelError(RagloomError):
    """An embedding model could not embed its input or broke the EmbeddingModel contract."""


class UnsupportedFilterError(InvalidFilterError):
    """A store cannot translate this kind of filter (names the store and the filter)."""


class EmbeddingStoreError(RagloomError):
    """An embedding store operation failed or got bad input; the store stays unchanged."""


class MetadataTypeError(EmbeddingStoreError, TypeError):
    """A write gives a metadata key a value of another type than the store holds for it (or
    declared); names the key, the expected and the given type. The store stays unchanged."""


class BM25IndexError(RagloomError):
    """A BM25 index operation failed or got bad input; the index stays unchanged."""


class ChatModelError(RagloomError):
    """A chat model call failed or broke the ChatModel contract (names the model or stream)."""


class RetrievalError(RagloomError):
    """A retrieval-augmentation stage (routing, aggregation, re-ranking) could not proceed."""


class PluginError(RagloomError):
    """A plugin (entry point) is missing, broken or ambiguous."""


class RagIndexError(RagloomError):
    """An easy-rag index directory is missing, foreign or built with another embedding model."""


class ScoringModelError(RetrievalError):
    """A call to a scoring (re-ranking) model failed; names provider, model and URL.

    ``status_code`` is the HTTP status when the server answered with one.
    """

    def __init__(
        self,
        message: str,
        *,
        model: str | None = None,
        url: str | None = None,
        status_code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.model = model
        self.url = url
        self.status_code = status_code


class ScoringStatusError(ScoringModelError):
    """The server answered with an HTTP error status (after any retries)."""


class ScoringAuthenticationError(ScoringStatusError):
    """HTTP 401 or 403: the API key is missing, wrong or not allowed."""


class ScoringRateLimitError(ScoringStatusError):
    """HTTP 429 on every attempt, or a Retry-After longer than the policy allows."""


class ScoringServerError(ScoringStatusError):
    """HTTP 5xx on every attempt (or a Retry-After longer than the policy allows)."""


class ScoringConnectionError(ScoringModelError):
    """No connection to the server, or it broke off before answering."""


class ScoringTimeoutError(ScoringConnectionError, TimeoutError):
    """The server did not answer within the timeout."""


class ScoringResponseError(ScoringModelError):
    """The answer is not the documented format: not JSON, truncated, bad indexes or scores."""


class BucketNotFoundError(DocumentLoadError):
    """The bucket (container) does not exist."""


class ObjectNotFoundError(DocumentLoadError):
    """The object does not exist (or was deleted between listing and fetching)."""


class ObjectStoreAccessError(DocumentLoadError):
    """The credentials were refused, or do not grant access to the bucket or object."""


class ObjectStoreUnavailableError(DocumentLoadError):
    """The endpoint cannot be reached."""


class ObjectTooLargeError(DocumentLoadError):
    """The object is larger than the loader's ``max_object_size``."""


class EgressRefusedError(RagloomError, PermissionError):
    """A URL or address refused by the egress policy (names the URL, address and rule)."""
