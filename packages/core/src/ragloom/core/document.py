"""Document and TextSegment: the text units that flow through a RAG pipeline."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragloom.core.errors import InvalidArgumentTypeError
from ragloom.core.metadata import Metadata, MetadataValue, as_metadata, validated_dict

__all__ = [
    "FILE_NAME",
    "ABSOLUTE_DIRECTORY_PATH",
    "URL",
    "INDEX",
    "START",
    "END",
    "Document",
    "TextSegment",
]

# Metadata keys that loaders and splitters write, named once here.
FILE_NAME = "file_name"
ABSOLUTE_DIRECTORY_PATH = "absolute_directory_path"
URL = "url"
INDEX = "index"
START = "start"
END = "end"


class Document:
    """An entire document (a file, a web page) as text plus :class:`Metadata`."""

    __slots__ = ("metadata", "text")

    def __init__(self, text: str, metadata: Metadata | Mapping[str, Any] | None = None) -> None:
        if not isinstance(text, str):
            raise InvalidArgumentTypeError(f"Document text must be str, got {type(text).__name__}")
        self.text = text
        self.metadata = as_metadata(metadata)

    @classmethod
    def from_text(cls, text: str, metadata: Metadata | Mapping[str, Any] | None = None) -> Document:
        """The spec's ``Document.from(text[, metadata])``."""
        return cls(text, metadata)

    def to_text_segment(self) -> TextSegment:
        """The whole document as one segment (metadata copied, ``index`` 0)."""
        metadata = self.metadata.copy()
        metadata[INDEX] = 0
        return TextSegment(self.text, metadata)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Document):
            return NotImplemented
        return self.text == other.text and self.metadata == other.metadata

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Document(text={_preview(self.text)!r}, metadata={self.metadata.to_dict()!r})"


class TextSegment:
    """A piece of a document: text plus metadata (``index``, ``start``, ``end`` when split).

    A plain dict of metadata is validated and copied on construction; the
    :class:`Metadata` around it is made on first access of :attr:`metadata` (one object a
    segment instead of two while segments are built in bulk).
    """

    __slots__ = ("_metadata", "text")

    # A validated dict until ``metadata`` is first read, then the Metadata around it.
    _metadata: Metadata | dict[str, MetadataValue]

    def __init__(self, text: str, metadata: Metadata | Mapping[str, Any] | None = None) -> None:
        if type(text) is not str and not isinstance(text, str):
            raise InvalidArgumentTypeError(
                f"TextSegment text must be str, got {type(text).__name__}"
            )
        self.text = text
        # The type test first: isinstance against an ABC costs more than the dict check.
        self._metadata = (
            validated_dict(metadata)
            if type(metadata) is dict or not isinstance(metadata, Metadata)
            else metadata
        )

    @property
    def metadata(self) -> Metadata:
        """The segment's :class:`Metadata` (the same object on every access)."""
        metadata = self._metadata
        if type(metadata) is dict:
            metadata = self._metadata = Metadata._trusted(metadata)
        return metadata  # type: ignore[return-value]

    @metadata.setter
    def metadata(self, value: Metadata | Mapping[str, Any] | None) -> None:
        self._metadata = as_metadata(value)

    @classmethod
    def _trusted(cls, text: str, metadata: Metadata | dict[str, MetadataValue]) -> TextSegment:
        """Wrap a ``str`` and a :class:`Metadata` (or a validated dict, wrapped on first
        access) without checking them (internal fast path for splitters and stores, which
        build both themselves)."""
        instance = cls.__new__(cls)
        instance.text = text
        instance._metadata = metadata
        return instance

    @classmethod
    def from_text(
        cls, text: str, metadata: Metadata | Mapping[str, Any] | None = None
    ) -> TextSegment:
        """The spec's ``TextSegment.from(text[, metadata])``."""
        return cls(text, metadata)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TextSegment):
            return NotImplemented
        return self.text == other.text and self.metadata == other.metadata

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TextSegment(text={_preview(self.text)!r}, metadata={self.metadata.to_dict()!r})"


def _preview(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
