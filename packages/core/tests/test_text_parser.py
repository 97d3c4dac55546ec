import io

import pytest

from ragloom.core import DocumentParseError, EmptyDocumentError, TextDocumentParser
from ragloom.core.parsers.text import detect_charset


def test_utf8_and_stream() -> None:
    text = "Grüße, 世界 🌍\n"
    assert TextDocumentParser().parse(text.encode()).text == text
    assert TextDocumentParser().parse(io.BytesIO(text.encode())).text == text


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-32", "utf-16-le", "utf-16-be"])
def test_detects_unicode_encodings(encoding: str) -> None:
    text = "Ünïcödé text, some words and more words."
    assert TextDocumentParser().parse(text.encode(encoding)).text == text


def test_detects_windows_1252() -> None:
    text = "Caf\u00e9 \u2013 \u201cquoted\u201d na\u00efve"
    assert TextDocumentParser().parse(text.encode("cp1252")).text == text


def test_explicit_charset() -> None:
    assert TextDocumentParser("latin-1").parse("é".encode("latin-1")).text == "é"


def test_undecodable_with_charset_names_source() -> None:
    with pytest.raises(DocumentParseError, match=r"notes\.txt.*utf-8.*byte 1"):
        TextDocumentParser("utf-8").parse(b"a\xff\xfe", source="notes.txt")


def test_binary_is_refused() -> None:
    with pytest.raises(DocumentParseError, match="binary"):
        TextDocumentParser().parse(bytes(range(256)) * 4, source="blob.bin")


def test_unknown_charset() -> None:
    with pytest.raises(DocumentParseError, match="no-such"):
        TextDocumentParser("no-such-charset")


@pytest.mark.parametrize("data", [b"", b"   \n\t "])
def test_blank_input_is_an_error(data: bytes) -> None:
    with pytest.raises(EmptyDocumentError, match="empty.txt"):
        TextDocumentParser().parse(data, source="empty.txt")


def test_stream_name_is_used_as_source() -> None:
    stream = io.BytesIO(b"")
    stream.name = "stream.md"
    with pytest.raises(EmptyDocumentError, match=r"stream\.md"):
        TextDocumentParser().parse(stream)


@pytest.mark.parametrize("charset", ["utf-16-le", "utf-16-be"])
def test_utf16_without_bom_is_detected(charset: str) -> None:
    text = "Plain ASCII notes\nsecond line\n" * 20
    raw = text.encode(charset)  # no byte-order mark
    assert detect_charset(raw, "notes.txt") == charset
    assert TextDocumentParser().parse(raw, source="notes.txt").text.startswith("Plain ASCII")


def test_binary_with_many_zero_bytes_is_still_binary() -> None:
    raw = bytes(range(256)) * 16 + b"\x00\x01" * 2000
    with pytest.raises(DocumentParseError, match="binary"):
        detect_charset(raw, "blob.bin")
