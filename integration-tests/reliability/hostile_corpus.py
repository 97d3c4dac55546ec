"""A generator of hostile files for every parser, built at test time (no committed binaries).

:func:`cases` returns ``(parser, file name, bytes)`` triples: for each format a few good
documents, then generic mutations of them (truncation, seeded byte flips, garbage around,
NULs, wrong magic, ...) and format-specific attacks (deep nesting, unclosed constructs,
zip and entity bombs, external entities, reference loops, broken cross references,
undecodable text). Every case must parse or fail with a ``RagloomError`` naming the file,
within a bounded time and memory (``test_hostile_corpus`` runs them).
"""

from __future__ import annotations

import io
import random
import warnings
import zipfile
from collections.abc import Callable, Iterator

PARSERS = ("text", "html", "pdf", "office", "auto")
SECRET = "ragloom-secret-canary"  # written to a file an external entity tries to read

Case = tuple[str, str, bytes]


# ---------------------------------------------------------------------- good documents


def good_text() -> dict[str, bytes]:
    return {
        "plain.txt": b"Bread dough needs yeast, time to rise and a hot oven.\n" * 20,
        "unicode.txt": ("Brot, caf\u00e9, \u4e2d\u6587, \U0001f35e\n" * 20).encode(),
        "latin1.txt": ("Cr\u00e8me br\u00fbl\u00e9e au four.\n" * 20).encode("latin-1"),
    }


def good_html() -> dict[str, bytes]:
    page = "<html><head><title>T</title></head><body><h1>Oven</h1><p>{}</p></body></html>"
    return {
        "page.html": page.format("Bread needs heat.").encode(),
        "table.html": page.format("<table><tr><td>a</td><td>b</td></tr></table>").encode(),
    }


def good_pdf() -> dict[str, bytes]:
    from ragloom.parsers.pdf.testing import make_pdf

    return {
        "one.pdf": make_pdf(["Bread needs an oven."]),
        "three.pdf": make_pdf(["page one", "page two \u4e2d\u6587", "page three"]),
    }


def good_office() -> dict[str, bytes]:
    import docx
    import openpyxl
    import pptx

    def saved(document: object) -> bytes:
        buffer = io.BytesIO()
        document.save(buffer)  # type: ignore[attr-defined]
        return buffer.getvalue()

    word = docx.Document()
    word.add_paragraph("Bread needs an oven.")
    book = openpyxl.Workbook()
    assert book.active is not None
    book.active.append(["flour", 500])
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    assert slide.shapes.title is not None
    slide.shapes.title.text = "Baking"
    return {"doc.docx": saved(word), "book.xlsx": saved(book), "deck.pptx": saved(deck)}


# ---------------------------------------------------------------------- generic mutations


