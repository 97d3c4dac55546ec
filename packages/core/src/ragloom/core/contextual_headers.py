"""Contextual headers: embed each segment together with its document title, section and summary.

A segment alone ("It is free up to 24 hours before arrival.") often lacks the words that
say what it is about. :class:`ContextualHeaderTransformer` prepends a short header (the
document's title, the Markdown headings above the segment, a summary of the document) so
that the embedding and the keyword index see them, and so does the chat model.

The segment's ``start``/``end`` metadata keep pointing at the original span of the
document: ``header_length`` records how many characters were prepended, and
:func:`original_text` gives back exactly ``document.text[start:end]`` for a citation.
:class:`DocumentSummaryTransformer` asks a chat model for the summary (one call per
document, stored in the document's ``summary`` metadata, which its segments inherit).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ragloom.core.chat.messages import UserMessage
from ragloom.core.chat.model import ChatModel
from ragloom.core.document import (
    ABSOLUTE_DIRECTORY_PATH,
    END,
    FILE_NAME,
    START,
    URL,
    Document,
    TextSegment,
)
from ragloom.core.errors import InvalidArgumentError, InvalidMetadataError
from ragloom.core.prompt_template import PromptTemplate
from ragloom.core.transformers import DocumentTransformer, TextSegmentTransformer

__all__ = [
    "TITLE",
    "SECTION",
    "SUMMARY",
    "HEADER_LENGTH",
    "original_text",
    "ContextualHeaderTransformer",
    "SUMMARY_PROMPT_TEMPLATE",
    "DocumentSummaryTransformer",
]

TITLE = "title"
SECTION = "section"
"""The Markdown headings above a segment, outermost first, joined by `` > ``."""
SUMMARY = "summary"
HEADER_LENGTH = "header_length"
"""How many characters of the segment's text are the prepended header."""

_SECTION_SEPARATOR = " > "
# An ATX heading ("## Install ##") and a code fence, at most three spaces indented.
_HEADING = re.compile(r" {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*")
_FENCE = re.compile(r" {0,3}(?:```|~~~)")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_MAX_HEADING_CHARS = 200


def original_text(segment: TextSegment) -> str:
    """The segment's text without the header a :class:`ContextualHeaderTransformer` added:
    the exact span ``start``..``end`` of its document."""
    length = segment.metadata.get(HEADER_LENGTH, 0)
    if type(length) is not int or not 0 <= length <= len(segment.text):
        raise InvalidMetadataError(
            f"metadata key {HEADER_LENGTH!r} holds {length!r}, not a length within the "
            f"segment's {len(segment.text)} characters"
        )
    return segment.text[length:]


@dataclass
class _Outline:
    """The Markdown headings of one document seen so far, scanned once in document order."""

    key: tuple[object, ...]
    last_start: int | None = None  # the start of the last segment seen
    scanned_to: int | None = None  # document offset up to which the text was scanned
    partial: str = ""  # an unfinished last line of the scanned text
    in_fence: bool = False
    events: list[tuple[int, int, str]] = field(default_factory=list)  # (offset, level, text)
    applied: int = 0  # events already folded into ``stack``
    stack: list[tuple[int, str]] = field(default_factory=list)  # (level, text)

    def scan(self, text: str, offset: int) -> None:
        """Record the headings of ``text``, which starts at document ``offset``."""
        lines = (self.partial + text).split("\n")
        position = offset - len(self.partial)
        for line in lines[:-1]:
            self._line(line, position)
            position += len(line) + 1
        self.partial = lines[-1]
        self.scanned_to = offset + len(text)

    def finish_line(self) -> None:
        """End the unfinished line (before a gap or an unknown position)."""
        if self.partial:
            self._line(self.partial, (self.scanned_to or 0) - len(self.partial))
        self.partial = ""

    def _line(self, line: str, position: int) -> None:
        if _FENCE.match(line):
            self.in_fence = not self.in_fence
        elif not self.in_fence and (match := _HEADING.fullmatch(line)):
            title = _CONTROL.sub("", match[2]).strip()[:_MAX_HEADING_CHARS]
            if title:
                self.events.append((position, len(match[1]), title))

    def section_before(self, offset: int | None) -> str:
        """The heading path in effect before document ``offset`` (every heading seen when
        ``offset`` is unknown)."""
        while self.applied < len(self.events) and (
            offset is None or self.events[self.applied][0] < offset
        ):
            _, level, title = self.events[self.applied]
            while self.stack and self.stack[-1][0] >= level:
                self.stack.pop()
            self.stack.append((level, title))
            self.applied += 1
        return _SECTION_SEPARATOR.join(title for _, title in self.stack)


def _document_key(segment: TextSegment) -> tuple[object, ...]:
    meta = segment.metadata
    return tuple(meta.get(key) for key in ("document_id", URL, ABSOLUTE_DIRECTORY_PATH, FILE_NAME))


def _offset(segment: TextSegment, key: str) -> int | None:
    value = segment.metadata.get(key)
    return value if type(value) is int else None


