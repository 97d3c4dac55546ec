"""The lexical rules of the textual filter syntax, shared by rendering and parsing.

``str(filter)`` writes filters with :func:`render_key` and :func:`render_value`;
:func:`~ragloom.core.parse_filter` reads them back with :func:`read_quoted` and the same
:data:`RESERVED_WORDS`, so the escapes and keywords live here once and round-trip.
"""

from __future__ import annotations

import re
import uuid

from ragloom.core.errors import InvalidFilterError
from ragloom.core.metadata import MetadataValue

__all__ = ["BARE_KEY", "RESERVED_WORDS", "quote", "read_quoted", "render_key", "render_value"]

RESERVED_WORDS = frozenset({"and", "or", "not", "in", "contains", "true", "false"})
"""Words that are keywords of the syntax (case-insensitive); keys spelled so are quoted."""
BARE_KEY = re.compile(r"[^\W\d][\w.\-]*")
"""A key written without quotes: letters, digits, ``_ . -``, not starting with a digit."""

_SIMPLE_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "`": "`", "n": "\n", "r": "\r", "t": "\t"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_HEX = re.compile(r"[0-9a-fA-F]+")


def quote(text: str, quote_char: str) -> str:
    """``text`` in ``quote_char`` quotes, escaped so that :func:`read_quoted` reads it back."""
    out = [quote_char]
    for char in text:
        if char == quote_char:
            out.append("\\" + char)
        elif char in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[char])
        elif not char.isprintable():
            code = ord(char)
            out.append(
                f"\\x{code:02x}"
                if code < 0x100
                else f"\\u{code:04x}"
                if code < 0x10000
                else f"\\U{code:08x}"
            )
        else:
            out.append(char)
    out.append(quote_char)
    return "".join(out)


def read_quoted(text: str, start: int) -> tuple[str, int]:
    """The unescaped content of the quoted token at ``start`` and the index after it."""
    quote = text[start]
    parts: list[str] = []
    i = start + 1
    while i < len(text):
        char = text[i]
        if char == quote:
            return "".join(parts), i + 1
        if char != "\\":
            parts.append(char)
            i += 1
            continue
        escape = text[i + 1 : i + 2]
        if escape in _ESCAPES:
            parts.append(_ESCAPES[escape])
            i += 2
        elif escape in _HEX_ESCAPES:
            digits = text[i + 2 : i + 2 + _HEX_ESCAPES[escape]]
            if len(digits) != _HEX_ESCAPES[escape] or not _HEX.fullmatch(digits):
                raise InvalidFilterError(f"invalid escape '\\{escape}{digits}' at column {i + 1}")
            if int(digits, 16) > 0x10FFFF:
                raise InvalidFilterError(
                    f"escape '\\{escape}{digits}' at column {i + 1} is beyond Unicode"
                )
            parts.append(chr(int(digits, 16)))
            i += 2 + len(digits)
        elif escape:
            raise InvalidFilterError(f"unknown escape '\\{escape}' at column {i + 1}")
        else:
            break
    what = "key" if quote == "`" else "string"
    raise InvalidFilterError(f"unterminated {what} starting at column {start + 1}")


def render_key(key: str) -> str:
    """``key`` bare when it is an identifier and not a reserved word, else in backticks."""
    if BARE_KEY.fullmatch(key) and key.lower() not in RESERVED_WORDS:
        return key
    return quote(key, "`")


def render_value(value: MetadataValue) -> str:
    """A filter value as a literal of the syntax."""
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    if type(value) is float:
        return repr(value)
    if type(value) is str:
        return quote(value, '"')
    assert isinstance(value, uuid.UUID)
    return f'uuid("{value}")'
