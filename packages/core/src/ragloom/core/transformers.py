"""DocumentTransformer and TextSegmentTransformer protocols.

A transformer cleans, filters or enriches; returning ``None`` drops the item. Subclass
the protocol to inherit ``transform_all``, which applies ``transform`` and drops Nones.
A plain function of one item (the spec's lambda form) is accepted wherever a transformer
is: :func:`as_document_transformer` and :func:`as_text_segment_transformer` adapt it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, runtime_checkable

from ragloom.core.document import Document, TextSegment
from ragloom.core.errors import InvalidArgumentTypeError

__all__ = [
    "DocumentTransformer",
    "TextSegmentTransformer",
    "DocumentFunction",
    "TextSegmentFunction",
    "as_document_transformer",
    "as_text_segment_transformer",
]

DocumentFunction = Callable[[Document], "Document | None"]
"""A function transformer of documents (the spec's ``document -> { ...; return document; }``)."""
TextSegmentFunction = Callable[[TextSegment], "TextSegment | None"]
"""A function transformer of segments."""


@runtime_checkable
class DocumentTransformer(Protocol):
    """Transforms one Document (or drops it by returning ``None``)."""

    def transform(self, document: Document) -> Document | None:
        """The transformed document, or ``None`` to drop it."""
        ...

    def transform_all(self, documents: Iterable[Document]) -> list[Document]:
        """Transform every document, dropping those mapped to ``None``."""
        return [out for doc in documents if (out := self.transform(doc)) is not None]


@runtime_checkable
class TextSegmentTransformer(Protocol):
    """Transforms one TextSegment (or drops it by returning ``None``)."""

    def transform(self, segment: TextSegment) -> TextSegment | None:
        """The transformed segment, or ``None`` to drop it."""
        ...

    def transform_all(self, segments: Iterable[TextSegment]) -> list[TextSegment]:
        """Transform every segment, dropping those mapped to ``None``."""
        return [out for seg in segments if (out := self.transform(seg)) is not None]


class _DocumentFunctionTransformer(DocumentTransformer):
    """A function of one document as a :class:`DocumentTransformer`."""

    def __init__(self, function: DocumentFunction) -> None:
        self.function = function

    def transform(self, document: Document) -> Document | None:
        out = self.function(document)
        if out is not None and not isinstance(out, Document):
            raise InvalidArgumentTypeError(
                f"document transformer {self.function!r} returned {type(out).__name__}, "
                "not a Document or None"
            )
        return out


class _TextSegmentFunctionTransformer(TextSegmentTransformer):
    """A function of one segment as a :class:`TextSegmentTransformer`."""

    def __init__(self, function: TextSegmentFunction) -> None:
        self.function = function

    def transform(self, segment: TextSegment) -> TextSegment | None:
        out = self.function(segment)
        if out is not None and not isinstance(out, TextSegment):
            raise InvalidArgumentTypeError(
                f"text segment transformer {self.function!r} returned {type(out).__name__}, "
                "not a TextSegment or None"
            )
        return out


def as_document_transformer(value: DocumentTransformer | DocumentFunction) -> DocumentTransformer:
    """``value`` when it is a full transformer; an object with only ``transform``, or a
    plain function of one document, adapted (its results are checked to be documents)."""
    if isinstance(value, DocumentTransformer):
        return value
    transform = getattr(value, "transform", None)
    if callable(transform):
        return _DocumentFunctionTransformer(transform)
    if callable(value):
        return _DocumentFunctionTransformer(value)
    raise InvalidArgumentTypeError(
        f"document_transformer must be a DocumentTransformer or a function of a Document, "
        f"got {type(value).__name__}: {value!r}"
    )


def as_text_segment_transformer(
    value: TextSegmentTransformer | TextSegmentFunction,
) -> TextSegmentTransformer:
    """``value`` when it is a full transformer; an object with only ``transform``, or a
    plain function of one segment, adapted (its results are checked to be segments)."""
    if isinstance(value, TextSegmentTransformer):
        return value
    transform = getattr(value, "transform", None)
    if callable(transform):
        return _TextSegmentFunctionTransformer(transform)
    if callable(value):
        return _TextSegmentFunctionTransformer(value)
    raise InvalidArgumentTypeError(
        f"text_segment_transformer must be a TextSegmentTransformer or a function of a "
        f"TextSegment, got {type(value).__name__}: {value!r}"
    )
