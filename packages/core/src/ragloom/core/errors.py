"""The ragloom error hierarchy: every error names the file, key or value at fault."""

from __future__ import annotations


class RagloomError(Exception):
    """Base class of every error raised by ragloom."""


class InvalidMetadataError(RagloomError, ValueError):
    """A metadata key or value is not allowed (names the key and the value's type)."""


class DocumentLoadError(RagloomError):
    """A document could not be read from its source (names the source)."""


class DocumentParseError(RagloomError):
    """A document's content could not be parsed (names the source)."""


class UnsupportedDocumentError(DocumentParseError):
    """No parser handles this kind of document (names the source and its type)."""


class EmptyDocumentError(DocumentParseError):
    """A document has no text (names the source); the spec's parsers refuse blank input."""


class DocumentSplitError(RagloomError, ValueError):
    """A splitter was misconfigured or got an input it cannot split."""


class InvalidFilterError(RagloomError, ValueError):
    """A metadata filter is malformed or compares incompatible types (names key and value)."""


class UnsupportedFilterError(InvalidFilterError):
    """A store cannot translate this kind of filter (names the store and the filter)."""


class EmbeddingStoreError(RagloomError):
    """An embedding store operation failed or got bad input; the store stays unchanged."""


class PluginError(RagloomError):
    """A plugin (entry point) is missing, broken or ambiguous."""


class ChatModelError(RagloomError):
    """A chat model call failed or broke the ChatModel contract (names the model or stream)."""


class PromptTemplateError(RagloomError, ValueError):
    """A prompt template is malformed, lacks a required variable, or a value is missing."""


class RetrievalError(RagloomError):
    """A retrieval-augmentation stage (routing, aggregation, re-ranking) could not proceed."""


class EncryptedDocumentError(DocumentParseError):
    """A document is password-protected and no (or a wrong) password was given."""


class EmbeddingModelError(RagloomError):
    """An embedding model could not embed its input (names the text or the model)."""
