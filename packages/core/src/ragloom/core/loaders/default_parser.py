"""The parser a loader uses when none is given: the discovered plugin, else plain text."""

from __future__ import annotations

from typing import cast

from ragloom.core import plugins
from ragloom.core.parsers.base import DocumentParser
from ragloom.core.parsers.text import TextDocumentParser


def default_document_parser(charset: str | None = None) -> DocumentParser:
    """The ``ragloom.document_parsers`` default, else a :class:`TextDocumentParser`.

    ``charset`` (e.g. declared by an HTTP server) is given to the plain-text fallback.
    """
    return cast(
        DocumentParser,
        plugins.load_default(plugins.DOCUMENT_PARSERS, lambda: TextDocumentParser(charset)),
    )