def mutations(data: bytes, seed: int) -> Iterator[tuple[str, bytes]]:
    """Damaged variants of ``data`` (deterministic for a ``seed``)."""
    rng = random.Random(seed)
    yield "empty", b""
    for fraction in (0.1, 0.5, 0.9):
        yield f"cut{int(fraction * 100)}", data[: int(len(data) * fraction)]
    for round_ in range(3):
        flipped = bytearray(data)
        for _ in range(max(1, len(data) // 50)):
            flipped[rng.randrange(len(flipped))] = rng.randrange(256)
        yield f"flip{round_}", bytes(flipped)
    middle = len(data) // 2
    yield "zeroed", data[:middle] + bytes(min(4096, len(data) - middle)) + data[middle + 4096 :]
    yield "nuls", b"\x00".join(data[i : i + 64] for i in range(0, len(data), 64))
    yield "garbage_before", rng.randbytes(512) + data
    yield "garbage_after", data + rng.randbytes(512)
    yield "doubled", data + data
    yield "magic_only", data[:8]
    yield "random_same_size", rng.randbytes(len(data))


# ---------------------------------------------------------------------- format attacks


def text_attacks() -> dict[str, bytes]:
    return {
        "invalid_utf8.txt": b"ok \xff\xfe\xfd bad \xc3\x28 \xa0\xa1" * 100,
        "overlong_utf8.txt": b"\xc0\xaf\xe0\x80\xaf" * 200,
        "cesu_surrogates.txt": b"\xed\xa0\x80\xed\xb0\x80 lone" * 100,
        "utf16le_nobom.txt": ("plain ascii words\n" * 50).encode("utf-16-le"),
        "utf16be_nobom.txt": ("plain ascii words\n" * 50).encode("utf-16-be"),
        "utf32.txt": ("utf 32 text\n" * 50).encode("utf-32"),
        "bom_only.txt": b"\xef\xbb\xbf",
        "bom_utf16_odd.txt": b"\xff\xfe" + b"a\x00b",
        "controls.txt": bytes(range(1, 32)) * 100,
        "one_long_line.txt": b"x" * 2_000_000,
        "many_newlines.txt": b"\n" * 1_000_000,
        "mixed_encodings.txt": "caf\u00e9 ".encode() + "caf\u00e9 ".encode("latin-1") * 50,
        "whitespace_only.txt": b" \t\r\n" * 1000,
        "binary.txt": bytes(range(256)) * 64,
        "shift_jis.txt": ("\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\n" * 50).encode(
            "shift_jis"
        ),
    }


def html_attacks() -> dict[str, bytes]:
    return {
        "deep_divs.html": b"<html><body>" + b"<div>" * 30_000 + b"x",
        "deep_within_limit.html": b"<p>" + b"<span>" * 1_000 + b"x",
        "deep_tables.html": b"<table><tr><td>" * 5_000 + b"x",
        "deep_lists.html": b"<ul><li>" * 10_000 + b"x",
        "unterminated_tag.html": b"<html><body><a" + b"b" * 500_000,
        "unterminated_comment.html": b"<html><body>text<!-- " + b"c" * 500_000,
        "unterminated_script.html": b"<p>x</p><script>" + b"var a=1;" * 50_000,
        "huge_attribute.html": b'<p title="' + b"a" * 2_000_000 + b'">x</p>',
        "many_attributes.html": b"<p " + b" ".join(b"a%d=1" % i for i in range(10_000)) + b">x",
        "entity_flood.html": b"<p>" + b"&amp;&lt;&#x1F600;&#99999999;" * 50_000 + b"</p>",
        "bad_charset_meta.html": b'<meta charset="no-such-charset"><p>caf\xe9</p>',
        "utf16_meta.html": '<meta charset="utf-16"><p>x</p>'.encode("utf-16-le"),
        "only_scripts.html": b"<script>a()</script><style>p{}</style>" * 100,
        "nul_bytes.html": b"<p>a\x00b\x00c</p>" * 100,
        "cdata.html": b"<p><![CDATA[" + b"]]" * 10_000 + b"</p>",
        "xml_bomb.html": (
            b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
            b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
            b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><html><p>&c;&c;&c;</p></html>'
        ),
        "svg_only.html": b"<svg>" + b"<g>" * 5_000 + b"</svg>",
        "frameset.html": b"<frameset>" * 5_000,
    }


def _pdf_objects(*objects: bytes, trailer: bytes = b"<< /Root 1 0 R /Size 9 >>") -> bytes:
    """A PDF from raw object bodies (numbered from 1), with a correct xref table."""
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n" + trailer + b"\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def pdf_attacks() -> dict[str, bytes]:
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 10 10] >>"
    return {
        "page_tree_loop.pdf": _pdf_objects(
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>",
            page,
        ),
        "kids_cycle.pdf": _pdf_objects(
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Pages /Parent 2 0 R /Kids [2 0 R] /Count 1 >>",
        ),
        "huge_count.pdf": _pdf_objects(
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 2147483647 >>",
            page,
        ),
        "deep_arrays.pdf": _pdf_objects(
            b"<< /Type /Catalog /Pages 2 0 R /X " + b"[" * 50_000 + b"]" * 50_000 + b" >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            page,
        ),
        "deep_dicts.pdf": _pdf_objects(
            b"<< /Type /Catalog /Pages 2 0 R /X " + b"<< /A " * 20_000 + b">>" * 20_000 + b" >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            page,
        ),
        "bad_flate.pdf": _pdf_objects(
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 10 10] /Contents 4 0 R >>",
            b"<< /Length 20 /Filter /FlateDecode >>\nstream\nnot zlib data at all\nendstream",
        ),
        "flate_bomb.pdf": _flate_bomb_pdf(),
        "length_lies.pdf": _pdf_objects(
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 10 10] /Contents 4 0 R >>",
            b"<< /Length 999999999 >>\nstream\nBT (x) Tj ET\nendstream",
        ),
        "missing_root.pdf": _pdf_objects(b"<< /Type /Pages /Count 0 >>", trailer=b"<< >>"),
        "no_xref.pdf": b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n%%EOF",
        "startxref_garbage.pdf": b"%PDF-1.4\nstartxref\n99999999999999999999\n%%EOF",
        "self_reference.pdf": _pdf_objects(b"1 0 R", trailer=b"<< /Root 1 0 R >>"),
        "encrypted_no_password.pdf": _pdf_objects(
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [] /Count 0 >>",
            b"<< /Filter /Standard /V 2 /R 3 /O (x) /U (y) /P -4 >>",
            trailer=b"<< /Root 1 0 R /Encrypt 3 0 R /ID [<00> <00>] >>",
        ),
        "header_only.pdf": b"%PDF-1.7\n",
        "many_empty_pages.pdf": _pdf_objects(
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [" + b"3 0 R " * 20_000 + b"] /Count 20000 >>",
            page,
        ),
    }


def _flate_bomb_pdf() -> bytes:
    import zlib

    payload = zlib.compress(b"BT (boom) Tj ET\n" * 4_000_000, 9)  # ~64 MB of content
    return _pdf_objects(
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 10 10] /Contents 4 0 R >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(payload)
        + payload
        + b"\nendstream",
    )


_CONTENT_TYPES = (
    '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
    'content-types"/>'
)
_W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def _docx(document_xml: str | bytes, extra: dict[str, bytes] | None = None) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", _CONTENT_TYPES)
        archive.writestr("word/document.xml", document_xml)
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return out.getvalue()


