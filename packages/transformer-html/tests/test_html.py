"""HtmlToTextDocumentTransformer and HtmlDocumentParser."""

from __future__ import annotations

import logging
import random
import time
from pathlib import Path

import pytest
from selectolax.lexbor import LexborHTMLParser

from ragloom.core import (
    Document,
    DocumentParseError,
    DocumentTransformer,
    EmptyDocumentError,
    FileSystemDocumentLoader,
    InvalidArgumentError,
    plugins,
)
from ragloom.core.parsers.dispatch import DispatchingDocumentParser
from ragloom.testkit import DocumentParserSuite, ParserSample
from ragloom.transformers.html import HtmlDocumentParser, HtmlToTextDocumentTransformer
from ragloom.transformers.html.attributes import limit_attributes
from ragloom.transformers.html.extract import nesting_depth

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
  <title>The  Page Title</title>
  <meta name="description" content="A page about   things">
  <meta name="author" content="Ann">
  <style>body { color: red } .secret { display: none }</style>
  <script>var leaked = "SCRIPT-LEAK";</script>
</head>
<body>
  <nav><a href="/">Home</a> | <a href="/docs/">Docs</a></nav>
  <article class="content">
    <h1>Main    heading</h1>
    <p>First   paragraph with
       a <a href="details.html">relative link</a>, an
       <a href="https://other.example/x?y=1#z">absolute one</a> and
       <a href="#top">a fragment</a>.<br>After the break.</p>
    <script>document.write("SCRIPT-LEAK-2")</script>
    <noscript>NOSCRIPT-LEAK</noscript>
    <template><p>TEMPLATE-LEAK</p></template>
    <style>.x { content: "STYLE-LEAK" }</style>
    <ul>
      <li>apples</li>
      <li>pears
        <ol start="3"><li>small</li><li>large</li></ol>
      </li>
    </ul>
    <table>
      <tr><th>name</th><th>qty</th></tr>
      <tr><td>apples</td><td>3</td></tr>
    </table>
    <pre>  keep
    this   spacing</pre>
    <p hidden>HIDDEN-LEAK</p>
  </article>
  <aside class="content">Side note</aside>
  <footer>Footer text</footer>
