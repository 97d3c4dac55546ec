"""A tiny PDF writer for tests and benchmarks (no dependency): real PDFs with any Unicode.

Text is drawn with a Type0 font in Identity-H encoding and a ``ToUnicode`` map, which is
what text extraction reads; no glyphs are embedded (a viewer shows boxes, extraction
gives the exact text: CJK, right-to-left scripts and emoji included).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from datetime import UTC, datetime

__all__ = ["make_pdf"]


def make_pdf(
    pages: Sequence[str],
    *,
    info: dict[str, str | datetime] | None = None,
    image_pages: Sequence[int] = (),
    version: str = "1.7",
) -> bytes:
    """A PDF with one page per item of ``pages`` (lines split on ``\\n``).

    ``info`` fills the document information dictionary (``Title``, ``Author``,
    ``CreationDate`` as a datetime, ...). Pages whose index is in ``image_pages`` also
    draw a small grey image, the way a scanned page does (give them ``""`` as text to
    have an image-only page). Lines written only in right-to-left scripts are stored in
    visual order, as PDF producers do; extraction gives them back in logical order.
    """
    chars = sorted({c for page in pages for c in page if c != "\n"})
    cid = {c: i + 1 for i, c in enumerate(chars)}
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in below
    pages_id = add(b"")
    cmap = _to_unicode(cid)
    cmap_id = add(b"<< /Length %d >>\nstream\n" % len(cmap) + cmap + b"\nendstream")
    descendant = add(
        b"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /RagloomTestFont "
        b"/CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> "
        b"/FontDescriptor << /Type /FontDescriptor /FontName /RagloomTestFont /Flags 4 "
        b"/FontBBox [0 -200 1000 900] /ItalicAngle 0 /Ascent 900 /Descent -200 "
        b"/CapHeight 700 /StemV 80 >> /DW 600 /CIDToGIDMap /Identity >>"
    )
    font = add(
        b"<< /Type /Font /Subtype /Type0 /BaseFont /RagloomTestFont /Encoding /Identity-H "
        b"/DescendantFonts [%d 0 R] /ToUnicode %d 0 R >>" % (descendant, cmap_id)
    )
    image = add(
        b"<< /Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace /DeviceGray "
        b"/BitsPerComponent 8 /Length 4 >>\nstream\n\x80\x40\x40\x80\nendstream"
    )
    xobjects = b"/XObject << /Im1 %d 0 R >> " % image
    kids = []
    for index, text in enumerate(pages):
        ops = [b"BT /F1 11 Tf 14 TL 50 760 Td"]
        for line in text.split("\n"):
            codes = "".join(f"{cid[c]:04X}" for c in _visual(line))
            ops.append(b"<" + codes.encode() + b"> Tj T*")
        ops.append(b"ET")
        if index in image_pages:
            ops.append(b"q 500 0 0 700 56 46 cm /Im1 Do Q")
        content = b"\n".join(ops)
        stream = add(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
        kids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                b"/Resources << /Font << /F1 %d 0 R >> %s>> >>"
                % (pages_id, stream, font, xobjects if index in image_pages else b"")
            )
        )
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id
    objects[pages_id - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids),
        len(kids),
    )
    info_id = add(_info(info)) if info else None

    out = bytearray(b"%PDF-" + version.encode() + b"\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    trailer = b"<< /Size %d /Root %d 0 R" % (len(objects) + 1, catalog)
    if info_id is not None:
        trailer += b" /Info %d 0 R" % info_id
    out += b"trailer\n" + trailer + b" >>\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def _visual(line: str) -> str:
    directions = {unicodedata.bidirectional(c) for c in line}
    return line[::-1] if directions & {"R", "AL"} and "L" not in directions else line


def _to_unicode(cid: dict[str, int]) -> bytes:
    lines = [
        b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap",
        b"/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def",
        b"/CMapName /Ragloom-UCS def /CMapType 2 def",
        b"1 begincodespacerange <0000> <FFFF> endcodespacerange",
    ]
    items = sorted(cid.items(), key=lambda item: item[1])
    for start in range(0, len(items), 100):
        chunk = items[start : start + 100]
        lines.append(b"%d beginbfchar" % len(chunk))
        for char, code in chunk:
            lines.append(b"<%04X> <%s>" % (code, char.encode("utf-16-be").hex().upper().encode()))
        lines.append(b"endbfchar")
    lines.append(b"endcmap CMapName currentdict /CMap defineresource pop end end")
    return b"\n".join(lines)


def _info(info: dict[str, str | datetime]) -> bytes:
    entries = []
    for key, value in info.items():
        if isinstance(value, datetime):
            moment = value.astimezone(UTC) if value.tzinfo else value
            text = "D:" + moment.strftime("%Y%m%d%H%M%S") + ("Z" if value.tzinfo else "")
            entries.append(b"/%s (%s)" % (key.encode(), text.encode()))
        else:
            hexed = ("\ufeff" + value).encode("utf-16-be").hex().upper().encode()
            entries.append(b"/%s <%s>" % (key.encode(), hexed))
    return b"<< " + b" ".join(entries) + b" >>"
