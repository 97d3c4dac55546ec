"""The parser a loader uses when none is given: per-file dispatch over the plugins."""

from __future__ import annotations

import os

from ragloom.core import plugins
from ragloom.core.parsers.base import DocumentParser
from ragloom.core.parsers.dispatch import DispatchingDocumentParser
from ragloom.core.parsers.text import TextDocumentParser


def default_document_parser(charset: str | None = None) -> DocumentParser:
    """The parser of loaders called without one.

    With no ``ragloom.document_parsers`` plugin installed (and no
    ``RAGLOOM_DOCUMENT_PARSER`` set), a :class:`TextDocumentParser`; otherwise a
    :class:`DispatchingDocumentParser` that picks the installed parser handling each file
    (see :mod:`ragloom.core.parsers.dispatch`). ``charset`` (e.g. declared by an HTTP
    server) is given to the plain-text parser.
    """
    text = TextDocumentParser(charset)
    group = plugins.DOCUMENT_PARSERS
    if not plugins.providers(group) and not os.environ.get(plugins.env_var(group)):
        return text
    return DispatchingDocumentParser.from_plugins(text_parser=text)
