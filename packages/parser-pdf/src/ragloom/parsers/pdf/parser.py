"""PdfDocumentParser: the text of a PDF, page by page, with pypdf."""

from __future__ import annotations

import io
import logging
from bisect import bisect_right
from collections.abc import Callable
from datetime import datetime
from typing import Any, BinaryIO, ClassVar

from ragloom.core.document import START, Document, TextSegment
from ragloom.core.errors import (
    DocumentParseError,
    EmptyDocumentError,
    EncryptedDocumentError,
    InvalidMetadataError,
)
from ragloom.core.metadata import Metadata
from ragloom.core.parsers.base import read_all, source_name

__all__ = [
    "PAGE_COUNT",
    "PAGE_OFFSETS",
    "PAGE_NUMBER",
    "EncryptedPdfError",
    "ScannedPdfError",
    "PdfDocumentParser",
    "page_number",
]

logger = logging.getLogger(__name__)

PAGE_COUNT = "page_count"
PAGE_OFFSETS = "page_offsets"
PAGE_NUMBER = "page_number"

# Document-information entries and the metadata keys they become.
_INFO_KEYS: tuple[tuple[str, str], ...] = (
    ("/Title", "title"),
    ("/Author", "author"),
    ("/Subject", "subject"),
    ("/Keywords", "keywords"),
    ("/Creator", "creator"),
    ("/Producer", "producer"),
)
_DATE_KEYS: tuple[tuple[str, str], ...] = (
    ("creation_date", "creation_date"),
    ("modification_date", "modification_date"),
)


class EncryptedPdfError(EncryptedDocumentError):
    """The PDF is password-protected and no (or a wrong) password was given."""


class ScannedPdfError(EmptyDocumentError):
    """The PDF has pages with images but no extractable text: it needs OCR."""


class PdfDocumentParser:
    """Extracts the text of a PDF with pypdf, keeping track of pages.

    ``parse`` returns one Document: the pages' text joined by ``page_separator``, with
    metadata ``page_count`` and ``page_offsets`` (the character offset where each page
    starts, comma-separated) so that :func:`page_number` maps a segment back to its page,
    plus the PDF's information dictionary with typed values (``title``, ``author``,
    ``subject``, ``keywords``, ``creator``, ``producer`` as str; ``creation_date`` and
    ``modification_date`` as ISO 8601 str) and ``pdf_version``. ``parse_pages`` returns one
    Document per page with ``page_number`` instead.

    An encrypted PDF is opened with ``password`` (the empty password is always tried);
    without the right one it raises :class:`EncryptedPdfError`. A PDF whose pages hold
    images but no text raises :class:`ScannedPdfError` (it needs OCR); a PDF with no text
    at all :class:`EmptyDocumentError`. ``layout=True`` uses pypdf's layout mode, which
    keeps columns and table cells apart at some cost in speed.
    """

    extensions: ClassVar[tuple[str, ...]] = (".pdf",)
    media_types: ClassVar[tuple[str, ...]] = ("application/pdf",)

    def __init__(
        self,
        *,
        password: str | None = None,
        page_separator: str = "\n\n",
        layout: bool = False,
    ) -> None:
        self.password = password
        self.page_separator = page_separator
        self.layout = layout

    def parse(self, data: bytes | BinaryIO, *, source: str | None = None) -> Document:
        """The whole PDF as one Document with page offsets in its metadata."""
        name = source_name(data, source)
        texts, metadata = self._extract(read_all(data), name)
        offsets, position = [], 0
        for text in texts:
            offsets.append(position)
            position += len(text) + len(self.page_separator)
        metadata[PAGE_OFFSETS] = ",".join(map(str, offsets))
        return Document(self.page_separator.join(texts), metadata)

    def parse_pages(self, data: bytes | BinaryIO, *, source: str | None = None) -> list[Document]:
        """One Document per page (blank pages skipped), each with ``page_number`` (from 1)."""
        name = source_name(data, source)
        texts, metadata = self._extract(read_all(data), name)
        pages = []
        for number, text in enumerate(texts, start=1):
            if text.strip():
                page_metadata = metadata.copy()
                page_metadata[PAGE_NUMBER] = number
                pages.append(Document(text, page_metadata))
        return pages

    def _extract(self, raw: bytes, name: str) -> tuple[list[str], Metadata]:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError

        if not raw.strip():
            raise EmptyDocumentError(f"{name}: empty file, not a PDF")
        if b"%PDF-" not in raw[:1024]:
            raise DocumentParseError(f"{name}: not a PDF (no %PDF- header in its first bytes)")
        try:
            reader = PdfReader(io.BytesIO(raw), strict=False)
            if reader.is_encrypted:
                self._decrypt(reader, name)
            pages = reader.pages
            extract: Callable[[Any], str] = (
                (lambda page: page.extract_text(extraction_mode="layout"))
                if self.layout
                else (lambda page: page.extract_text())
            )
            texts = [_clean(extract(page)) for page in pages]
            metadata = _metadata(reader, name)
        except DocumentParseError:
            raise
        except PyPdfError as exc:
            raise DocumentParseError(f"{name}: not a readable PDF: {exc}") from exc
        except (
            ValueError,
            TypeError,
            KeyError,
            IndexError,
            AttributeError,
            OSError,
            ArithmeticError,  # e.g. an offset beyond any integer type (OverflowError)
        ) as exc:
            raise DocumentParseError(
                f"{name}: corrupt or unsupported PDF ({type(exc).__name__}: {exc})"
            ) from exc
        except RecursionError as exc:
            raise DocumentParseError(f"{name}: corrupt PDF (nested too deeply)") from exc
        metadata[PAGE_COUNT] = len(texts)
        if not any(text.strip() for text in texts):
            if any(_has_images(page) for page in pages):
                raise ScannedPdfError(
                    f"{name}: no extractable text on its {len(texts)} page(s), only images: "
                    "it looks scanned. OCR it first (e.g. with ocrmypdf), or parse it with "
                    "an OCR-capable parser"
                )
            raise EmptyDocumentError(f"{name}: PDF with {len(texts)} page(s) but no text")
        blank = [str(i) for i, text in enumerate(texts, start=1) if not text.strip()]
        if blank:
            logger.warning("%s: no text on page(s) %s (scanned or blank)", name, ", ".join(blank))
        return texts, metadata

    def _decrypt(self, reader: Any, name: str) -> None:
        from pypdf import PasswordType
        from pypdf.errors import DependencyError

        try:
            for password in dict.fromkeys(p for p in (self.password, "") if p is not None):
                if reader.decrypt(password) != PasswordType.NOT_DECRYPTED:
                    return
        except DependencyError as exc:
            raise EncryptedPdfError(f"{name}: cannot decrypt: {exc}") from exc
        except NotImplementedError as exc:
            raise EncryptedPdfError(f"{name}: unsupported encryption: {exc}") from exc
        if self.password is None:
            raise EncryptedPdfError(
                f"{name}: the PDF is password-protected; pass PdfDocumentParser(password=...)"
            )
        raise EncryptedPdfError(f"{name}: wrong password for this password-protected PDF")


