"""One guarded parse for every loader: a parser's unexpected exception names the file."""

from __future__ import annotations

from typing import BinaryIO

from ragloom.core.document import Document
from ragloom.core.errors import DocumentParseError, RagloomError
from ragloom.core.parsers.base import DocumentParser

__all__ = [
    "parse_source",
]


def parse_source(parser: DocumentParser, data: bytes | BinaryIO, source: str) -> Document:
    """``parser.parse(data, source=source)``; any non-ragloom exception (a parser bug,
    ``RecursionError`` on hostile input, ``MemoryError``...) becomes a
    :class:`DocumentParseError` naming ``source``, so a batch keeps its good files."""
    try:
        return parser.parse(data, source=source)
    except RagloomError:
        raise
    except Exception as exc:
        raise DocumentParseError(
            f"{source}: {type(parser).__name__} failed: {type(exc).__name__}: {exc}"
        ) from exc
