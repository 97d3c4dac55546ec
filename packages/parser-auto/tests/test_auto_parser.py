"""AutoDocumentParser: extractous (Tika native) in bounded worker processes."""

from __future__ import annotations

import io
import os
import signal
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import docx
import openpyxl
import pptx
import pytest
import xlwt
from msoffcrypto.format.ooxml import OOXMLFile

from ragloom.core import (
    DocumentParseError,
    EmptyDocumentError,
    FileSystemDocumentLoader,
    TextDocumentParser,
    plugins,
)
from ragloom.core.parsers.dispatch import DispatchingDocumentParser
from ragloom.parsers.auto import (
    ApacheTikaDocumentParser,
    AutoDocumentParser,
    DocumentTooLargeError,
    EncryptedDocumentError,
    ParseTimeoutError,
)
from ragloom.testkit import DocumentParserSuite, ParserSample

FIXTURES = Path(__file__).parent / "fixtures"
SAMPLE_PDF = (FIXTURES / "sample.pdf").read_bytes()
UNICODE = "中文 日本語 한국어 · שלום עולם · مرحبا · 🌍🎉"


def saved(document: object) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)  # type: ignore[attr-defined]
    return buffer.getvalue()


def make_docx(text: str = "Word text " + UNICODE) -> bytes:
    document = docx.Document()
    document.add_heading("Docx heading", level=1)
    document.add_paragraph(text)
    document.core_properties.title = "Docx title"
    document.core_properties.author = "Ann"
    return saved(document)


def make_xlsx() -> bytes:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.append(["cell a1", 42])
    return saved(workbook)


def make_pptx() -> bytes:
    presentation = pptx.Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[1])
    assert slide.shapes.title is not None
    slide.shapes.title.text = "Slide title"
    return saved(presentation)


def make_xls() -> bytes:
    workbook = xlwt.Workbook()
    workbook.add_sheet("Legacy").write(0, 0, "legacy excel cell")
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def parser() -> Iterator[AutoDocumentParser]:
    with AutoDocumentParser() as shared:
        yield shared


class TestAutoDocumentParserSuite(DocumentParserSuite):
    @pytest.fixture
    def parser(self) -> Iterator[AutoDocumentParser]:
        with AutoDocumentParser(workers=2) as auto:
            yield auto

    @pytest.fixture
    def sample(self) -> ParserSample:
        return ParserSample(make_docx(), ["Docx heading", UNICODE])


class TestInProcessSuite(DocumentParserSuite):
    @pytest.fixture
    def parser(self) -> AutoDocumentParser:
        return AutoDocumentParser(timeout=None)

    @pytest.fixture
    def sample(self) -> ParserSample:
        return ParserSample(SAMPLE_PDF, ["Hello from a PDF", "🌍🎉"])


def test_pdf_text_and_typed_metadata(parser: AutoDocumentParser) -> None:
    doc = parser.parse(SAMPLE_PDF, source="sample.pdf")
    assert doc.text == (
        "Hello from a PDF page one\n\n中文 日本語 한국어\nשלום עולם\nemoji 🌍🎉"  # noqa: RUF001
    )
    assert doc.metadata.to_dict() == {
        "content_type": "application/pdf",
        "title": "Auto Sample",
        "author": "Ann Author",
        "creation_date": "2024-01-02T03:04:05Z",
        "page_count": 2,
    }


@pytest.mark.parametrize(
    ("data", "content_type", "fragment"),
    [
        (
            make_docx(),
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            UNICODE,
        ),
        (
            make_xlsx(),
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            "cell a1",
        ),
        (
            make_pptx(),
            "application/vnd.openxmlformats-officedocument.presentationml.presentation",
            "Slide title",
        ),
        (make_xls(), "application/vnd.ms-excel", "legacy excel cell"),
        (
            b"{\\rtf1\\ansi{\\fonttbl\\f0 Arial;}\\f0 Hello RTF world\\par}",
            "application/rtf",
            "Hello RTF world",
        ),
        (UNICODE.encode(), "text/plain", UNICODE),
        (
            b"<html><head><title>T</title><script>leak()</script></head><body><p>Web page</p>"
            b"</body></html>",
            "text/html",
            "Web page",
        ),
    ],
)
def test_detects_and_parses_many_formats(
    parser: AutoDocumentParser, data: bytes, content_type: str, fragment: str
) -> None:
    doc = parser.parse(data, source="no-hint")
    assert doc.metadata["content_type"] == content_type
    assert fragment in doc.text
    assert "leak()" not in doc.text


def test_office_metadata_and_raw_metadata() -> None:
    with AutoDocumentParser(raw_metadata=True) as auto:
        metadata = auto.parse(make_docx()).metadata
    assert metadata["title"] == "Docx title"
    assert metadata["author"] == "Ann"
    assert metadata["dc:title"] == "Docx title"
    assert metadata["page_count"] == 1
    assert isinstance(metadata["page_count"], int)


def test_password_protected(parser: AutoDocumentParser) -> None:
    with pytest.raises(EncryptedDocumentError, match="locked.pdf: .*password-protected"):
        parser.parse((FIXTURES / "encrypted.pdf").read_bytes(), source="locked.pdf")
    out = io.BytesIO()
    OOXMLFile(io.BytesIO(make_docx())).encrypt("pw", out)
    with pytest.raises(EncryptedDocumentError, match="locked.docx"):
        parser.parse(out.getvalue(), source="locked.docx")


@pytest.mark.parametrize("data", [b"", b" \n\t "])
def test_empty_and_zero_byte(parser: AutoDocumentParser, data: bytes) -> None:
    with pytest.raises(EmptyDocumentError, match="empty.bin: empty file"):
        parser.parse(data, source="empty.bin")


