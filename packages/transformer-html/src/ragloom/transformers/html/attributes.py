"""A bound on the attributes of one HTML tag, enforced before parsing, in linear time.

lexbor checks each new attribute of a tag against the tag's previous ones, so its parse
time is quadratic in the number of distinct attributes of one tag (one ``<div a0 a1 ...>``
of 16,000 attributes, 165 KB, takes half a second; a 3 MB one, minutes). The repeated
``<html>`` and ``<body>`` start tags a page may hold merge their attributes into one
element, which is quadratic in the same way. :func:`limit_attributes` finds such tags
with compiled regular expressions that follow the HTML tokenizer (quoted values may hold
``>`` and ``<``; comments, doctypes and the raw text of ``<script>`` with its escapes,
``<style>``, ``<textarea>``... are not tags) and drops the attributes after the first
``limit`` distinct ones, so the page's text is kept.

Whether an element's content is raw text is the tree builder's choice (``<style>`` inside
``<svg>`` is markup, ``<![CDATA[`` there is not a comment), so raw text is also searched
for tags on its own, and a page with ``<svg>`` or ``<math>`` is searched a second time
reading no element as raw text and CDATA sections as such. Left out: pages that mix both
readings around one tag (a tag or comment started inside raw text the tree builder reads
as markup, running past the raw text's end tag, inside ``<svg>``/``<math>`` or an ignored
``<iframe>``); of 140,000 random documents built from such pieces, one kept a tag above
the limit.
"""

from __future__ import annotations

import functools
import re
import string

__all__ = [
    "DEFAULT_MAX_ATTRIBUTES",
    "limit_attributes",
]

DEFAULT_MAX_ATTRIBUTES = 1000
# The tokenizer lowers ASCII letters only: "Ä" and "ä" stay two names.
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)

_WS = "\t\n\f\r "
# One attribute, from the tokenizer's "before attribute name" state: separators, a name
# (may start with '='; '<', '"' and "'" are name characters), an optional value.
_ATTRIBUTE = (
    rf"[{_WS}/]*+(=[^{_WS}/>=]*+|[^{_WS}/>=]++)"
    rf"""(?:[{_WS}]*+=[{_WS}]*+(?:"[^"]*+"?|'[^']*+'?|[^{_WS}>]*+))?+"""
)
_ATTRIBUTE_RE = re.compile(_ATTRIBUTE)
# Elements whose content the tokenizer reads as text up to their end tag.
_RAW_TEXT = frozenset(
    {"script", "style", "xmp", "iframe", "noembed", "noframes", "textarea", "title"}
)
# Their content, up to their end tag (or the end). A script's "<!--<script>" escapes
# the next "</script>", up to a "-->" (the tokenizer's double-escaped states).
_SCRIPT = rf"(?i:script)[{_WS}/>]"
_DOUBLE_ESCAPED = rf"(?:[^<-]++|-(?!->)|<(?!/{_SCRIPT}))*+(?:</{_SCRIPT})?+"
_ESCAPED = rf"(?:-*+>|(?:[^<-]++|-(?!->)|<(?!/?{_SCRIPT})|<{_SCRIPT}{_DOUBLE_ESCAPED})*+(?:-->)?+)"
_CONTENT = {
    name: re.compile(rf"(?:[^<]++|<(?!/(?i:{name})[{_WS}/>]))*+", re.S)
    for name in _RAW_TEXT - {"script"}
}
_CONTENT["script"] = re.compile(rf"(?:[^<]++|<(?!/{_SCRIPT}|!--)|<!--{_ESCAPED})*+", re.S)
# Their start tags merge into one element: their attributes add up.
_MERGED = frozenset({"html", "body"})
_TAG = (
    rf"<(?P<closing>/?)(?P<name>[A-Za-z][^{_WS}/>]*+)"
    rf"(?P<attributes>(?:{_ATTRIBUTE})*+)[{_WS}/]*+(?:>|\Z)"
)
# What the tokenizer reads at a '<' in the data state, but the tags Python must see.
_SKIPPED = (
    r"[^<]++"
    r"|<!--(?:-?>|.*?(?:--!?>|\Z))"  # comment, <!--> and <!---> included
    r"{cdata}"
    r"|<[!?][^>]*+>?"  # doctype, bogus comment, CDATA (in HTML elements)
    r"|</(?![A-Za-z])[^>]*+>?"  # bogus comment
    r"|<(?![A-Za-z!?/])"  # text
    # a tag of few attributes, not a raw text or merged start tag
    rf"|<(?:/|(?!(?i:{'|'.join(sorted(_RAW_TEXT | _MERGED))})(?:[{_WS}/>]|\Z)))"
    rf"[A-Za-z][^{_WS}/>]*+(?:{_ATTRIBUTE}){{0,{{few}}}}+[{_WS}/]*+(?:>|\Z)"
)