def _body(inner: str) -> str:
    return f"<w:document {_W}><w:body>{inner}</w:body></w:document>"


def office_attacks(secret_path: str) -> dict[str, bytes]:
    paragraph = "<w:p><w:r><w:t>boom boom boom boom</w:t></w:r></w:p>"
    laughs = (
        '<?xml version="1.0"?><!DOCTYPE w:document ['
        + '<!ENTITY l0 "lol">'
        + "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10))
        + "]>"
        + _body("<w:p><w:r><w:t>&l9;</w:t></w:r></w:p>")
    )
    xxe = (
        f'<?xml version="1.0"?><!DOCTYPE w:document [<!ENTITY x SYSTEM "file://{secret_path}">]>'
        + _body("<w:p><w:r><w:t>&x;</w:t></w:r></w:p>")
    )
    nested_zip = _docx(_body(paragraph))
    return {
        "zip_bomb.docx": _docx(_body(paragraph * 1_000_000)),
        "billion_laughs.docx": _docx(laughs),
        "xxe.docx": _docx(xxe),
        "deep_xml.docx": _docx(_body("<w:p>" * 100_000 + "</w:p>" * 100_000)),
        "unclosed_xml.docx": _docx(_body(paragraph)[:-20]),
        "not_xml.docx": _docx(b"\x00\x01 not xml at all"),
        "no_document.docx": _docx(b"", {"word/other.xml": b"<x/>"}).replace(
            b"word/document.xml", b"word/documenX.xml"
        ),
        "empty_zip.docx": _empty_zip(),
        "path_traversal.docx": _docx(_body(paragraph), {"../../evil.xml": b"<x/>"}),
        "duplicate_members.docx": _duplicate_member_docx(paragraph),
        "nested_zip.docx": _docx(_body(paragraph), {"word/embeddings/inner.docx": nested_zip}),
        "stored_huge_member.xlsx": _xlsx_with_sheet("<row>" + "<c><v>1</v></c>" * 300_000),
        "utf16_xml.docx": _docx(
            ('<?xml version="1.0" encoding="UTF-16"?>' + _body(paragraph)).encode("utf-16")
        ),
        "wrong_encoding_decl.docx": _docx(
            '<?xml version="1.0" encoding="no-such"?>' + _body(paragraph)
        ),
        "encrypted_flag.docx": _encrypted_flag(_docx(_body(paragraph))),
        "zip_comment_flood.docx": _docx(_body(paragraph)) + b"PK\x05\x06" * 10_000,
    }


def _empty_zip() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w"):
        pass
    return out.getvalue()


def _duplicate_member_docx(paragraph: str) -> bytes:
    out = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(out, "w") as archive:
        warnings.simplefilter("ignore")  # "Duplicate name": the point of this case
        archive.writestr("[Content_Types].xml", _CONTENT_TYPES)
        archive.writestr("word/document.xml", _body(paragraph))
        archive.writestr("word/document.xml", "<broken")
    return out.getvalue()


def _xlsx_with_sheet(rows: str) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", _CONTENT_TYPES)
        archive.writestr(
            "xl/workbook.xml",
            '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
            '<sheets><sheet name="s" sheetId="1"/></sheets></workbook>',
        )
        archive.writestr(
            "xl/worksheets/sheet1.xml",
            '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
            f"<sheetData>{rows}</sheetData></worksheet>",
        )
    return out.getvalue()


def _encrypted_flag(data: bytes) -> bytes:
    """``data`` with every local header's general-purpose "encrypted" bit set."""
    return data.replace(b"PK\x03\x04\x14\x00\x00\x00", b"PK\x03\x04\x14\x00\x01\x00")


# ---------------------------------------------------------------------- the corpus


def cases(secret_path: str) -> list[Case]:
    """Every hostile case: ``(parser, file name, bytes)``, names unique per parser."""
    families: dict[str, tuple[Callable[[], dict[str, bytes]], dict[str, bytes]]] = {
        "text": (good_text, text_attacks()),
        "html": (good_html, html_attacks()),
        "pdf": (good_pdf, pdf_attacks()),
        "office": (good_office, office_attacks(secret_path)),
    }
    result: list[Case] = []
    for parser, (make_good, attacks) in families.items():
        good = make_good()
        result += [(parser, name, data) for name, data in good.items()]
        for seed, (name, data) in enumerate(good.items()):
            stem, _, extension = name.rpartition(".")
            for label, mutated in mutations(data, seed):
                result.append((parser, f"{stem}_{label}.{extension}", mutated))
        result += [(parser, name, data) for name, data in attacks.items()]
    # The auto parser sees one of each family's attacks and mutations, under its own name.
    for parser, name, data in list(result):
        if parser != "auto" and (hash_name(name) % 5 == 0):
            result.append(("auto", name, data))
    return result


def hash_name(name: str) -> int:
    """A stable small hash (``hash()`` is salted per process)."""
    return sum(name.encode())
