"""OfficeDocumentParser: Word (.docx), Excel (.xlsx) and PowerPoint (.pptx) files as text."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable, Iterator
from datetime import date, datetime, time
from typing import Any, BinaryIO, ClassVar

from ragloom.core.document import Document
from ragloom.core.errors import (
    DocumentParseError,
    EmptyDocumentError,
    EncryptedDocumentError,
    InvalidArgumentError,
    UnsupportedDocumentError,
)
from ragloom.core.metadata import Metadata
from ragloom.core.parsers.base import read_all, source_name

__all__ = [
    "WORD",
    "EXCEL",
    "POWERPOINT",
    "EncryptedOfficeDocumentError",
    "OfficeDocumentTooLargeError",
    "MiB",
    "OfficeDocumentParser",
]

WORD = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
EXCEL = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
POWERPOINT = "application/vnd.openxmlformats-officedocument.presentationml.presentation"

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
# Stream names (UTF-16-LE in an OLE2 directory) that tell what an OLE2 file is.
_LEGACY: tuple[tuple[str, str], ...] = (
    ("WordDocument", "Word 97-2003 (.doc)"),
    ("Workbook", "Excel 97-2003 (.xls)"),
    ("Book", "Excel 5.0/95 (.xls)"),
    ("PowerPoint Document", "PowerPoint 97-2003 (.ppt)"),
)
_ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")

# core-properties attribute -> metadata key; same keys in the three formats.
_PROPERTIES: tuple[tuple[str, str], ...] = (
    ("title", "title"),
    ("author", "author"),
    ("subject", "subject"),
    ("keywords", "keywords"),
    ("category", "category"),
    ("comments", "description"),
    ("last_modified_by", "last_modified_by"),
    ("language", "language"),
    ("content_status", "content_status"),
    ("version", "version"),
    ("identifier", "identifier"),
    ("created", "creation_date"),
    ("modified", "modification_date"),
    ("revision", "revision"),
)
# openpyxl names some core properties differently.
_EXCEL_NAMES = {
    "author": "creator",
    "comments": "description",
    "last_modified_by": "lastModifiedBy",
    "content_status": "contentStatus",
}


class EncryptedOfficeDocumentError(EncryptedDocumentError):
    """The Office file is password-protected (an encrypted OOXML package)."""


class OfficeDocumentTooLargeError(DocumentParseError):
    """The file, its unzipped content or its text exceeds ``max_bytes`` / ``max_chars``."""


MiB = 1024 * 1024


class OfficeDocumentParser:
    """Parses Office Open XML files: Word, Excel and PowerPoint, told apart by content.

    - Word (python-docx): paragraphs and tables in document order; headings as Markdown
      headings (``#`` for Title and Heading 1, ``##`` for Heading 2, ...), list paragraphs
      as ``- `` items, table rows as cells joined by `` | ``.
    - Excel (openpyxl): each sheet as ``## <sheet name>`` followed by its non-empty rows,
      cells joined by `` | ``; formulas give their cached values (the value Excel or
      LibreOffice saved; a formula never calculated, e.g. written by openpyxl, is empty).
    - PowerPoint (python-pptx): each slide as ``## Slide N`` followed by the text of its
      shapes (text frames, tables, groups) from top to bottom, then ``Notes: ...``.

    Metadata: ``content_type`` and the core properties (``title``, ``author``, ``subject``,
    ``keywords``, ``category``, ``description``, ``last_modified_by``, ``language``, ... as
    str, ``creation_date`` / ``modification_date`` as ISO 8601 str, ``revision`` as int),
    plus ``sheet_count`` or ``slide_count``. Legacy binary files (.doc, .xls, .ppt) raise
    :class:`UnsupportedDocumentError` pointing at ``ragloom-parser-auto``; password-protected
    files :class:`EncryptedOfficeDocumentError`; files without text :class:`EmptyDocumentError`.

    Limits (as in ``ragloom-parser-auto``), each raising :class:`OfficeDocumentTooLargeError`
    before the work is done: ``max_bytes`` (100 MiB) bounds the file *and* the declared
    unzipped size of its parts (a zip bomb is refused from its directory, unread);
    ``max_chars`` (10 million) bounds the text.
    """

    extensions: ClassVar[tuple[str, ...]] = (".docx", ".xlsx", ".xlsm", ".pptx")
    media_types: ClassVar[tuple[str, ...]] = (WORD, EXCEL, POWERPOINT)

    def __init__(self, *, max_bytes: int = 100 * MiB, max_chars: int = 10_000_000) -> None:
        for what, value in (("max_bytes", max_bytes), ("max_chars", max_chars)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise InvalidArgumentError(f"{what} must be a positive integer, got {value!r}")
        self.max_bytes = max_bytes
        self.max_chars = max_chars

    def parse(self, data: bytes | BinaryIO, *, source: str | None = None) -> Document:
        """Parse an Office Open XML file; errors name ``source``."""
        name = source_name(data, source)
        raw = read_all(data)
        if len(raw) > self.max_bytes:
            raise OfficeDocumentTooLargeError(
                f"{name}: larger than max_bytes={self.max_bytes:,}; raise the limit with "
                "OfficeDocumentParser(max_bytes=...) to parse it"
            )
        kind = _kind(raw, name, self.max_bytes)
        try:
            if kind == WORD:
                text, metadata = _word(raw)
            elif kind == EXCEL:
                text, metadata = _excel(raw)
            else:
                text, metadata = _powerpoint(raw)
        except (DocumentParseError, MemoryError):
            raise
        except zipfile.BadZipFile as exc:
            raise DocumentParseError(f"{name}: corrupt or truncated Office file: {exc}") from exc
        except Exception as exc:  # python-docx/openpyxl/pptx raise many kinds on bad XML
            raise DocumentParseError(
                f"{name}: corrupt Office file ({type(exc).__name__}: {exc})"
            ) from exc
        if len(text) > self.max_chars:
            raise OfficeDocumentTooLargeError(
                f"{name}: its text is longer than max_chars={self.max_chars:,}; raise the limit "
                "with OfficeDocumentParser(max_chars=...)"
            )
        if not text.strip():
            raise EmptyDocumentError(f"{name}: Office document has no text")
        metadata["content_type"] = kind
        return Document(text, metadata)


def _kind(raw: bytes, name: str, max_bytes: int) -> str:
    if not raw.strip():
        raise EmptyDocumentError(f"{name}: empty file, not an Office document")
    if raw.startswith(_OLE_MAGIC):
        if _ENCRYPTED_PACKAGE in raw:
            raise EncryptedOfficeDocumentError(
                f"{name}: the Office file is password-protected; save it without a password "
                "(or decrypt it, e.g. with msoffcrypto-tool) and parse it again"
            )
        legacy = next((label for stream, label in _LEGACY if _has_stream(raw, stream)), None)
        raise UnsupportedDocumentError(
            f"{name}: {legacy or 'a legacy binary Office (OLE2)'} file; ragloom-parser-office "
            "reads .docx, .xlsx and .pptx only. Install ragloom-parser-auto and parse it "
            "with ragloom.parsers.auto.AutoDocumentParser (loaders pick it automatically)"
        )
    if not raw.startswith(b"PK\x03\x04"):
        raise DocumentParseError(f"{name}: not an Office Open XML file (.docx, .xlsx, .pptx)")
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            infos = archive.infolist()
    # zipfile also raises NotImplementedError (an unknown zip version or compression),
    # ValueError and EOFError on damaged archives.
    except (zipfile.BadZipFile, NotImplementedError, ValueError, EOFError) as exc:
        raise DocumentParseError(f"{name}: corrupt or truncated Office file: {exc}") from exc
    # zipfile never inflates a part beyond its declared size, so the sum bounds the work.
    unzipped = sum(info.file_size for info in infos)
    if unzipped > max_bytes:
        raise OfficeDocumentTooLargeError(
            f"{name}: unzips to {unzipped:,} bytes, more than max_bytes={max_bytes:,} (a zip "
            "bomb?); raise the limit with OfficeDocumentParser(max_bytes=...) to parse it"
        )
    names = {info.filename for info in infos}
    if "word/document.xml" in names:
        return WORD
    if "xl/workbook.xml" in names:
        return EXCEL
    if "ppt/presentation.xml" in names:
        return POWERPOINT
    raise UnsupportedDocumentError(
        f"{name}: a zip archive but not a Word, Excel or PowerPoint file; for OpenDocument "
        "and other formats install ragloom-parser-auto"
    )


def _has_stream(raw: bytes, stream: str) -> bool:
    # A directory entry: the UTF-16-LE name, NUL-terminated.
    return (stream.encode("utf-16-le") + b"\x00\x00") in raw


# -- Word -------------------------------------------------------------------------------


def _word(raw: bytes) -> tuple[str, Metadata]:
    import docx
    from docx.table import Table

    document = docx.Document(io.BytesIO(raw))
    # paragraph.style looks the style up by XPath each time: slow; map ids to names once
    names = {style.style_id: style.name or "" for style in document.styles}
    blocks: list[str] = []
    listing = False  # the previous block was a list item: no blank line between items
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            text, is_item = _table(block), False
        else:
            text, is_item = _paragraph(block, names)
        if not text.strip():
            continue
        if blocks:
            blocks.append("\n" if listing and is_item else "\n\n")
        blocks.append(text)
        listing = is_item
    return "".join(blocks), _core_properties(document.core_properties, {})


def _paragraph(paragraph: Any, names: dict[str, str]) -> tuple[str, bool]:
    text = paragraph.text.strip()
    style = names.get(paragraph._p.style or "", "")
    if style == "Title":
        return "# " + text, False
    if style.startswith("Heading "):
        level = style.removeprefix("Heading ").strip()
        if level.isdigit():
            return "#" * min(int(level), 6) + " " + text, False
    properties = paragraph._p.pPr
    numbered = properties is not None and properties.numPr is not None
    if numbered or style.startswith(("List Bullet", "List Number", "List Paragraph")):
        return "- " + text, True
    return text, False


def _table(table: Any) -> str:
    rows = []
    for row in table.rows:
        cells, previous = [], None
        for cell in row.cells:
            if cell._tc is previous:  # a merged cell repeats
                continue
            previous = cell._tc
            cells.append(" ".join(cell.text.split()))
        if any(cells):
            rows.append(" | ".join(cells).strip())
    return "\n".join(rows)


# -- Excel ------------------------------------------------------------------------------


def _excel(raw: bytes) -> tuple[str, Metadata]:
    import openpyxl  # type: ignore[import-untyped]

    workbook = openpyxl.load_workbook(io.BytesIO(raw), read_only=True, data_only=True)
    try:
        sheets = []
        for sheet in workbook.worksheets:
            sheet.reset_dimensions()  # trust the rows, not a declared (maybe huge) range
            rows = [" | ".join(cells) for cells in _rows(sheet.iter_rows(values_only=True))]
            if rows:
                sheets.append(f"## {sheet.title}\n" + "\n".join(rows))
        metadata = _core_properties(workbook.properties, _EXCEL_NAMES)
        metadata["sheet_count"] = len(workbook.worksheets)
    finally:
        workbook.close()
    return "\n\n".join(sheets), metadata


def _rows(rows: Iterable[tuple[Any, ...]]) -> Iterator[list[str]]:
    for row in rows:
        cells = [_cell(value) for value in row]
        while cells and not cells[-1]:
            cells.pop()
        if cells:
            yield cells


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, datetime):
        return value.isoformat(sep=" ") if value.time() != time() else value.date().isoformat()
    if isinstance(value, date | time):
        return value.isoformat()
    return " ".join(str(value).split())


# -- PowerPoint -------------------------------------------------------------------------


def _powerpoint(raw: bytes) -> tuple[str, Metadata]:
    import pptx

    presentation = pptx.Presentation(io.BytesIO(raw))
    slides = []
    for number, slide in enumerate(presentation.slides, start=1):
        parts = [text for shape in _reading_order(slide.shapes) if (text := _shape(shape))]
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                parts.append("Notes: " + notes.text.strip())
        if parts:
            slides.append(f"## Slide {number}\n" + "\n".join(parts))
    metadata = _core_properties(presentation.core_properties, {})
    metadata["slide_count"] = len(presentation.slides)
    return "\n\n".join(slides), metadata


def _reading_order(shapes: Iterable[Any]) -> list[Any]:
    return sorted(shapes, key=lambda shape: (shape.top or 0, shape.left or 0))


def _shape(shape: Any) -> str:
    if getattr(shape, "shapes", None) is not None:  # a group
        return "\n".join(text for child in _reading_order(shape.shapes) if (text := _shape(child)))
    if getattr(shape, "has_table", False):
        return _table(shape.table)
    if getattr(shape, "has_text_frame", False):
        lines = (" ".join(p.text.split()) for p in shape.text_frame.paragraphs)
        return "\n".join(line for line in lines if line)
    return ""


# -- core properties --------------------------------------------------------------------


def _core_properties(properties: Any, names: dict[str, str]) -> Metadata:
    metadata = Metadata()
    for attribute, key in _PROPERTIES:
        value = getattr(properties, names.get(attribute, attribute), None)
        if isinstance(value, datetime):
            metadata[key] = value.isoformat()
        elif isinstance(value, bool):
            continue
        elif isinstance(value, int):
            if value:
                metadata[key] = value
        elif key == "revision" and isinstance(value, str) and value.strip().isdigit():
            metadata[key] = int(value)
        elif isinstance(value, str) and value.strip():
            metadata[key] = value.strip()
    return metadata
