"""HtmlToTextDocumentTransformer and HtmlDocumentParser, on selectolax (lexbor)."""

from __future__ import annotations

import codecs
import logging
import re
from collections.abc import Mapping
from typing import BinaryIO, ClassVar

from selectolax.lexbor import LexborHTMLParser, SelectolaxError

from ragloom.core.document import FILE_NAME, URL, Document
from ragloom.core.errors import DocumentParseError, EmptyDocumentError, InvalidArgumentError
from ragloom.core.metadata import Metadata
from ragloom.core.parsers.base import read_all, source_name
from ragloom.core.parsers.text import check_charset, detect_charset
from ragloom.core.transformers import DocumentTransformer
from ragloom.transformers.html.attributes import DEFAULT_MAX_ATTRIBUTES, limit_attributes
from ragloom.transformers.html.extract import (
    DEFAULT_MAX_DEPTH,
    base_url,
    is_http_url,
    is_rendered,
    nesting_depth,
    node_text,
    render,
)

__all__ = [
    "HtmlToTextDocumentTransformer",
    "HtmlDocumentParser",
    "decode_html",
]

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
logger = logging.getLogger(__name__)


def _check_limit(value: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(f"{what}: a positive integer, got {value!r}")
    return value


def _check_selector(selector: str, what: str) -> str:
    if not isinstance(selector, str) or not selector.strip():
        raise InvalidArgumentError(
            f"{what}: a CSS selector must be a non-empty string, got {selector!r}"
        )
    try:
        LexborHTMLParser("<p></p>").css(selector)
    except SelectolaxError as exc:
        raise InvalidArgumentError(f"{what}: invalid CSS selector {selector!r}: {exc}") from exc
    return selector


class HtmlToTextDocumentTransformer(DocumentTransformer):
    """Turns a Document holding HTML into readable text (the spec's jsoup transformer).

    - ``css_selector``: only the text of the matching elements, joined by a blank line
      (no match: empty text); without it, the whole ``<body>``.
    - ``metadata_css_selectors``: metadata key -> CSS selector; the key gets the text of
      the matching elements joined by a space (a ``<meta>`` element gives its
      ``content``); a selector matching nothing adds nothing.
    - ``include_links``: each link's target is written after its text as ``<url>``,
      resolved against ``<base href>`` and the document's ``url`` metadata.

    Block elements start new lines, paragraphs and headings are separated by a blank line,
    list items become ``- `` bullets (``1. `` in ordered lists, indented when nested),
    table cells are separated by ``|``; ``<br>`` is a line break and ``<pre>`` keeps its
    whitespace. ``script``, ``style``, ``noscript``, ``template`` and the ``<head>`` never
    reach the text, nor do elements with the ``hidden`` attribute. The input metadata is
    kept (copied).

    ``max_depth`` (default 1024) bounds how deep elements may nest: deeper documents
    are refused with :class:`DocumentParseError` before parsing (the HTML parser's
    cost grows with tags x depth; browsers flatten below a few hundred levels).

    ``max_attributes`` (default 1000) bounds the distinct attributes of one tag (and of
    the ``<html>``, and the ``<body>``, over all their start tags): the ones after are
    dropped before parsing, with a warning logged under ``ragloom.transformers.html``
    naming the document, and the text is kept (the HTML parser's cost grows with the
    square of a tag's attributes; the text needs only ``href``, ``hidden``, ``start``
    and ``<meta content>``).
    """

    def __init__(
        self,
        css_selector: str | None = None,
        metadata_css_selectors: Mapping[str, str] | None = None,
        include_links: bool = False,
        *,
        max_depth: int = DEFAULT_MAX_DEPTH,
        max_attributes: int = DEFAULT_MAX_ATTRIBUTES,
    ) -> None:
        self.max_depth = _check_limit(max_depth, "max_depth")
        self.max_attributes = _check_limit(max_attributes, "max_attributes")
        self.css_selector = (
            _check_selector(css_selector, "css_selector") if css_selector is not None else None
        )
        self.metadata_css_selectors = {
            key: _check_selector(selector, f"metadata_css_selectors[{key!r}]")
            for key, selector in (metadata_css_selectors or {}).items()
        }
        self.include_links = include_links

    def transform(self, document: Document) -> Document:
        """A new Document with the text (and selected metadata) of ``document``'s HTML."""
        url = document.metadata.get(URL)
        metadata = document.metadata.copy()
        name = str(metadata.get(FILE_NAME) or url or "<document>")
        tree = self._parse_tree(document.text, name)
        text = self._convert(tree, str(url) if is_http_url(url) else None, metadata)
        return Document(text, metadata)

    def _parse_tree(self, html: str, name: str) -> LexborHTMLParser:
        depth = nesting_depth(html, self.max_depth)
        if depth > self.max_depth:
            raise DocumentParseError(
                f"{name}: HTML elements nest more than {self.max_depth} levels deep "
                f"(max_depth={self.max_depth})"
            )
        html, tags, dropped = limit_attributes(html, self.max_attributes)
        if tags:
            logger.warning(
                "%s: %d HTML tag(s) with more than %d distinct attributes; "
                "%d attribute(s) after them dropped (max_attributes=%d)",
                name,
                tags,
                self.max_attributes,
                dropped,
                self.max_attributes,
            )
        return LexborHTMLParser(html)

    def _convert(self, tree: LexborHTMLParser, url: str | None, metadata: Metadata) -> str:
        base = base_url(tree, url) if self.include_links else None
        if self.css_selector is not None:
            parts = (
                render(node, base=base, include_links=self.include_links)
                for node in tree.css(self.css_selector)
                if is_rendered(node)
            )
            text = "\n\n".join(part for part in parts if part)
        else:
            body = tree.body
            text = render(body, base=base, include_links=self.include_links) if body else ""
        for key, selector in self.metadata_css_selectors.items():
            value = " ".join(filter(None, (node_text(node) for node in tree.css(selector))))
            if value:
                metadata[key] = value
        return text


class HtmlDocumentParser(HtmlToTextDocumentTransformer):
    """Parses HTML files into readable text with :class:`HtmlToTextDocumentTransformer`.

    Registered for ``.html``, ``.htm``, ``.xhtml`` and HTML content. Bytes are decoded with
    ``charset`` if given, else a byte-order mark, else the ``<meta charset>`` declaration,
    else UTF-8, else Windows-1252; binary input is refused. The ``<title>`` becomes the
    ``title`` metadata. Relative links resolve against ``source`` when it is an http(s)
    URL. No text: :class:`EmptyDocumentError`.
    """

    extensions: ClassVar[tuple[str, ...]] = (".html", ".htm", ".xhtml")
    media_types: ClassVar[tuple[str, ...]] = ("text/html", "application/xhtml+xml")

    def __init__(
        self,
        css_selector: str | None = None,
        metadata_css_selectors: Mapping[str, str] | None = None,
        include_links: bool = False,
        *,
        charset: str | None = None,
        max_depth: int = DEFAULT_MAX_DEPTH,
        max_attributes: int = DEFAULT_MAX_ATTRIBUTES,
    ) -> None:
        super().__init__(
            css_selector,
            metadata_css_selectors,
            include_links,
            max_depth=max_depth,
            max_attributes=max_attributes,
        )
        self.charset = None if charset is None else check_charset(charset)

    def parse(self, data: bytes | BinaryIO, *, source: str | None = None) -> Document:
        """Decode and convert the HTML in ``data``; errors name ``source``."""
        raw = read_all(data)
        name = source_name(data, source)
        tree = self._parse_tree(decode_html(raw, name, self.charset), name)
        metadata = Metadata()
        title = tree.css_first("title")
        if title is not None and (title_text := node_text(title)):
            metadata["title"] = title_text
        text = self._convert(tree, source if is_http_url(source) else None, metadata)
        if not text.strip():
            raise EmptyDocumentError(f"{name}: HTML document has no text")
        return Document(text, metadata)


def decode_html(raw: bytes, name: str = "<bytes>", charset: str | None = None) -> str:
    """The text of HTML bytes: ``charset``, a BOM, ``<meta charset>``, UTF-8, Windows-1252."""
    if charset is None:
        detected = detect_charset(raw, name)  # refuses binary data
        declared = None if raw.startswith(_BOMS) else _declared_charset(raw)
        if declared is not None and declared != detected:
            try:
                return raw.decode(declared)
            except UnicodeDecodeError:
                pass  # a wrong declaration: trust the bytes
        charset = detected
    try:
        return raw.decode(charset)
    except UnicodeDecodeError as exc:
        raise DocumentParseError(
            f"{name}: cannot decode as {charset} at byte {exc.start}: {exc.reason}"
        ) from exc


def _declared_charset(raw: bytes) -> str | None:
    found = _META_CHARSET.search(raw[:4096])
    if found is None:
        return None
    name = found.group(1).decode("ascii", "replace").lower()
    if name in ("iso-8859-1", "latin1", "latin-1", "us-ascii", "ascii"):
        return "cp1252"  # what browsers do, per the WHATWG encoding standard
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None
