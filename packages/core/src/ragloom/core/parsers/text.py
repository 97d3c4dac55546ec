"""TextDocumentParser: plain text (TXT, MD, HTML source, CSV, ...) with charset detection."""

from __future__ import annotations

import codecs
from typing import BinaryIO

from ragloom.core.document import Document
from ragloom.core.errors import DocumentParseError, EmptyDocumentError
from ragloom.core.parsers.base import read_all, source_name

__all__ = [
    "TextDocumentParser",
    "check_charset",
    "detect_charset",
]

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# C0 controls other than tab, LF, VT, FF, CR, ESC: their presence means "binary, not text".
_BINARY_BYTES = bytes(range(0, 9)) + bytes(range(14, 27)) + bytes(range(28, 32))


class TextDocumentParser:
    """Decodes bytes as text.

    With ``charset`` the bytes are decoded strictly with it. Without, the charset is
    detected: a byte-order mark wins, then UTF-8, then UTF-16 without BOM (by its zero
    bytes), then Windows-1252; input that looks binary (control bytes) is refused.
    Blank input raises :class:`EmptyDocumentError`, as the spec's parsers do.
    """

    def __init__(self, charset: str | None = None) -> None:
        self.charset = None if charset is None else check_charset(charset)

    def parse(self, data: bytes | BinaryIO, *, source: str | None = None) -> Document:
        """Decode ``data`` into a Document; errors name ``source``."""
        raw = read_all(data)
        name = source_name(data, source)
        charset = self.charset or detect_charset(raw, name)
        try:
            text = raw.decode(charset)
        except UnicodeDecodeError as exc:
            raise DocumentParseError(
                f"{name}: cannot decode as {charset} at byte {exc.start}: {exc.reason}"
            ) from exc
        if not text.strip():
            raise EmptyDocumentError(f"{name}: document is empty or blank")
        return Document(text)


def check_charset(charset: str) -> str:
    """``charset`` if Python knows that codec; :class:`DocumentParseError` naming it if not."""
    try:
        codecs.lookup(charset)
    except LookupError as exc:
        raise DocumentParseError(f"unknown charset {charset!r}") from exc
    return charset


def detect_charset(raw: bytes, name: str = "<bytes>") -> str:
    """Guess the charset of ``raw``; raise :class:`DocumentParseError` for binary data."""
    for bom, charset in _BOMS:
        if raw.startswith(bom):
            return charset
    utf16 = _utf16_without_bom(raw)
    if utf16 is not None:
        return utf16
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        if _looks_binary(raw):
            raise DocumentParseError(f"{name}: looks like binary data, not text")
        return "utf-8"
    if _looks_binary(raw):
        raise DocumentParseError(f"{name}: looks like binary data, not text")
    return "cp1252"


def _utf16_without_bom(raw: bytes) -> str | None:
    """UTF-16 without a byte-order mark, recognised by its zero bytes: mostly-Latin text has
    a zero in (nearly) every high byte and almost none in the low bytes, and the sample
    decodes to text without control characters. (NUL bytes are valid UTF-8, so this runs
    before the UTF-8 check.)"""
    sample = raw[: 4096 & ~1] if len(raw) > 4096 else raw[: len(raw) & ~1]
    half = len(sample) // 2
    if half < 2:
        return None
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    if odd * 10 >= half * 4 and even * 20 <= half:
        charset = "utf-16-le"
    elif even * 10 >= half * 4 and odd * 20 <= half:
        charset = "utf-16-be"
    else:
        return None
    try:
        text = sample.decode(charset)
    except UnicodeDecodeError:
        return None
    controls = sum(1 for c in text if c < " " and c not in "\t\n\r\f")
    return charset if controls * 100 <= len(text) else None


def _looks_binary(raw: bytes) -> bool:
    sample = raw[:8192]
    if not sample:
        return False
    controls = len(sample) - len(sample.translate(None, _BINARY_BYTES))
    return controls * 100 > len(sample)  # more than 1 % control bytes