def page_number(item: TextSegment | Document | Metadata, offset: int | None = None) -> int:
    """The page (from 1) holding character ``offset`` of a PDF document.

    ``item`` is a segment split from a document this parser made (its ``start`` metadata
    is used when ``offset`` is omitted), the document itself, or their metadata.
    """
    metadata = item if isinstance(item, Metadata) else item.metadata
    offsets = metadata.get(PAGE_OFFSETS)
    if not isinstance(offsets, str) or not offsets:
        raise InvalidMetadataError(
            f"metadata key {PAGE_OFFSETS!r} is missing: not a document parsed from a PDF"
        )
    if offset is None:
        start = metadata.get(START, 0)
        if not isinstance(start, int):
            raise InvalidMetadataError(f"metadata key {START!r} holds {start!r}, not an int")
        offset = start
    return bisect_right([int(o) for o in offsets.split(",")], offset)


def _clean(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.replace("\x00", "").splitlines()).strip("\n")


def _metadata(reader: Any, name: str) -> Metadata:
    metadata = Metadata()
    header = getattr(reader, "pdf_header", "")
    if isinstance(header, str) and header.startswith("%PDF-"):
        metadata["pdf_version"] = header.removeprefix("%PDF-")
    try:
        info = reader.metadata
    except Exception as exc:  # a broken info dictionary must not lose the text
        logger.warning("%s: unreadable document information: %s", name, exc)
        return metadata
    if info is None:
        return metadata
    for pdf_key, key in _INFO_KEYS:
        value = info.get(pdf_key)
        text = _as_text(value)
        if text:
            metadata[key] = text
    for attribute, key in _DATE_KEYS:
        try:
            moment = getattr(info, attribute)
        except Exception:  # malformed date string: keep it as written
            moment = _as_text(info.get("/CreationDate" if key == "creation_date" else "/ModDate"))
        if isinstance(moment, datetime):
            metadata[key] = moment.isoformat()
        elif isinstance(moment, str) and moment:
            metadata[key] = moment
    return metadata


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if hasattr(value, "get_object"):
        value = value.get_object()
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    return str(value).replace("\x00", "").strip()


def _has_images(page: Any) -> bool:
    try:
        resources = page.get("/Resources")
        xobjects = resources.get_object().get("/XObject") if resources else None
        if not xobjects:
            return False
        return any(
            xobject.get_object().get("/Subtype") == "/Image"
            for xobject in xobjects.get_object().values()
        )
    except Exception:
        return False