def test_scanned_pdf_has_no_text(parser: AutoDocumentParser) -> None:
    with pytest.raises(EmptyDocumentError, match=r"scan.pdf: no text found.*pdf.*OCR"):
        parser.parse((FIXTURES / "scanned.pdf").read_bytes(), source="scan.pdf")


def test_garbage_and_truncated_input(parser: AutoDocumentParser) -> None:
    garbage = bytes(range(256)) * 64
    with pytest.raises(DocumentParseError, match="garbage.bin"):
        parser.parse(garbage, source="garbage.bin")
    with pytest.raises(DocumentParseError, match="cut.pdf"):
        parser.parse(SAMPLE_PDF[: len(SAMPLE_PDF) // 2], source="cut.pdf")
    cut_docx = make_docx()[:2000]
    with pytest.raises(DocumentParseError, match="cut.docx"):
        parser.parse(cut_docx, source="cut.docx")


def test_size_limits() -> None:
    with AutoDocumentParser(max_bytes=1000) as auto:
        with pytest.raises(DocumentTooLargeError, match=r"big.pdf: larger than max_bytes=1,000"):
            auto.parse(SAMPLE_PDF, source="big.pdf")
        with pytest.raises(DocumentTooLargeError, match="max_bytes"):
            auto.parse(io.BytesIO(SAMPLE_PDF))
        assert auto.parse(b"small enough").text == "small enough"
    with AutoDocumentParser(max_chars=100) as auto:
        with pytest.raises(DocumentTooLargeError, match=r"long.txt: .*text/plain.*max_chars=100"):
            auto.parse(b"word " * 100, source="long.txt")
        assert auto.parse(b"x" * 100).text == "x" * 100


def test_timeout_stops_the_work_and_the_next_file_parses() -> None:
    with AutoDocumentParser(timeout=0.001) as auto:
        with pytest.raises(ParseTimeoutError, match=r"slow.docx: parsing took longer than 0.001 s"):
            auto.parse(make_docx(), source="slow.docx")
        auto.timeout = 60
        assert "Docx heading" in auto.parse(make_docx()).text


def test_a_crashed_worker_is_replaced() -> None:
    with AutoDocumentParser() as auto:
        assert auto.parse(b"first").text == "first"
        (worker,) = auto._pool.all
        os.kill(worker.process.pid, signal.SIGKILL)
        worker.process.wait()
        assert auto.parse(b"second").text == "second"


def test_memory_limit_failure_is_a_clear_error() -> None:
    expected = r"tiny.txt: the parser process failed"
    with (
        AutoDocumentParser(max_memory=16 * 1024 * 1024) as auto,
        pytest.raises(DocumentParseError, match=expected),
    ):
        auto.parse(b"some text", source="tiny.txt")


def test_concurrent_workers_and_close() -> None:
    auto = AutoDocumentParser(workers=2)
    docs = [make_docx(f"document number {i}") for i in range(6)]
    with ThreadPoolExecutor(3) as pool:
        texts = list(pool.map(lambda d: auto.parse(d).text, docs))
    assert all(f"document number {i}" in text for i, text in enumerate(texts))
    assert 1 <= len(auto._pool.all) <= 2
    processes = [w.process for w in auto._pool.all]
    auto.close()
    assert all(p.poll() is not None for p in processes)
    assert auto.parse(b"usable after close").text == "usable after close"
    auto.close()


def test_invalid_settings() -> None:
    with pytest.raises(ValueError, match="timeout"):
        AutoDocumentParser(timeout=0)
    with pytest.raises(ValueError, match="workers"):
        AutoDocumentParser(workers=0)
    assert ApacheTikaDocumentParser is AutoDocumentParser


def test_registered_as_the_catch_all() -> None:
    assert AutoDocumentParser.catch_all is True
    auto = plugins.load("ragloom.document_parsers", "auto")
    assert isinstance(auto, AutoDocumentParser)
    auto.close()
    dispatcher = DispatchingDocumentParser.from_plugins()
    assert isinstance(dispatcher.parser_for("legacy.xls", make_xls()), AutoDocumentParser)
    assert isinstance(dispatcher.parser_for("photo.png", b"\x89PNG\r\n\x1a\n"), AutoDocumentParser)
    assert isinstance(dispatcher.parser_for("notes.txt", b"text"), TextDocumentParser)
    everything = DispatchingDocumentParser.from_plugins(prefer="auto")
    assert isinstance(everything.parser_for("notes.txt", b"text"), AutoDocumentParser)


def test_directory_with_bad_files_ingests_the_good_ones(tmp_path: Path) -> None:
    (tmp_path / "legacy.xls").write_bytes(make_xls())
    (tmp_path / "doc.rtf").write_bytes(b"{\\rtf1\\ansi Rich text body\\par}")
    (tmp_path / "notes.txt").write_text("plain notes")
    (tmp_path / "scan.pdf").write_bytes((FIXTURES / "scanned.pdf").read_bytes())
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)) * 16)
    (tmp_path / "zero.rtf").write_bytes(b"")
    auto = AutoDocumentParser()
    try:
        loaded = FileSystemDocumentLoader.load_documents(
            tmp_path, DispatchingDocumentParser([auto])
        )
    finally:
        auto.close()
    texts = {d.metadata["file_name"]: d.text for d in loaded}
    assert texts == {
        "legacy.xls": "Legacy\n\tlegacy excel cell",
        "doc.rtf": "Rich text body",
        "notes.txt": "plain notes",
    }
    failed = {Path(f.source).name: f.error for f in loaded.failures}
    assert set(failed) == {"scan.pdf", "blob.bin", "zero.rtf"}
    assert all(isinstance(e, EmptyDocumentError) for e in failed.values())
    assert all(name in str(error) for name, error in failed.items())
