"""The parser a loader uses when none is given: per-file dispatch over the plugins."""

from __future__ import annotations

import os
from importlib.metadata import EntryPoint

from ragloom.core import plugins
from ragloom.core.parsers.base import DocumentParser
from ragloom.core.parsers.dispatch import DispatchingDocumentParser
from ragloom.core.parsers.text import TextDocumentParser

__all__ = [
    "default_document_parser",
]

# (environment choice, charset) -> (the discovery it was built from, the dispatcher).
# Reusing the dispatcher keeps its parsers (and the auto parser's worker process) across
# loader calls; a new discovery (plugins.refresh()) or environment builds a new one.
_built: dict[tuple[str, str | None], tuple[tuple[EntryPoint, ...], DocumentParser]] = {}


def default_document_parser(charset: str | None = None) -> DocumentParser:
    """The parser of loaders called without one.

    With no ``ragloom.document_parsers`` plugin installed (and no
    ``RAGLOOM_DOCUMENT_PARSER`` set), a :class:`TextDocumentParser`; otherwise a
    :class:`DispatchingDocumentParser` that picks the installed parser handling each file
    (see :mod:`ragloom.core.parsers.dispatch`), built once per discovery and reused.
    ``charset`` (e.g. declared by an HTTP server) is given to the plain-text parser.
    """
    group = plugins.DOCUMENT_PARSERS
    found = plugins.providers(group)
    chosen = os.environ.get(plugins.env_var(group), "")
    if not found and not chosen:
        return TextDocumentParser(charset)
    key = (chosen, charset)
    cached = _built.get(key)
    if cached is not None and cached[0] is found:
        return cached[1]
    parser = DispatchingDocumentParser.from_plugins(text_parser=TextDocumentParser(charset))
    if any(seen is not found for seen, _ in _built.values()):
        _built.clear()  # built from an older discovery
    _built[key] = (found, parser)
    return parser
