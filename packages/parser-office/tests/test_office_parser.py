"""OfficeDocumentParser on files written in the tests by python-docx, openpyxl, python-pptx."""

from __future__ import annotations

import io
import re
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import docx
import openpyxl
import pptx
import pytest
import xlwt
from msoffcrypto.format.ooxml import OOXMLFile
from pptx.util import Inches

from ragloom.core import (
    DocumentParseError,
    EmptyDocumentError,
    FileSystemDocumentLoader,
    InvalidArgumentError,
    UnsupportedDocumentError,
    plugins,
)
from ragloom.core.parsers.dispatch import DispatchingDocumentParser
from ragloom.parsers.office import (
    EXCEL,
    POWERPOINT,
    WORD,
    EncryptedOfficeDocumentError,
    OfficeDocumentParser,
    OfficeDocumentTooLargeError,
)
from ragloom.testkit import DocumentParserSuite, ParserSample

UNICODE = "中文 日本語 한국어 · שלום עולם · مرحبا · 🌍🎉"
CREATED = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)


def saved(document: object) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)  # type: ignore[attr-defined]
    return buffer.getvalue()


def make_docx() -> bytes:
    document = docx.Document()
    document.add_heading("Report Title", level=0)
    document.add_paragraph("Intro paragraph, " + UNICODE)
    document.add_heading("Section One", level=1)
    document.add_paragraph("first item", style="List Bullet")
    document.add_paragraph("second item", style="List Number")
    document.add_heading("Sub section", level=2)
    table = document.add_table(rows=2, cols=3)
    for r, row in enumerate([["name", "qty", "note"], ["apples", "3", "fresh"]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    merged = document.add_table(rows=1, cols=3)
    merged.cell(0, 0).merge(merged.cell(0, 1)).text = "merged"
    merged.cell(0, 2).text = "single"
    document.add_paragraph("Closing words.")
    properties = document.core_properties
    properties.title = "Quarterly 报告"
    properties.author = "Ann Author"
    properties.subject = "Numbers"
    properties.keywords = "q1, report"
    properties.comments = "A description"
    properties.category = "Finance"
    properties.created = CREATED
    properties.modified = datetime(2024, 6, 7, 8, 9, 10, tzinfo=UTC)
    properties.revision = 7
    properties.language = "en-GB"
    properties.last_modified_by = "Bob"
    return saved(document)


def make_xlsx(cached_formula: bool = True) -> bytes:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Fruit"
    sheet.append(["name", "qty", "price", "total"])
    sheet.append(["apples", 3, 0.5, "=B2*C2"])
    sheet.append(["pears", 2, 1.25, "=B3*C3"])
    sheet.append([])
    sheet.append([UNICODE, True, datetime(2024, 1, 2), None, None])
    other = workbook.create_sheet("Empty sheet")
    assert other is not None
    notes = workbook.create_sheet("Notes 注")
    notes["B2"] = "far cell"
    workbook.properties.title = "Stock"
    workbook.properties.creator = "Carol"
    workbook.properties.created = datetime(2024, 1, 1, 12, 0, 0)
    data = saved(workbook)
    if cached_formula:  # what Excel saves: the formula and its last value
        data = rewrite(data, "xl/worksheets/sheet1.xml", lambda xml: _cache(xml))
    return data


def _cache(xml: str) -> str:
    values = {"B2*C2": "1.5", "B3*C3": "2.5"}
    return re.sub(
        r"<f>(B\d\*C\d)</f><v\s*/>|<f>(B\d\*C\d)</f><v></v>|<f>(B\d\*C\d)</f>",
        lambda m: f"<f>{(f := m.group(1) or m.group(2) or m.group(3))}</f><v>{values[f]}</v>",
        xml,
    )


def rewrite(data: bytes, member: str, change: object) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            content = source.read(item)
            if item.filename == member:
                content = change(content.decode()).encode()  # type: ignore[operator]
            target.writestr(item, content)
    return out.getvalue()


def make_pptx() -> bytes:
    presentation = pptx.Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[1])
    assert slide.shapes.title is not None
    slide.shapes.title.text = "Welcome slide"
    slide.placeholders[1].text = "Bullet one\nBullet two " + UNICODE
    slide.notes_slide.notes_text_frame.text = "Speaker notes here"
    second = presentation.slides.add_slide(presentation.slide_layouts[6])  # blank
    box = second.shapes.add_textbox(Inches(1), Inches(4), Inches(4), Inches(1))
    box.text_frame.text = "lower box"
    top = second.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1))
    top.text_frame.text = "upper box"
    table = second.shapes.add_table(2, 2, Inches(1), Inches(5), Inches(4), Inches(1)).table
    for r, row in enumerate([["k", "v"], ["alpha", "1"]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    group = second.shapes.add_group_shape()
    inner = group.shapes.add_textbox(Inches(1), Inches(6), Inches(2), Inches(1))
    inner.text_frame.text = "grouped text"
    presentation.slides.add_slide(presentation.slide_layouts[6])  # an empty slide
    presentation.core_properties.title = "Deck"
    presentation.core_properties.author = "Dan"
    presentation.core_properties.revision = 3
    return saved(presentation)


def encrypted(data: bytes, password: str = "s3cret") -> bytes:
    out = io.BytesIO()
    OOXMLFile(io.BytesIO(data)).encrypt(password, out)
    return out.getvalue()


def make_xls() -> bytes:
    workbook = xlwt.Workbook()
    workbook.add_sheet("Legacy").write(0, 0, "legacy cell")
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def renamed_stream(ole: bytes, old: str, new: str) -> bytes:
    """The OLE2 file with directory entry ``old`` renamed ``new`` (a valid container)."""
    entry = old.encode("utf-16-le") + b"\x00\x00"
    at = ole.index(entry)
    name = (new.encode("utf-16-le") + b"\x00\x00").ljust(64, b"\x00")
    size = len(new.encode("utf-16-le")) + 2
    return ole[:at] + name + size.to_bytes(2, "little") + ole[at + 66 :]


DOCX, XLSX, PPTX = make_docx(), make_xlsx(), make_pptx()


class TestWordSuite(DocumentParserSuite):
    @pytest.fixture
    def parser(self) -> OfficeDocumentParser:
        return OfficeDocumentParser()

    @pytest.fixture
    def sample(self) -> ParserSample:
        return ParserSample(DOCX, ["# Report Title", UNICODE, "apples | 3 | fresh"])


class TestExcelSuite(DocumentParserSuite):
    @pytest.fixture
    def parser(self) -> OfficeDocumentParser:
        return OfficeDocumentParser()

    @pytest.fixture
    def sample(self) -> ParserSample:
        return ParserSample(XLSX, ["## Fruit", "apples | 3 | 0.5 | 1.5"])


class TestPowerPointSuite(DocumentParserSuite):
    @pytest.fixture
    def parser(self) -> OfficeDocumentParser:
        return OfficeDocumentParser()

    @pytest.fixture
    def sample(self) -> ParserSample:
        return ParserSample(PPTX, ["Welcome slide", "Speaker notes here"])


def test_word_text_and_structure() -> None:
    doc = OfficeDocumentParser().parse(DOCX, source="report.docx")
    assert doc.text == (
        "# Report Title\n\n"
        f"Intro paragraph, {UNICODE}\n\n"
        "# Section One\n\n"
        "- first item\n"
        "- second item\n\n"
        "## Sub section\n\n"
        "name | qty | note\n"
        "apples | 3 | fresh\n\n"
        "merged | single\n\n"
        "Closing words."
    )


def test_word_core_properties_are_typed_metadata() -> None:
    assert OfficeDocumentParser().parse(DOCX).metadata.to_dict() == {
        "title": "Quarterly 报告",
        "author": "Ann Author",
        "subject": "Numbers",
        "keywords": "q1, report",
        "category": "Finance",
        "description": "A description",
        "last_modified_by": "Bob",
        "language": "en-GB",
        "creation_date": "2024-05-06T07:08:09+00:00",
        "modification_date": "2024-06-07T08:09:10+00:00",
        "revision": 7,
        "content_type": WORD,
    }


def test_excel_sheets_rows_and_cached_formula_values() -> None:
    doc = OfficeDocumentParser().parse(XLSX, source="stock.xlsx")
    assert doc.text == (
        "## Fruit\n"
        "name | qty | price | total\n"
        "apples | 3 | 0.5 | 1.5\n"
        "pears | 2 | 1.25 | 2.5\n"
        f"{UNICODE} | TRUE | 2024-01-02\n\n"
        "## Notes 注\n"
        " | far cell"
    )
    metadata = doc.metadata
    assert metadata["sheet_count"] == 3
    assert metadata["title"] == "Stock"
    assert metadata["author"] == "Carol"
    assert metadata["creation_date"] == "2024-01-01T12:00:00"
    assert metadata["content_type"] == EXCEL


def test_excel_formula_without_cached_value_is_empty() -> None:
    doc = OfficeDocumentParser().parse(make_xlsx(cached_formula=False))
    assert "apples | 3 | 0.5\n" in doc.text


def test_powerpoint_slides_shapes_and_notes() -> None:
    doc = OfficeDocumentParser().parse(PPTX, source="deck.pptx")
    assert doc.text == (
        "## Slide 1\n"
        "Welcome slide\n"
        f"Bullet one\nBullet two {UNICODE}\n"
        "Notes: Speaker notes here\n\n"
        "## Slide 2\n"
        "upper box\n"
        "lower box\n"
        "k | v\nalpha | 1\n"
        "grouped text"
    )
    assert doc.metadata["slide_count"] == 3
    assert doc.metadata["title"] == "Deck"
    assert doc.metadata["revision"] == 3
    assert doc.metadata["content_type"] == POWERPOINT


def test_format_is_told_by_content_not_name() -> None:
    assert OfficeDocumentParser().parse(XLSX, source="misnamed.docx").text.startswith("## Fruit")


@pytest.mark.parametrize(("data", "what"), [(DOCX, "docx"), (XLSX, "xlsx"), (PPTX, "pptx")])
def test_password_protected(data: bytes, what: str) -> None:
    with pytest.raises(EncryptedOfficeDocumentError, match=f"locked.{what}: .*password"):
        OfficeDocumentParser().parse(encrypted(data), source=f"locked.{what}")


def test_legacy_formats_point_at_the_auto_parser() -> None:
    xls = make_xls()
    cases = {
        "old.xls": (xls, r"Excel 97-2003 \(\.xls\)"),
        "old.doc": (renamed_stream(xls, "Workbook", "WordDocument"), r"Word 97-2003 \(\.doc\)"),
        "old.ppt": (
            renamed_stream(xls, "Workbook", "PowerPoint Document"),
            r"PowerPoint 97-2003 \(\.ppt\)",
        ),
    }
    for name, (data, label) in cases.items():
        with pytest.raises(UnsupportedDocumentError, match=f"{name}: {label}.*ragloom-parser-auto"):
            OfficeDocumentParser().parse(data, source=name)


@pytest.mark.parametrize("data", [b"", b"  \n"])
def test_empty_and_zero_byte(data: bytes) -> None:
    with pytest.raises(EmptyDocumentError, match="empty.docx"):
        OfficeDocumentParser().parse(data, source="empty.docx")


def test_documents_without_text_are_empty() -> None:
    blank_docx = saved(docx.Document())
    blank_xlsx = saved(openpyxl.Workbook())
    blank_pptx = saved(pptx.Presentation())
    for name, data in [("a.docx", blank_docx), ("b.xlsx", blank_xlsx), ("c.pptx", blank_pptx)]:
        with pytest.raises(EmptyDocumentError, match=f"{name}: Office document has no text"):
            OfficeDocumentParser().parse(data, source=name)


@pytest.mark.parametrize("data", [DOCX, XLSX, PPTX])
@pytest.mark.parametrize("keep", [0.1, 0.5, 0.95])
def test_truncated_files(data: bytes, keep: float) -> None:
    with pytest.raises(DocumentParseError, match="cut.bin: corrupt"):
        OfficeDocumentParser().parse(data[: int(len(data) * keep)], source="cut.bin")


def test_an_unknown_zip_version_is_a_clear_error() -> None:
    at = DOCX.index(b"PK\x01\x02") + 6  # "version needed to extract" of the first entry
    future = DOCX[:at] + bytes([117, 0]) + DOCX[at + 2 :]  # was a raw NotImplementedError
    with pytest.raises(DocumentParseError, match="future.docx: corrupt or truncated"):
        OfficeDocumentParser().parse(future, source="future.docx")


def test_corrupt_xml_inside_a_valid_zip() -> None:
    broken = rewrite(DOCX, "word/document.xml", lambda xml: xml[: len(xml) // 2])
    with pytest.raises(DocumentParseError, match=r"broken.docx: corrupt Office file"):
        OfficeDocumentParser().parse(broken, source="broken.docx")


def test_wrong_content() -> None:
    with pytest.raises(DocumentParseError, match="text.docx: not an Office Open XML file"):
        OfficeDocumentParser().parse(b"plain text", source="text.docx")
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.text")
    with pytest.raises(UnsupportedDocumentError, match="doc.odt: a zip archive.*parser-auto"):
        OfficeDocumentParser().parse(zipped.getvalue(), source="doc.odt")


def test_large_sheet_and_document() -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    for i in range(20000):
        sheet.append([f"row {i}", i, i * 0.5])
    text = OfficeDocumentParser().parse(saved(workbook)).text
    assert text.count("\n") == 20000
    assert text.endswith("row 19999 | 19999 | 9999.5")
    document = docx.Document()
    document.add_paragraph(" ".join(f"word{i}" for i in range(100000)))
    assert OfficeDocumentParser().parse(saved(document)).text.endswith("word99999")


def test_huge_declared_sheet_dimension_is_ignored() -> None:
    def huge(xml: str) -> str:
        return re.sub(r'ref="[^"]+"', 'ref="A1:XFD1048576"', xml)

    data = rewrite(XLSX, "xl/worksheets/sheet1.xml", huge)
    assert OfficeDocumentParser().parse(data).text.startswith("## Fruit\nname | qty")


def test_registered_for_office_files_and_content() -> None:
    assert isinstance(plugins.load("ragloom.document_parsers", "office"), OfficeDocumentParser)
    dispatcher = DispatchingDocumentParser.from_plugins()
    for name in ["a.docx", "b.XLSX", "c.xlsm", "d.pptx"]:
        assert isinstance(dispatcher.parser_for(name), OfficeDocumentParser)
    assert isinstance(dispatcher.parser_for("no-extension", PPTX), OfficeDocumentParser)
    try:  # legacy files go to the auto parser when installed, else nowhere
        legacy = dispatcher.parser_for("legacy.doc", make_xls())
    except UnsupportedDocumentError:
        legacy = None
    assert not isinstance(legacy, OfficeDocumentParser)


def test_directory_with_bad_files_ingests_the_good_ones(tmp_path: Path) -> None:
    (tmp_path / "report.docx").write_bytes(DOCX)
    (tmp_path / "stock.xlsx").write_bytes(XLSX)
    (tmp_path / "deck.pptx").write_bytes(PPTX)
    (tmp_path / "deck-named.docx").write_bytes(PPTX)
    (tmp_path / "notes.txt").write_text("plain notes")
    (tmp_path / "locked.docx").write_bytes(encrypted(DOCX))
    (tmp_path / "zero.xlsx").write_bytes(b"")
    (tmp_path / "truncated.pptx").write_bytes(PPTX[: len(PPTX) // 2])
    (tmp_path / "blank.docx").write_bytes(saved(docx.Document()))
    loaded = FileSystemDocumentLoader.load_documents(tmp_path)
    assert sorted(d.metadata["file_name"] for d in loaded) == [
        "deck-named.docx",
        "deck.pptx",
        "notes.txt",
        "report.docx",
        "stock.xlsx",
    ]
    failed = {Path(f.source).name: f.error for f in loaded.failures}
    assert set(failed) == {"locked.docx", "zero.xlsx", "truncated.pptx", "blank.docx"}
    assert isinstance(failed["locked.docx"], EncryptedOfficeDocumentError)
    assert isinstance(failed["zero.xlsx"], EmptyDocumentError)
    assert isinstance(failed["blank.docx"], EmptyDocumentError)
    assert all(name in str(error) for name, error in failed.items())


def bomb(paragraphs: int) -> bytes:
    """A DOCX whose document.xml repeats one paragraph: tiny zipped, huge unzipped."""
    paragraph = "<w:p><w:r><w:t>" + "boom " * 20 + "</w:t></w:r></w:p>"
    return rewrite(
        make_docx(),
        "word/document.xml",
        lambda xml: xml.replace("<w:body>", "<w:body>" + paragraph * paragraphs, 1),
    )


def test_zip_bomb_is_refused_from_its_directory() -> None:
    data = bomb(20_000)  # about 2.7 MB of XML in a few KB
    assert len(data) < 100_000
    parser = OfficeDocumentParser(max_bytes=1_000_000)
    with pytest.raises(OfficeDocumentTooLargeError, match=r"bomb.docx: unzips to [\d,]+ bytes"):
        parser.parse(data, source="bomb.docx")
    with pytest.raises(OfficeDocumentTooLargeError, match="larger than max_bytes=1,000"):
        OfficeDocumentParser(max_bytes=1_000).parse(data, source="bomb.docx")


def test_text_longer_than_max_chars_is_refused() -> None:
    with pytest.raises(OfficeDocumentTooLargeError, match="max_chars=1,000"):
        OfficeDocumentParser(max_chars=1_000).parse(bomb(100), source="long.docx")
    assert len(OfficeDocumentParser().parse(bomb(100)).text) > 1_000
    with pytest.raises(InvalidArgumentError, match="max_chars"):
        OfficeDocumentParser(max_chars=0)
