"""PdfDocumentParser on PDFs written by the tests (make_pdf) and encrypted by pypdf."""

from __future__ import annotations

import io
import logging
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pypdf
import pytest

from ragloom.core import (
    Document,
    DocumentParseError,
    EmptyDocumentError,
    FileSystemDocumentLoader,
    InvalidMetadataError,
    TextSegment,
    plugins,
)
from ragloom.core.loaders.default_parser import default_document_parser
from ragloom.core.parsers.dispatch import DispatchingDocumentParser
from ragloom.parsers.pdf import (
    EncryptedPdfError,
    PdfDocumentParser,
    ScannedPdfError,
    page_number,
)
from ragloom.parsers.pdf.testing import make_pdf
from ragloom.testkit import DocumentParserSuite, ParserSample

UNICODE = ["中文测试 日本語 한국어", "שלום עולם", "مرحبا بالعالم", "emoji 🌍🎉 ok"]


class TestPdfDocumentParserSuite(DocumentParserSuite):
    @pytest.fixture
    def parser(self) -> PdfDocumentParser:
        return PdfDocumentParser()

    @pytest.fixture
    def sample(self) -> ParserSample:
        return ParserSample(
            make_pdf(["Hello PDF\nsecond line", "\n".join(UNICODE)]),
            ["Hello PDF", *UNICODE],
        )


def encrypt(data: bytes, user: str, owner: str | None = None, algorithm: str = "AES-256") -> bytes:
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password=user, owner_password=owner, algorithm=algorithm)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


THREE_PAGES = make_pdf(["first page", "second page\nmore", "third page"])


def test_pages_joined_with_offsets_that_map_back_to_pages() -> None:
    doc = PdfDocumentParser().parse(THREE_PAGES, source="three.pdf")
    assert doc.text == "first page\n\nsecond page\nmore\n\nthird page"
    assert doc.metadata["page_count"] == 3
    assert doc.metadata["page_offsets"] == "0,12,30"
    for word, page in [("first", 1), ("second", 2), ("more", 2), ("third", 3)]:
        start = doc.text.index(word)
        segment = TextSegment(word, {**doc.metadata.to_dict(), "start": start})
        assert page_number(segment) == page
        assert page_number(doc, start) == page
        assert page_number(doc.metadata, start) == page
    with pytest.raises(InvalidMetadataError, match="page_offsets"):
        page_number(Document("not from a pdf"))


def test_custom_separator_and_pages_as_documents() -> None:
    doc = PdfDocumentParser(page_separator="\f").parse(THREE_PAGES)
    assert doc.text.split("\f") == ["first page", "second page\nmore", "third page"]
    assert doc.metadata["page_offsets"] == "0,11,28"
    pages = PdfDocumentParser().parse_pages(io.BytesIO(make_pdf(["one", "", "three"])))
    assert [(p.text, p.metadata["page_number"]) for p in pages] == [("one", 1), ("three", 3)]
    assert all(p.metadata["page_count"] == 3 for p in pages)


def test_typed_metadata_from_the_information_dictionary() -> None:
    created = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    data = make_pdf(
        ["body"],
        info={
            "Title": "Annual Report 年报",
            "Author": "Ann Author",
            "Subject": "Finance",
            "Keywords": "money, report",
            "Creator": "Writer",
            "Producer": "ragloom tests",
            "CreationDate": created,
            "ModDate": datetime(2024, 2, 3, 4, 5, 6),
        },
    )
    metadata = PdfDocumentParser().parse(data).metadata.to_dict()
    assert metadata == {
        "pdf_version": "1.7",
        "title": "Annual Report 年报",
        "author": "Ann Author",
        "subject": "Finance",
        "keywords": "money, report",
        "creator": "Writer",
        "producer": "ragloom tests",
        "creation_date": "2024-01-02T03:04:05+00:00",
        "modification_date": "2024-02-03T04:05:06",
        "page_count": 1,
        "page_offsets": "0",
    }


def test_malformed_date_is_kept_as_written() -> None:
    data = make_pdf(["body"], info={"CreationDate": "yesterday-ish"})
    assert PdfDocumentParser().parse(data).metadata["creation_date"] == "yesterday-ish"


@pytest.mark.parametrize("text", UNICODE)
def test_unicode_text(text: str) -> None:
    assert PdfDocumentParser().parse(make_pdf([text])).text == text


@pytest.mark.parametrize("data", [b"", b"   \n", b"\x00" * 0])
def test_empty_and_zero_byte_input(data: bytes) -> None:
    with pytest.raises(EmptyDocumentError, match="empty.pdf"):
        PdfDocumentParser().parse(data, source="empty.pdf")


def test_wrong_content_for_the_extension() -> None:
    docx = io.BytesIO()
    with zipfile.ZipFile(docx, "w") as archive:
        archive.writestr("word/document.xml", "<w:document/>")
    for data in (docx.getvalue(), "just text, ünïcode".encode()):
        with pytest.raises(DocumentParseError, match=r"renamed\.pdf: not a PDF"):
            PdfDocumentParser().parse(data, source="renamed.pdf")


@pytest.mark.parametrize("keep", [0.3, 0.6, 0.9, 0.99])
def test_truncated_pdf_is_a_clear_error(keep: float) -> None:
    data = make_pdf(["page one text", "page two text", "page three text"])
    with pytest.raises(DocumentParseError, match=r"truncated.pdf: not a readable PDF"):
        PdfDocumentParser().parse(data[: int(len(data) * keep)], source="truncated.pdf")


