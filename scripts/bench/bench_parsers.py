"""Parse throughput of the document parsers, against plain-text decoding in the same run.

Inputs are made in memory (no files needed): a 40-page PDF, a Word document, a
spreadsheet, a slide deck, an HTML page and plain text, each of roughly similar text
volume. For every installed parser it prints documents/s, input MB/s, pages/s where the
format has pages, and the ratio of its text throughput (characters out per second) to
``TextDocumentParser`` on the same text (the baseline, measured first).

    .venv/bin/python scripts/bench/bench_parsers.py [--seconds 1.0]

Parsers whose package is not installed are skipped with a note. The auto parser
(extractous) is measured in its default worker mode and in-process (``timeout=None``).
"""

from __future__ import annotations

import argparse
import io
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from ragloom.core import Document, TextDocumentParser
from ragloom.core.parsers.base import DocumentParser
from ragloom.core.parsers.dispatch import DispatchingDocumentParser

_SENTENCE = (
    "retrieval augmented generation splits documents into segments embeds them and "
    "stores vectors so that a question finds the passages that answer it 检索 增强 🌍"
)
WORDS = _SENTENCE.split()


def paragraph(i: int, words: int = 60) -> str:
    return " ".join(WORDS[(i + k) % len(WORDS)] for k in range(words)) + f" ({i})."


def make_inputs() -> dict[str, tuple[bytes, int]]:
    """Format -> (bytes, pages). Formats whose writer is not installed are left out."""
    paragraphs = [paragraph(i) for i in range(400)]
    text = "\n\n".join(paragraphs)
    inputs: dict[str, tuple[bytes, int]] = {"text": (text.encode(), 0)}
    html = "<html><head><title>Bench</title><script>var x = 1;</script></head><body>"
    html += "".join(
        f"<h2>Section {i}</h2><p>{p}</p><ul><li>item a</li><li>item b</li></ul>"
        for i, p in enumerate(paragraphs)
    )
    inputs["html"] = ((html + "</body></html>").encode(), 0)
    try:
        from ragloom.parsers.pdf.testing import make_pdf

        pages = ["\n".join(paragraphs[i : i + 10]) for i in range(0, 400, 10)]
        inputs["pdf"] = (make_pdf(pages), len(pages))
    except ImportError:
        pass
    try:
        import docx
        import openpyxl  # type: ignore[import-untyped]  # no py.typed; as in parser-office
        import pptx

        document = docx.Document()
        for i, p in enumerate(paragraphs):
            if i % 20 == 0:
                document.add_heading(f"Heading {i}", level=1)
            document.add_paragraph(p)
        inputs["docx"] = (_saved(document), 0)
        workbook = openpyxl.Workbook()
        sheet = workbook.active
        for i in range(4000):
            sheet.append([f"row {i}", i, i * 0.25, WORDS[i % len(WORDS)], paragraph(i, 6)])
        inputs["xlsx"] = (_saved(workbook), 0)
        deck = pptx.Presentation()
        for i in range(0, 400, 10):
            slide = deck.slides.add_slide(deck.slide_layouts[1])
            slide.shapes.title.text = f"Slide {i}"
            slide.placeholders[1].text = "\n".join(paragraphs[i : i + 10])
        inputs["pptx"] = (_saved(deck), 40)
    except ImportError:
        pass
    return inputs


def _saved(document: Any) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def rate(parse: Callable[[], Document], seconds: float) -> tuple[float, int]:
    """Median seconds per parse over ``seconds`` of repeated parses, and text length."""
    document = parse()  # warm-up (worker start, imports)
    times: list[float] = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline or len(times) < 3:
        start = time.perf_counter()
        parse()
        times.append(time.perf_counter() - start)
    return statistics.median(times), len(document.text)


def parsers() -> list[tuple[str, str, DocumentParser]]:
    """(label, format it is given, parser) for every installed parser."""
    found: list[tuple[str, str, DocumentParser]] = [
        ("TextDocumentParser", "text", TextDocumentParser())
    ]
    try:
        from ragloom.transformers.html import HtmlDocumentParser

        found.append(("HtmlDocumentParser", "html", HtmlDocumentParser()))
    except ImportError:
        print("note: ragloom-transformer-html not installed")
    try:
        from ragloom.parsers.pdf import PdfDocumentParser

        found.append(("PdfDocumentParser", "pdf", PdfDocumentParser()))
    except ImportError:
        print("note: ragloom-parser-pdf not installed")
    try:
        from ragloom.parsers.office import OfficeDocumentParser

        office = OfficeDocumentParser()
        found += [("OfficeDocumentParser", kind, office) for kind in ("docx", "xlsx", "pptx")]
    except ImportError:
        print("note: ragloom-parser-office not installed")
    try:
        from ragloom.parsers.auto import AutoDocumentParser

        worker, in_process = AutoDocumentParser(), AutoDocumentParser(timeout=None)
        for kind in ("text", "html", "pdf", "docx", "xlsx", "pptx"):
            found.append(("AutoDocumentParser (worker)", kind, worker))
            found.append(("AutoDocumentParser (in-process)", kind, in_process))
    except ImportError:
        print("note: ragloom-parser-auto not installed")
    return found


def main() -> None:
    arguments = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    arguments.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    seconds = arguments.parse_args().seconds
    inputs = make_inputs()
    text_data = inputs["text"][0]
    baseline_time, baseline_chars = rate(lambda: TextDocumentParser().parse(text_data), seconds)
    baseline = baseline_chars / baseline_time
    print(f"baseline: TextDocumentParser {baseline / 1e6:.1f} M chars/s on {len(text_data):,} B\n")
    header = f"{'parser':33} {'input':5} {'size':>9} {'docs/s':>8} {'MB/s':>7} {'pages/s':>8}"
    print(header + f" {'chars/s':>9} {'vs text':>8}")
    for label, kind, parser in parsers():
        if kind not in inputs:
            continue
        data, pages = inputs[kind]
        seconds_per_doc, chars = rate(partial(parser.parse, data, source="x"), seconds)
        chars_per_second = chars / seconds_per_doc
        page_rate = f"{pages / seconds_per_doc:8.0f}" if pages else f"{'-':>8}"
        print(
            f"{label:33} {kind:5} {len(data):9,} {1 / seconds_per_doc:8.1f} "
            f"{len(data) / seconds_per_doc / 1e6:7.2f} {page_rate} "
            f"{chars_per_second / 1e6:8.2f}M {chars_per_second / baseline:8.3f}"
        )
        if hasattr(parser, "close") and label.endswith("(worker)") and kind == "pptx":
            parser.close()
    # dispatch overhead: many small text files through the dispatcher vs the parser itself
    small = [f"note {i}: {paragraph(i, 12)}".encode() for i in range(200)]
    direct = TextDocumentParser()
    dispatcher = DispatchingDocumentParser.from_plugins()

    def parse_all(parser: Any) -> Document:
        for i, data in enumerate(small):
            document: Document = parser.parse(data, source=f"note-{i}.txt")
        return document

    direct_time, _ = rate(lambda: parse_all(direct), seconds)
    dispatch_time, _ = rate(lambda: parse_all(dispatcher), seconds)
    print(
        f"\ndispatch: {len(small) / dispatch_time:,.0f} small .txt files/s through "
        f"DispatchingDocumentParser vs {len(small) / direct_time:,.0f}/s direct "
        f"({dispatch_time / direct_time:.2f}x the time)"
    )


if __name__ == "__main__":
    main()
