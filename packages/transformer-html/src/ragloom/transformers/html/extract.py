"""Readable text from an HTML tree (selectolax / lexbor): blocks, lists, tables, links."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

if TYPE_CHECKING:
    from selectolax.lexbor import LexborHTMLParser, LexborNode

__all__ = [
    "SKIPPED",
    "PARAGRAPHS",
    "BLOCKS",
    "LISTS",
    "CELLS",
    "DEFAULT_MAX_DEPTH",
    "nesting_depth",
    "render",
    "NEVER",
    "is_rendered",
    "base_url",
    "is_http_url",
    "node_text",
]

# Never rendered as text.
SKIPPED = frozenset(
    {
        "script",
        "style",
        "noscript",
        "template",
        "head",
        "title",
        "iframe",
        "object",
        "embed",
        "svg",
        "math",
        "canvas",
        "audio",
        "video",
        "select",
        "datalist",
        "-comment",
    }
)
# Separated from what surrounds them by a blank line.
PARAGRAPHS = frozenset(
    {"p", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "table", "hr", "figure"}
)
# Start and end on their own line.
BLOCKS = frozenset(
    {
        "html",
        "body",
        "div",
        "section",
        "article",
        "header",
        "footer",
        "nav",
        "aside",
        "main",
        "address",
        "details",
        "summary",
        "dialog",
        "fieldset",
        "legend",
        "form",
        "figcaption",
        "caption",
        "center",
        "dl",
        "dt",
        "dd",
        "tr",
        "li",
        "ul",
        "ol",
        "menu",
        "option",
        "textarea",
        "search",
        "hgroup",
        "tbody",
        "thead",
        "tfoot",
    }
)
LISTS = frozenset({"ul", "ol", "menu"})
CELLS = frozenset({"td", "th"})
# Elements that never hold children, or whose end tag the parser implies: not nesting.
_FLAT = frozenset(
    {
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
        "source", "track", "wbr", "p", "li", "dt", "dd", "option", "optgroup", "tr", "td",
        "th", "thead", "tbody", "tfoot", "rb", "rt", "rp", "colgroup", "caption", "html",
        "head", "body",
    }
)  # fmt: skip
# A start or end tag; possessive quantifiers keep an unterminated tag linear.
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9:-]*+)([^<>]*+)>")
DEFAULT_MAX_DEPTH = 1024
_SPACE = re.compile(r"[ \t\n\r\f\u200b]+")
_BLANK_LINES = re.compile(r"\n{3,}")
_TRAILING = re.compile(r"[ \t]+\n")


class _Writer:
    """Accumulates text, turning requested breaks into at most one blank line."""

    __slots__ = ("base", "breaks", "include_links", "lists", "out", "prefix", "space", "started")

    def __init__(self, base: str | None, include_links: bool) -> None:
        self.out: list[str] = []
        self.breaks = 0  # newlines owed before the next text
        self.space = False  # a space owed before the next text
        self.started = False  # a line has text on it
        self.prefix = ""  # list bullet owed at the start of the next text
        self.lists: list[list[int]] = []  # [kind (0 = bullets, 1 = numbers), next number]
        self.base = base
        self.include_links = include_links

    def request(self, newlines: int) -> None:
        if self.out:
            self.breaks = max(self.breaks, newlines)
        self.space = False

    def text(self, text: str) -> None:
        if not text:
            return
        if self.breaks:
            self.out.append("\n" * self.breaks)
            self.breaks = 0
            self.started = False
        if self.prefix:
            self.out.append(self.prefix)
            self.prefix = ""
            self.space = False
        elif self.space and self.started:
            self.out.append(" ")
        self.space = False
        self.out.append(text)
        self.started = True

    def inline(self, raw: str) -> None:
        if not raw:
            return
        words = raw.split()  # whitespace collapses (str.split: faster than a regex)
        if raw[0].isspace():
            self.space = True
        if words:
            self.text(" ".join(words))
            if raw[-1].isspace():
                self.space = True

    def line_break(self) -> None:
        if self.breaks:
            self.breaks = max(self.breaks, 1)
        else:
            self.out.append("\n")
            self.started = False
        self.space = False

    def result(self) -> str:
        text = _TRAILING.sub("\n", "".join(self.out))
        return _BLANK_LINES.sub("\n\n", text).strip()


def nesting_depth(html: str, limit: int) -> int:
    """How deep the elements of ``html`` nest, estimated from its tags in linear time.

    Stops counting once ``limit`` is exceeded (returns ``limit + 1``). Void elements,
    elements whose end tag is implied (``p``, ``li``, ``td``...) and self-closed tags
    (``<path/>``) do not nest.
    """
    depth = deepest = 0
    for match in _TAG.finditer(html):
        closing, name, rest = match.groups()
        if rest.endswith("/") or name.lower() in _FLAT:
            continue
        if closing:
            depth = max(depth - 1, 0)
            continue
        depth += 1
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                break
    return deepest


def render(node: LexborNode, *, base: str | None, include_links: bool) -> str:
    """The readable text of ``node`` and its descendants."""
    writer = _Writer(base, include_links)
    _walk(node, writer, pre=False)
    return writer.result()


def _walk(node: LexborNode, w: _Writer, *, pre: bool) -> None:
    """Write the descendants of ``node`` in document order.

    Iterative (an explicit stack of child iterators), so documents nested deeper than
    Python's recursion limit convert in time linear in their size.
    """
    stack: list[tuple[Iterator[LexborNode], bool, Callable[[], None] | None]] = [
        (node.iter(include_text=True), pre, None)
    ]
    while stack:
        children, in_pre, _ = stack[-1]
        child = next(children, None)
        if child is None:
            leave = stack.pop()[2]
            if leave is not None:
                leave()
            continue
        tag = child.tag
        if tag == "-text":
            raw = child.text_content or ""
            if in_pre:
                for i, line in enumerate(raw.split("\n")):
                    if i:
                        w.line_break()
                    w.text(line)
            else:
                w.inline(raw)
            continue
        if tag is None or tag in SKIPPED or "hidden" in child.attributes:
            continue
        entered = _enter(child, tag, w, in_pre)
        if entered is not None:
            stack.append((child.iter(include_text=True), *entered))


def _enter(
    node: LexborNode, tag: str, w: _Writer, pre: bool
) -> tuple[bool, Callable[[], None] | None] | None:
    """Open ``node``: what to write before its children; returns whether its children are
    preformatted and what to write after them (``None``: its children are not visited)."""
    if tag == "br":
        w.line_break()
        return None
    if tag == "hr":
        w.request(2)
        return None
    if tag in CELLS:
        if w.started and not w.breaks:  # not the row's first cell
            w.text("|")
            w.space = True

        def leave_cell() -> None:
            w.space = True

        return pre, leave_cell
    if tag in LISTS:
        nested = bool(w.lists)
        w.request(1 if nested else 2)
        start = _int(node.attributes.get("start"), 1)
        w.lists.append([1 if tag == "ol" else 0, start])

        def leave_list() -> None:
            w.lists.pop()
            w.request(1 if nested else 2)

        return pre, leave_list
    if tag == "li":
        w.request(1)
        depth = max(len(w.lists) - 1, 0)
        if w.lists and w.lists[-1][0] == 1:
            bullet = f"{w.lists[-1][1]}. "
            w.lists[-1][1] += 1
        else:
            bullet = "- "
        w.prefix = "  " * depth + bullet
        return pre, _end_item(w)
    if tag == "dd":
        w.request(1)
        w.prefix = "  "
        return pre, _end_item(w)
    if tag in PARAGRAPHS:
        w.request(2)
        return pre or tag == "pre", lambda: w.request(2)
    if tag in BLOCKS:
        w.request(1)
        return pre, lambda: w.request(1)
    if tag == "a" and w.include_links:
        url = _link(node.attributes.get("href"), w.base)
        if url:

            def leave_link() -> None:
                w.space = True
                w.text(f"<{url}>")

            return pre, leave_link
    return pre, None


def _end_item(w: _Writer) -> Callable[[], None]:
    def leave() -> None:
        w.prefix = ""
        w.request(1)

    return leave


def _link(href: str | None, base: str | None) -> str | None:
    if not href:
        return None
    href = href.strip()
    if not href or href.startswith("#") or href.lower().startswith(("javascript:", "data:")):
        return None
    return urljoin(base, href) if base else href


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


# Never in the text, even when a CSS selector picks them (or something inside them).
NEVER = frozenset({"script", "style", "noscript", "template"})


def is_rendered(node: LexborNode) -> bool:
    """False for script/style/noscript/template and hidden elements, and what is inside them."""
    current: LexborNode | None = node
    while current is not None:
        if current.tag in NEVER or "hidden" in current.attributes:
            return False
        current = current.parent
    return True


def base_url(tree: LexborHTMLParser, url: str | None) -> str | None:
    """The URL relative links resolve against: ``<base href>`` (itself resolved), else ``url``."""
    base = tree.css_first("base[href]")
    href = base.attributes.get("href") if base is not None else None
    if href and href.strip():
        return urljoin(url, href.strip()) if url else href.strip()
    return url


def is_http_url(value: object) -> bool:
    """Whether ``value`` is an absolute http(s) URL."""
    return isinstance(value, str) and urlsplit(value).scheme in ("http", "https")


def node_text(node: LexborNode) -> str:
    """The whitespace-normalised text of one element (a ``meta`` element: its ``content``)."""
    if node.tag == "meta":
        return _SPACE.sub(" ", node.attributes.get("content") or "").strip()
    writer = _Writer(None, False)
    _walk(node, writer, pre=False)
    return _SPACE.sub(" ", writer.result()).strip()
