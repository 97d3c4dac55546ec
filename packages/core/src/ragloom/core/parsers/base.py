"""The DocumentParser protocol."""

from __future__ import annotations

from typing import BinaryIO, Protocol, runtime_checkable

from ragloom.core.document import Document

__all__ = [
    "DocumentParser",
    "read_all",
    "source_name",
]


@runtime_checkable
class DocumentParser(Protocol):
    """Parses the content of one file/stream into a :class:`Document`.

    ``source`` names where the bytes came from (a path or URL); parsers put it in
    error messages so a failure always says which input was at fault.
    """

    def parse(self, data: bytes | BinaryIO, *, source: str | None = None) -> Document:
        """Parse ``data`` (bytes or a binary stream) into a Document."""
        ...


def read_all(data: bytes | BinaryIO) -> bytes:
    """The bytes of ``data``, reading a stream to its end."""
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    return data.read()


def source_name(data: bytes | BinaryIO, source: str | None) -> str:
    """A human-readable name for the input: ``source``, the stream's name, or ``<bytes>``."""
    if source:
        return source
    name = getattr(data, "name", None)
    return str(name) if name else "<bytes>"