# Where the tree builder may read raw text elements as markup, and CDATA sections.
_FOREIGN = re.compile(r"<(?i:svg|math)[\t\n\f\r />]")
_CDATA = r"|<!\[CDATA\[.*?(?:\]\]>|\Z)"  # CDATA (in <svg> and <math>)


@functools.cache
def _next_tag(few: int, foreign: bool) -> re.Pattern[str]:
    """Skips markup to the next tag of more than ``few`` attributes, raw text or merged
    start tag, or the end (always matches: use ``match``, never ``search``)."""
    skipped = _SKIPPED.replace("{few}", str(few)).replace("{cdata}", _CDATA if foreign else "")
    return re.compile(f"(?:{skipped})*+(?:{_TAG}|\\Z)", re.S)


class _Trimmer:
    """Copies the document, cutting attributes after the first ``limit`` distinct ones."""

    def __init__(self, html: str, limit: int, *, foreign: bool) -> None:
        self.html = html
        self.limit = limit
        self.out: list[str] = []
        self.copied = 0  # html[:copied] is in out
        self.tags = 0  # tags trimmed
        self.dropped = 0  # attributes dropped
        self.merged: dict[str, set[str]] = {name: set() for name in _MERGED}
        self.next_tag = _next_tag(min(limit, 32), foreign)

    def scan(self, start: int, stop: int, *, raw: bool) -> None:
        """Trim the tags of ``html[start:stop]``; ``raw``: follow raw text elements."""
        html = self.html
        position = start
        while True:
            match = self.next_tag.match(html, position, stop)
            assert match is not None  # the pattern always matches (its tag part is optional)
            name = match.group("name")
            if name is None:
                return
            position = match.end()
            lowered = name.translate(_ASCII_LOWER)
            closing = bool(match.group("closing"))
            if not closing and lowered in _MERGED:
                self._trim(match, self.merged[lowered])
            elif len(match.group("attributes")) >= 2 * self.limit:  # shorter: too few attributes
                self._trim(match, set())
            if raw and not closing and lowered in _RAW_TEXT:
                content_end = _CONTENT[lowered].match(html, position, stop).end()  # type: ignore[union-attr]
                self.scan(position, content_end, raw=False)  # tags the tree may still see
                position = content_end

    def _trim(self, tag: re.Match[str], seen: set[str]) -> None:
        start, end = tag.span("attributes")
        for attribute in _ATTRIBUTE_RE.finditer(self.html, start, end):
            name = attribute.group(1).translate(_ASCII_LOWER)
            if name in seen:
                continue
            if len(seen) < self.limit:
                seen.add(name)
                continue
            cut = attribute.start()
            self.out.append(self.html[self.copied : cut])
            self.copied = end
            self.tags += 1
            self.dropped += len(_ATTRIBUTE_RE.findall(self.html, cut, end))
            return

    def result(self) -> str:
        if not self.out:
            return self.html
        self.out.append(self.html[self.copied :])
        return "".join(self.out)


def limit_attributes(html: str, limit: int) -> tuple[str, int, int]:
    """``html`` with at most ``limit`` distinct attributes per tag (per ``<html>``, and per
    ``<body>`` over all their start tags); the attributes after them are dropped.

    Returns the HTML (``html`` itself when no tag has more), the number of tags trimmed
    and of attributes dropped. Linear in ``len(html)``.
    """
    tags = dropped = 0
    for foreign in (False, True) if _FOREIGN.search(html) else (False,):
        trimmer = _Trimmer(html, limit, foreign=foreign)
        trimmer.scan(0, len(html), raw=not foreign)
        html = trimmer.result()
        tags += trimmer.tags
        dropped += trimmer.dropped
    return html, tags, dropped