def test_corrupt_objects_are_a_clear_error() -> None:
    data = b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 5 0 R >>\nendobj\n%%EOF\n"
    with pytest.raises(DocumentParseError, match="broken.pdf"):
        PdfDocumentParser().parse(data, source="broken.pdf")
    with pytest.raises(DocumentParseError, match="noise.pdf"):
        PdfDocumentParser().parse(b"%PDF-1.4\n" + bytes(range(256)) * 20, source="noise.pdf")
    huge_offset = b"%PDF-1.4\nstartxref\n99999999999999999999\n%%EOF"  # was a raw OverflowError
    with pytest.raises(DocumentParseError, match="offset.pdf"):
        PdfDocumentParser().parse(huge_offset, source="offset.pdf")


@pytest.mark.parametrize("algorithm", ["RC4-128", "AES-128", "AES-256"])
def test_password_protected(algorithm: str) -> None:
    data = encrypt(make_pdf(["secret text 秘密"]), "s3cret", algorithm=algorithm)
    with pytest.raises(EncryptedPdfError, match=r"locked.pdf.*password-protected.*password="):
        PdfDocumentParser().parse(data, source="locked.pdf")
    with pytest.raises(EncryptedPdfError, match=r"locked.pdf: wrong password"):
        PdfDocumentParser(password="nope").parse(data, source="locked.pdf")
    assert PdfDocumentParser(password="s3cret").parse(data).text == "secret text 秘密"


def test_owner_password_only_opens_without_a_password() -> None:
    data = encrypt(make_pdf(["readable by all"]), "", owner="owner-pw")
    assert PdfDocumentParser().parse(data).text == "readable by all"
    assert PdfDocumentParser(password="owner-pw").parse(data).text == "readable by all"


def test_scanned_pdf_is_a_specific_error() -> None:
    data = make_pdf(["", ""], image_pages=[0, 1])
    with pytest.raises(ScannedPdfError, match=r"scan.pdf: no extractable text.*2 page.*OCR"):
        PdfDocumentParser().parse(data, source="scan.pdf")
    assert issubclass(ScannedPdfError, EmptyDocumentError)


def test_blank_pdf_is_empty() -> None:
    with pytest.raises(EmptyDocumentError, match="blank.pdf: PDF with 2 page") as err:
        PdfDocumentParser().parse(make_pdf(["", " "]), source="blank.pdf")
    assert not isinstance(err.value, ScannedPdfError)


def test_partly_scanned_pdf_keeps_the_text_and_warns(caplog: pytest.LogCaptureFixture) -> None:
    data = make_pdf(["text page", ""], image_pages=[1])
    with caplog.at_level(logging.WARNING):
        doc = PdfDocumentParser().parse(data, source="mixed.pdf")
    assert doc.text.startswith("text page")
    assert doc.metadata["page_count"] == 2
    assert "mixed.pdf: no text on page(s) 2" in caplog.text


def test_very_large_page() -> None:
    lines = [f"line {i} of a very large page, 世界 {i}" for i in range(6000)]
    doc = PdfDocumentParser().parse(make_pdf(["small page", "\n".join(lines)]))
    assert doc.metadata["page_count"] == 2
    assert doc.text.count("\n") >= 6000
    assert "line 5999 of a very large page, 世界 5999" in doc.text
    assert page_number(doc, doc.text.index("line 3000 ")) == 2


def test_layout_mode() -> None:
    doc = PdfDocumentParser(layout=True).parse(make_pdf(["left words\nnext line"]))
    assert "left words" in doc.text
    assert "next line" in doc.text


def test_registered_for_pdf_files_and_content() -> None:
    parser = plugins.load("ragloom.document_parsers", "pdf")
    assert isinstance(parser, PdfDocumentParser)
    dispatcher = DispatchingDocumentParser.from_plugins()
    assert isinstance(dispatcher.parser_for("report.PDF"), PdfDocumentParser)
    assert isinstance(dispatcher.parser_for("no-extension", THREE_PAGES), PdfDocumentParser)
    assert isinstance(default_document_parser(), DispatchingDocumentParser)


def test_directory_with_bad_files_ingests_the_good_ones(tmp_path: Path) -> None:
    (tmp_path / "good.pdf").write_bytes(make_pdf(["good pdf"]))
    (tmp_path / "unicode.pdf").write_bytes(make_pdf(["\n".join(UNICODE)]))
    (tmp_path / "notes.txt").write_text("plain notes")
    (tmp_path / "pdf-named.txt").write_bytes(make_pdf(["pdf content, txt name"]))
    (tmp_path / "zero.pdf").write_bytes(b"")
    (tmp_path / "truncated.pdf").write_bytes(make_pdf(["x" * 50])[:40])
    (tmp_path / "locked.pdf").write_bytes(encrypt(make_pdf(["locked"]), "pw"))
    (tmp_path / "scan.pdf").write_bytes(make_pdf([""], image_pages=[0]))
    (tmp_path / "text-named.pdf").write_text("not a pdf at all")
    loaded = FileSystemDocumentLoader.load_documents(tmp_path)
    assert {d.metadata["file_name"]: d.text for d in loaded} == {
        "good.pdf": "good pdf",
        "unicode.pdf": "\n".join(UNICODE),
        "notes.txt": "plain notes",
        "pdf-named.txt": "pdf content, txt name",
    }
    failed = {Path(f.source).name: f.error for f in loaded.failures}
    assert set(failed) == {"zero.pdf", "truncated.pdf", "locked.pdf", "scan.pdf", "text-named.pdf"}
    assert isinstance(failed["zero.pdf"], EmptyDocumentError)
    assert isinstance(failed["locked.pdf"], EncryptedPdfError)
    assert isinstance(failed["scan.pdf"], ScannedPdfError)
    assert all(isinstance(e, DocumentParseError) for e in failed.values())
    assert all(name in str(error) for name, error in failed.items())