class ContextualHeaderTransformer(TextSegmentTransformer):
    """Prepends the document title, the section headings and the summary to each segment.

    The title is the first of ``title_keys`` (``title``, ``file_name``, ``url``) present in
    the segment's metadata; the summary is its ``summary_key`` (``summary``) metadata, set
    by :class:`DocumentSummaryTransformer` (``None`` leaves it out). With ``headings``,
    :meth:`transform_all` follows the Markdown ATX headings (``#`` to ``######``, not inside
    code fences) through a document's segments, in order, and records the path above each
    segment as its ``section`` metadata (unless one is already there); :meth:`transform`
    alone, without the neighbours, uses only an existing ``section``. The title is left out
    when the section starts with it. The header, one part a line and a blank line after, is
    cut to ``max_header_chars`` (500); its length goes into ``header_length`` (see
    :func:`original_text`). A segment with no header part is returned unchanged; a segment
    that already has a header gets a new one in its place.
    """

    def __init__(
        self,
        *,
        title_keys: Sequence[str] = (TITLE, FILE_NAME, URL),
        headings: bool = True,
        summary_key: str | None = SUMMARY,
        max_header_chars: int = 500,
    ) -> None:
        if type(max_header_chars) is not int or max_header_chars < 1:
            raise InvalidArgumentError(
                f"max_header_chars must be a positive int, got {max_header_chars!r}"
            )
        if isinstance(title_keys, str):
            raise InvalidArgumentError(
                f"title_keys must be a sequence of metadata keys, got the string {title_keys!r}"
            )
        self.title_keys = tuple(title_keys)
        self.headings = headings
        self.summary_key = summary_key
        self.max_header_chars = max_header_chars

    def transform(self, segment: TextSegment) -> TextSegment:
        meta = segment.metadata
        title = next((str(meta[k]) for k in self.title_keys if meta.get(k) not in (None, "")), "")
        parts = [title, str(meta.get(SECTION, "")) if self.headings else ""]
        if self.summary_key is not None:
            parts.append(str(meta.get(self.summary_key, "")))
        lines = [_CONTROL.sub("", part).strip() for part in parts]
        if lines[1] == lines[0] or lines[1].startswith(lines[0] + _SECTION_SEPARATOR):
            lines[0] = ""  # the title is the outermost heading already
        header = "\n".join(dict.fromkeys(line for line in lines if line))
        text = original_text(segment)
        if not header:
            if HEADER_LENGTH not in meta:
                return segment
            metadata = meta.copy()
            del metadata[HEADER_LENGTH]
            return TextSegment(text, metadata)
        header = header[: self.max_header_chars].rstrip() + "\n\n"
        metadata = meta.copy()
        metadata[HEADER_LENGTH] = len(header)
        return TextSegment(header + text, metadata)

    def transform_all(self, segments: Iterable[TextSegment]) -> list[TextSegment]:
        """Transform segments given in document order (as a splitter returns them), with
        the Markdown headings followed from one segment to the next of the same document."""
        if not self.headings:
            return [self.transform(segment) for segment in segments]
        out: list[TextSegment] = []
        outline: _Outline | None = None
        for segment in segments:
            key, start = _document_key(segment), _offset(segment, START)
            if outline is None or outline.key != key or _before(start, outline.last_start):
                outline = _Outline(key)  # another document, or the same one again
            outline.last_start = start
            if start is not None and outline.scanned_to is not None and start >= outline.scanned_to:
                outline.finish_line()  # no overlap: the last line ended where this one starts
            if SECTION not in segment.metadata:
                section = outline.section_before(start)
                if section:
                    metadata = segment.metadata.copy()
                    metadata[SECTION] = section
                    segment = TextSegment(segment.text, metadata)
            _scan(outline, segment, start)
            out.append(self.transform(segment))
        return out


def _before(start: int | None, last_start: int | None) -> bool:
    return start is not None and last_start is not None and start < last_start


def _scan(outline: _Outline, segment: TextSegment, start: int | None) -> None:
    """Scan the part of the segment's text the outline has not seen yet."""
    text = original_text(segment)
    end = _offset(segment, END)
    if start is None or end != start + len(text):  # position unknown: scan it all
        outline.finish_line()
        outline.scan(text, outline.scanned_to or 0)
        outline.finish_line()
        return
    if outline.scanned_to is None or start > outline.scanned_to:  # a gap between segments
        outline.finish_line()
        outline.scan(text, start)
    elif end > outline.scanned_to:  # overlapping: only the new part
        outline.scan(text[outline.scanned_to - start :], outline.scanned_to)


SUMMARY_PROMPT_TEMPLATE = PromptTemplate(
    "Summarize the document below in one or two sentences: what it is and what it is "
    "about. Provide only the summary and nothing else!\n"
    "\n"
    "Document:\n"
    "{document}"
)


class DocumentSummaryTransformer(DocumentTransformer):
    """Asks the chat model for a short summary of each document and stores it as the
    ``summary`` metadata (which :class:`ContextualHeaderTransformer` puts in each header).

    The model sees the first ``max_input_chars`` (20000) characters; its answer is kept
    to ``max_chars`` (500) without control characters. A document that has a summary
    already is returned as it is; a blank answer leaves the document without one.
    ``prompt_template`` must contain ``{document}``. Returns a copy (the input is kept).
    """

    def __init__(
        self,
        chat_model: ChatModel,
        *,
        prompt_template: str | PromptTemplate | None = None,
        max_chars: int = 500,
        max_input_chars: int = 20_000,
    ) -> None:
        for name, value in (("max_chars", max_chars), ("max_input_chars", max_input_chars)):
            if type(value) is not int or value < 1:
                raise InvalidArgumentError(f"{name} must be a positive int, got {value!r}")
        self.chat_model = chat_model
        self.max_chars = max_chars
        self.max_input_chars = max_input_chars
        self.prompt_template = PromptTemplate.of(
            prompt_template or SUMMARY_PROMPT_TEMPLATE
        ).require({"document"}, used_by="DocumentSummaryTransformer")

    def transform(self, document: Document) -> Document:
        if document.metadata.get(SUMMARY) not in (None, ""):
            return document
        prompt = self.prompt_template.render(document=document.text[: self.max_input_chars])
        answer = self.chat_model.chat([UserMessage(prompt)]).text
        summary = " ".join(_CONTROL.sub("", answer).split())[: self.max_chars].strip()
        metadata = document.metadata.copy()
        if summary:
            metadata[SUMMARY] = summary
        return Document(document.text, metadata)