</body>
</html>"""

LEAKS = ["LEAK", "var leaked", "color: red", "display: none"]


def transform(html: str, **kwargs: object) -> Document:
    metadata = kwargs.pop("metadata", {})
    transformer = HtmlToTextDocumentTransformer(**kwargs)  # type: ignore[arg-type]
    return transformer.transform(Document(html, metadata))  # type: ignore[arg-type]


def test_whole_body_as_readable_text() -> None:
    text = transform(PAGE).text
    assert text == (
        "Home | Docs\n\n"
        "Main heading\n\n"
        "First paragraph with a relative link, an absolute one and a fragment.\n"
        "After the break.\n\n"
        "- apples\n"
        "- pears\n"
        "  3. small\n"
        "  4. large\n\n"
        "name | qty\n"
        "apples | 3\n\n"
        "  keep\n"
        "    this   spacing\n\n"
        "Side note\n"
        "Footer text"
    )


@pytest.mark.parametrize("selector", [None, "article", "body", "html", "*"])
def test_script_style_noscript_never_leak(selector: str | None) -> None:
    text = transform(PAGE, css_selector=selector).text
    for leak in LEAKS:
        assert leak not in text


def test_css_selector_selects_and_joins_with_a_blank_line() -> None:
    assert transform(PAGE, css_selector="h1").text == "Main heading"
    both = transform(PAGE, css_selector=".content").text
    assert both.startswith("Main heading\n\n")
    assert both.endswith("spacing\n\nSide note")
    assert transform(PAGE, css_selector="article > ul > li:nth-child(2) li").text == (
        "small\n\nlarge"
    )
    assert transform(PAGE, css_selector=".absent").text == ""


def test_metadata_css_selectors() -> None:
    doc = transform(
        PAGE,
        metadata={"url": "https://example.com/a/page.html", "kept": 1},
        metadata_css_selectors={
            "title": "title",
            "heading": "h1",
            "description": "meta[name=description]",
            "cells": "td",
            "missing": ".nothing-here",
        },
    )
    assert doc.metadata.to_dict() == {
        "url": "https://example.com/a/page.html",
        "kept": 1,
        "title": "The Page Title",
        "heading": "Main heading",
        "description": "A page about things",
        "cells": "apples 3",
    }


def test_links_are_resolved_against_the_url_metadata() -> None:
    doc = transform(
        PAGE,
        css_selector="nav, article > p",
        include_links=True,
        metadata={"url": "https://example.com/a/page.html"},
    )
    assert doc.text == (
        "Home <https://example.com/> | Docs <https://example.com/docs/>\n\n"
        "First paragraph with a relative link <https://example.com/a/details.html>, "
        "an absolute one <https://other.example/x?y=1#z> and a fragment.\n"
        "After the break."
    )


def test_base_href_and_missing_url() -> None:
    html = '<head><base href="/root/"></head><body><a href="x.html">x</a></body>'
    with_url = transform(html, include_links=True, metadata={"url": "https://h.example/p/q"})
    assert with_url.text == "x <https://h.example/root/x.html>"
    assert transform(html, include_links=True).text == "x </root/x.html>"
    no_base = '<a href="y.html">y</a> <a href="javascript:go()">js</a> <a>none</a>'
    assert transform(no_base, include_links=True).text == "y <y.html> js none"
    assert transform(no_base, include_links=True, metadata={"url": "file.html"}).text == (
        "y <y.html> js none"
    )


def test_whitespace_and_inline_elements() -> None:
    html = "<p>a<b>b</b>c  <i> d </i>\n\n e</p><div>x</div><div><div>y</div></div><span>z</span>"
    assert transform(html).text == "abc d e\n\nx\ny\nz"
    assert transform("<p>one<br><br>two</p>").text == "one\n\ntwo"
    assert transform("plain text, no tags").text == "plain text, no tags"
    assert transform("").text == ""


def test_input_metadata_is_copied_not_shared() -> None:
    original = Document("<title>t</title><p>x</p>", {"source": "s"})
    out = HtmlToTextDocumentTransformer(metadata_css_selectors={"title": "title"}).transform(
        original
    )
    assert out.metadata.to_dict() == {"source": "s", "title": "t"}
    assert original.metadata.to_dict() == {"source": "s"}
    assert original.text == "<title>t</title><p>x</p>"


def test_is_a_document_transformer_with_transform_all() -> None:
    transformer = HtmlToTextDocumentTransformer()
    assert isinstance(transformer, DocumentTransformer)
    docs = transformer.transform_all([Document("<p>a</p>"), Document("<p>b</p>")])
    assert [d.text for d in docs] == ["a", "b"]


@pytest.mark.parametrize("selector", ["p >> x", "", "div:contains(x)", "["])
def test_invalid_selectors_are_refused_up_front(selector: str) -> None:
    with pytest.raises(ValueError, match="css_selector"):
        HtmlToTextDocumentTransformer(css_selector=selector)
    with pytest.raises(ValueError, match=r"metadata_css_selectors\['k'\]"):
        HtmlToTextDocumentTransformer(metadata_css_selectors={"k": selector})


def test_unicode_text() -> None:
    html = "<p>中文 日本語 한국어</p><p dir=rtl>שלום עולם</p><p>مرحبا بالعالم</p><p>🌍🎉</p>"
    assert transform(html).text == "中文 日本語 한국어\n\nשלום עולם\n\nمرحبا بالعالم\n\n🌍🎉"  # noqa: RUF001


# -- the parser -------------------------------------------------------------------------


class TestHtmlDocumentParserSuite(DocumentParserSuite):
    @pytest.fixture
    def parser(self) -> HtmlDocumentParser:
        return HtmlDocumentParser()

    @pytest.fixture
    def sample(self) -> ParserSample:
        return ParserSample(PAGE.encode(), ["Main heading", "- apples", "apples | 3"])


def test_parser_title_and_options() -> None:
    doc = HtmlDocumentParser(
        css_selector="article > p", metadata_css_selectors={"author": "meta[name=author]"}
    ).parse(PAGE.encode(), source="page.html")
    assert doc.text.startswith("First paragraph")
    assert doc.metadata.to_dict() == {"title": "The Page Title", "author": "Ann"}


def test_parser_resolves_links_against_an_http_source() -> None:
    parser = HtmlDocumentParser(css_selector="nav", include_links=True)
    doc = parser.parse(PAGE.encode(), source="https://example.com/a/")
    assert doc.text == "Home <https://example.com/> | Docs <https://example.com/docs/>"
    assert parser.parse(PAGE.encode(), source="/local/page.html").text == (
        "Home </> | Docs </docs/>"
    )


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("<meta charset='iso-8859-1'><p>café</p>".encode("cp1252"), "café"),
        (
            b'<meta http-equiv="Content-Type" content="text/html; charset=windows-1252">'
            + "<p>“q”</p>".encode("cp1252"),
            "“q”",
        ),
        ("<meta charset=shift_jis><p>日本語</p>".encode("shift_jis"), "日本語"),
        ("<p>utf-16 ✓</p>".encode("utf-16"), "utf-16 ✓"),
        ("<meta charset=utf-8><p>naïve</p>".encode("cp1252"), "naïve"),  # wrong declaration
        ("<p>no declaration 🌍</p>".encode(), "no declaration 🌍"),
    ],
)
def test_parser_charsets(data: bytes, expected: str) -> None:
    assert HtmlDocumentParser().parse(data).text == expected
    assert HtmlDocumentParser(charset="utf-8").parse("<p>é</p>".encode()).text == "é"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"   ",
        b"<html><head><title>only a title</title></head><body></body></html>",
        b"<script>only()</script><style>x{}</style>",
    ],
)
def test_parser_empty_documents(data: bytes) -> None:
    with pytest.raises(EmptyDocumentError, match="empty.html"):
        HtmlDocumentParser().parse(data, source="empty.html")


def test_parser_refuses_binary_and_undecodable_input() -> None:
    pdf = b"%PDF-1.7\n" + bytes(range(256)) * 8
    with pytest.raises(DocumentParseError, match=r"renamed.html: looks like binary"):
        HtmlDocumentParser().parse(pdf, source="renamed.html")
    with pytest.raises(DocumentParseError, match=r"bad.html: cannot decode as utf-8"):
        HtmlDocumentParser(charset="utf-8").parse(b"<p>\xff</p>", source="bad.html")
    with pytest.raises(DocumentParseError, match="unknown charset"):
        HtmlDocumentParser(charset="no-such-charset")


def test_parser_truncated_html_keeps_what_is_there() -> None:
    cut = PAGE[: PAGE.index("relative link") + 5]
    assert HtmlDocumentParser().parse(cut.encode()).text.endswith("with a relat")


def test_parser_large_page() -> None:
    rows = "".join(f"<tr><td>row {i}</td><td>{i * i}</td></tr>" for i in range(20000))
    html = f"<h1>Big</h1><table>{rows}</table>".encode()
    started = time.perf_counter()
    doc = HtmlDocumentParser().parse(html)
    assert time.perf_counter() - started < 10  # generous: about 0.1 s here
    assert doc.text.count("\n") == 20001
    assert doc.text.endswith("row 19999 | 399960001")


def test_registered_for_html_files_and_content() -> None:
    assert isinstance(plugins.load("ragloom.document_parsers", "html"), HtmlDocumentParser)
    dispatcher = DispatchingDocumentParser.from_plugins()
    assert isinstance(dispatcher.parser_for("index.HTML"), HtmlDocumentParser)
    assert isinstance(dispatcher.parser_for("x.htm"), HtmlDocumentParser)
    assert isinstance(dispatcher.parser_for("https://h/", b"<!doctype html>"), HtmlDocumentParser)


def test_directory_with_bad_files_ingests_the_good_ones(tmp_path: Path) -> None:
    (tmp_path / "page.html").write_text(PAGE)
    (tmp_path / "unicode.htm").write_text("<p>中文 שלום 🌍</p>", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("<p>a txt file keeps its markup</p>")
    (tmp_path / "empty.html").write_bytes(b"")
    (tmp_path / "scripts-only.html").write_text("<script>x()</script>")
    (tmp_path / "binary.html").write_bytes(bytes(range(256)) * 4)
    loaded = FileSystemDocumentLoader.load_documents(tmp_path)
    texts = {d.metadata["file_name"]: d.text for d in loaded}
    assert set(texts) == {"page.html", "unicode.htm", "notes.txt"}
    assert texts["unicode.htm"] == "中文 שלום 🌍"
    assert texts["notes.txt"] == "<p>a txt file keeps its markup</p>"
    failed = {Path(f.source).name: f.error for f in loaded.failures}
    assert set(failed) == {"empty.html", "scripts-only.html", "binary.html"}
    assert isinstance(failed["empty.html"], EmptyDocumentError)
    assert all(name in str(error) for name, error in failed.items())


def test_deep_nesting_converts_without_recursion() -> None:
    # Deeper than Python's recursion limit, within max_depth: converted iteratively.
    html = "<body>" + "<span>" * 1000 + "deep" + "</span>" * 1000 + "<p>after</p>"
    assert HtmlDocumentParser().parse(html.encode()).text == "deep\n\nafter"


def test_nesting_beyond_max_depth_is_refused_naming_the_source() -> None:
    html = ("<div>" * 50_000 + "x" + "</div>" * 50_000).encode()
    with pytest.raises(DocumentParseError, match=r"deep\.html: .*max_depth=1024"):
        HtmlDocumentParser().parse(html, source="deep.html")
    assert HtmlDocumentParser(max_depth=60_000).parse(b"<div><div>x</div></div>").text == "x"
    with pytest.raises(InvalidArgumentError, match="max_depth"):
        HtmlDocumentParser(max_depth=0)


def test_nesting_depth_ignores_void_implied_and_self_closed_tags() -> None:
    flat = "<p>a<p>b<br><img src=x><li>c" * 3000 + "<svg>" + "<path d='M0'/>" * 3000 + "</svg>"
    assert nesting_depth(flat, 1024) == 1
    assert nesting_depth("<div><span>x</span><b>" * 2000, 10) == 11
    assert nesting_depth("<a" + "b" * 200_000, 10) == 0  # unterminated tag: linear


# -- tags with too many attributes (lexbor's parse time is quadratic in them) ----------


def hostile(n: int, value: str = '="x"') -> str:
    return " ".join(f"a{i}{value}" for i in range(n))


def test_a_tag_with_too_many_attributes_is_trimmed_and_its_text_kept(
    caplog: pytest.LogCaptureFixture,
) -> None:
    html = f"<p>before</p><div {hostile(20_000)}>hi</div><p>after</p>".encode()
    with caplog.at_level(logging.WARNING, logger="ragloom.transformers.html"):
        doc = HtmlDocumentParser().parse(html, source="https://h.example/hostile.html")
    assert doc.text == "before\n\nhi\n\nafter"
    assert caplog.messages == [
        "https://h.example/hostile.html: 1 HTML tag(s) with more than 1000 distinct "
        "attributes; 19000 attribute(s) after them dropped (max_attributes=1000)"
    ]


def test_attributes_within_the_limit_are_kept_and_the_ones_after_dropped() -> None:
    links = '<a href="/in" x y>in</a> <a x y z href="/out">out</a>'
    assert transform(links, include_links=True, max_attributes=3).text == "in </in> out"
    assert transform(links, include_links=True, max_attributes=4).text == ("in </in> out </out>")
    hidden = "<p a b hidden>one</p><p a b c hidden>two</p><ol x y z start=5><li>three</ol>"
    assert transform(hidden, max_attributes=3).text == "two\n\n1. three"
    # duplicates (and their case) do not count: lexbor keeps the first
    assert transform("<p a A a b B hidden>x</p>", max_attributes=3).text == ""


def test_the_attributes_of_repeated_html_and_body_tags_add_up() -> None:
    html = "<body a b><p>x</p><body c d><body e>"
    assert transform(html, css_selector="body[c]", max_attributes=3).text == "x"
    assert transform(html, css_selector="body[d]", max_attributes=3).text == ""
    assert transform(html, css_selector="body[e]", max_attributes=5).text == "x"
    assert limit_attributes("<html a><html b c><html d>", 2) == ("<html a><html b><html>", 2, 2)


@pytest.mark.parametrize(
    "html",
    [
        '<p title="a > b" x="<p>" y hidden>shown</p>',  # '>' and '<' in quoted values
        "<p title='a > b' x=y<z y hidden>shown</p>",
        '<!-- <x title=" --><p a b c hidden>shown</p>',  # an open quote in a comment
        "<!--><p a b c hidden>shown</p><!-- -->",  # <!--> is a whole comment
        "<script>var s = '<x title=\"';</script><p a b c hidden>shown</p>",
        '<style>p[title="</style><p a b c hidden>shown</p>',
        "<title><x title='</title><p a b c hidden>shown</p>",
        # the script's "<!--<script>" makes it end at its second </script>
        '<script><!--<script></script><x title="</script><p a b c hidden>shown</p>',
        '<!DOCTYPE html "><p a b c hidden>shown</p>',
        # inside <svg>, <style> is markup and CDATA ends at ]]>
        "<svg><style><p a b c hidden>shown</p></style></svg>",
        '<svg><![CDATA[ > <x title=" ]]><p a b c hidden>shown</p></svg>',
    ],
)
def test_quotes_comments_and_raw_text_do_not_hide_a_tag(html: str) -> None:
    assert transform(html, max_attributes=3).text == "shown"


@pytest.mark.parametrize(
    "html",
    [
        "<!-- <p a b c d e> -->",
        "<p>if a<3 b c d e f</p>",
        "<!DOCTYPE html a b c d e>",
        "<p>a < b c d e f > g</p>",
    ],
)
def test_what_is_not_a_tag_is_left_alone(html: str) -> None:
    assert limit_attributes(html, 3) == (html, 0, 0)


def test_raw_text_is_searched_for_tags_too() -> None:
    # <style> is raw text, unless inside <svg>: its "tags" are trimmed either way.
    html = "<style>a<b c d e f {}</style><p>x</p>"
    assert limit_attributes(html, 3) == ("<style>a<b c d e</style><p>x</p>", 1, 2)
    assert transform(html, max_attributes=3).text == "x"


def test_normal_pages_are_left_unchanged() -> None:
    assert limit_attributes(PAGE, 1)[1] > 0  # PAGE's tags have attributes
    assert limit_attributes(PAGE, 2) == (PAGE, 0, 0)
    rows = "".join(f'<tr class="r"><td id="c{i}">{i}</td></tr>' for i in range(1000))
    page = f"<svg><title>t</title></svg><table>{rows}</table>"
    assert limit_attributes(page, 1000)[0] is page


# Pieces of markup whose reading depends on what comes before (no <svg>/<math>: there,
# see attributes.py for what is left out).
_PIECES = [
    "<p ", "<div ", "</div ", "<script>", "</script>", "<style>", "</style>", "<textarea>",
    "</textarea>", "<title>", "</title>", "<xmp>", "</xmp>", "<!--", "-->", "--!>", "<!-",
    "<!DOCTYPE ", "<?x ", "</ ", "<!--<script>", '"', "'", "=", " ", "/", ">", "<", "x",
    "<body ", "<html ", "<![CDATA[", "]]>", "<plaintext>", "<noscript>",
]  # fmt: skip


def test_no_tag_keeps_more_attributes_than_the_limit_whatever_surrounds_it() -> None:
    rng = random.Random(7)
    for _ in range(3000):
        parts = [rng.choice(_PIECES) for _ in range(rng.randrange(1, 25))]
        value = rng.choice(["", '="v"', "='>'", "=u", '=">"'])
        attributes = " ".join(f"h{rng.randrange(10**6)}{value}" for _ in range(12))
        parts.insert(rng.randrange(len(parts) + 1), f"<b {attributes}>")
        html = "".join(parts)
        tree = LexborHTMLParser(limit_attributes(html, 5)[0])
        assert max(len(node.attributes) for node in tree.root.traverse()) <= 5, html


@pytest.mark.parametrize("value", [0, -1, True, 2.5, "1000", None])
def test_max_attributes_is_validated(value: object) -> None:
    with pytest.raises(InvalidArgumentError, match="max_attributes"):
        HtmlToTextDocumentTransformer(max_attributes=value)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="max_attributes"):
        HtmlDocumentParser(max_attributes=value)  # type: ignore[arg-type]
    transformer = plugins.create("ragloom.document_transformers", "html", max_attributes=7)
    assert transformer.max_attributes == 7


def test_a_batch_with_a_hostile_page_ingests_it_and_the_others(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "page.html").write_text(PAGE)
    (tmp_path / "hostile.html").write_text(f"<div {hostile(5000, '')}>kept text</div>")
    (tmp_path / "empty.html").write_bytes(b"")
    with caplog.at_level(logging.WARNING, logger="ragloom.transformers.html"):
        loaded = FileSystemDocumentLoader.load_documents(tmp_path)
    texts = {d.metadata["file_name"]: d.text for d in loaded}
    assert texts == {
        "page.html": HtmlDocumentParser().parse(PAGE.encode()).text,
        "hostile.html": "kept text",
    }
    assert [Path(f.source).name for f in loaded.failures] == ["empty.html"]
    (warning,) = [r.getMessage() for r in caplog.records if "max_attributes" in r.getMessage()]
    assert "hostile.html: 1 HTML tag(s) with more than 1000 distinct attributes" in warning
