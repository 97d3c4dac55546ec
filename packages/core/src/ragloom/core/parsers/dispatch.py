"""DispatchingDocumentParser: picks, per file, the installed parser that handles it.

A parser declares what it handles with optional class attributes, read after its entry
point is loaded (the parser is only built when a file needs it):

- ``extensions``: file name extensions, e.g. ``(".pdf",)``;
- ``media_types``: media types recognised from the content, e.g. ``("application/pdf",)``;
- ``catch_all = True``: it parses almost anything (Tika-style) and is the last resort.

A parser declaring none of them claims every file (a plugin written before dispatch
existed keeps working as "the" default). For one file the choice is, in order:

1. a parser named in ``RAGLOOM_DOCUMENT_PARSER`` (or ``prefer=``) that claims the file;
2. a specific parser whose media type matches the content's signature (magic bytes), when
   the extension's parser does not handle that type: a PDF named ``.docx`` goes to the
   PDF parser;
3. the specific parser claiming the extension, else the one claiming the sniffed type;
4. a parser that declares nothing (claims everything);
5. the plain-text parser, for text extensions and for unknown extensions whose content
   looks like text;
6. the catch-all parser;
7. otherwise :class:`UnsupportedDocumentError` naming the file and what to install.

Two discovered plugins claiming the same extension or media type (or two that claim
everything, or two catch-alls) are ambiguous: :meth:`DispatchingDocumentParser.from_plugins`
raises :class:`PluginError` naming both distributions and how to choose, exactly as
:func:`ragloom.core.plugins.load_default` does. Parsers passed explicitly are never
ambiguous: the first one given wins.
"""

from __future__ import annotations

import io
import os
import threading
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint
from typing import Any, BinaryIO, cast
from urllib.parse import urlsplit

from ragloom.core import plugins
from ragloom.core.document import Document
from ragloom.core.errors import PluginError, UnsupportedDocumentError
from ragloom.core.parsers.base import DocumentParser, read_all, source_name
from ragloom.core.parsers.text import TextDocumentParser

__all__ = [
    "TEXT_EXTENSIONS",
    "DispatchingDocumentParser",
    "declared_claims",
    "sniff_media_type",
]

#: Extensions the plain-text parser handles when no installed parser claims them.
# fmt: off
TEXT_EXTENSIONS: frozenset[str] = frozenset({
    ".txt", ".text", ".md", ".markdown", ".mdx", ".rst", ".adoc", ".asciidoc", ".org", ".tex",
    ".csv", ".tsv", ".json", ".jsonl", ".ndjson", ".yaml", ".yml", ".toml", ".ini", ".cfg",
    ".conf", ".properties", ".env", ".log", ".xml", ".svg", ".html", ".htm", ".xhtml", ".css",
    ".scss", ".js", ".mjs", ".ts", ".tsx", ".jsx", ".py", ".pyi", ".java", ".kt", ".scala",
    ".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".go", ".rs", ".rb", ".php", ".pl", ".swift",
    ".sh", ".bash", ".zsh", ".ps1", ".bat", ".sql", ".r", ".lua", ".dart", ".vue", ".srt",
    ".vtt", ".bib", ".diff", ".patch"
})
# fmt: on

OOXML_WORD = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
OOXML_EXCEL = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
OOXML_POWERPOINT = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
OLE_STORAGE = "application/x-ole-storage"

# Types recognised by magic bytes: reliable enough to override a file's extension.
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", OLE_STORAGE),
    (b"{\\rtf", "application/rtf"),
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"\x1f\x8b", "application/gzip"),
    (b"7z\xbc\xaf\x27\x1c", "application/x-7z-compressed"),
)
_ZIP_MEMBERS: tuple[tuple[str, str], ...] = (
    ("word/document.xml", OOXML_WORD),
    ("xl/workbook.xml", OOXML_EXCEL),
    ("ppt/presentation.xml", OOXML_POWERPOINT),
)
_TEXTUAL = frozenset({"text/plain", "text/html", "application/xml"})
_CONTROL_BYTES = bytes(range(0, 9)) + bytes(range(14, 27)) + bytes(range(28, 32))

# Tiers of claims, tried in this order after a preferred parser.
_SPECIFIC, _GENERIC, _CATCH_ALL = 0, 1, 2


def sniff_media_type(data: bytes) -> str:
    """The media type of ``data`` judged from its first bytes (and a zip's member names).

    Recognises PDF, Office Open XML (Word, Excel, PowerPoint), OpenDocument and other
    zips, OLE2 containers (legacy Office, encrypted OOXML), RTF, common images and
    archives, HTML and XML; anything else is ``text/plain`` when it looks like text (or is
    empty), else ``application/octet-stream``.
    """
    head = data[:1024]
    if b"%PDF-" in head:
        return "application/pdf"
    if head.startswith(b"PK\x03\x04"):
        return _sniff_zip(data)
    for magic, media_type in _SIGNATURES:
        if head.startswith(magic):
            return media_type
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if text.startswith((b"<!doctype html", b"<html")) or (
        text.startswith(b"<") and (b"<head" in text or b"<body" in text)
    ):
        return "text/html"
    if text.startswith(b"<?xml"):
        return "application/xml"
    sample = data[:8192]
    if not sample:
        return "text/plain"  # empty: the text parser reports it as an empty document
    controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    utf16 = len(sample) >= 4 and sample.count(0) * 3 >= len(sample)
    if controls * 100 > len(sample) and not utf16:
        return "application/octet-stream"
    return "text/plain"


def _sniff_zip(data: bytes) -> str:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
            for member, media_type in _ZIP_MEMBERS:
                if member in names:
                    return media_type
            if "mimetype" in names:
                declared = archive.read("mimetype")[:100].decode("ascii", "replace").strip()
                if declared:
                    return declared
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        pass
    return "application/zip"


def declared_claims(
    parser: object, origin: str = ""
) -> tuple[frozenset[str], frozenset[str], bool]:
    """The ``(extensions, media_types, catch_all)`` a parser class, factory or instance declares.

    Extensions are lower-cased with a leading dot; a malformed declaration raises
    :class:`PluginError` naming ``origin``.
    """
    where = origin or getattr(parser, "__qualname__", type(parser).__name__)

    def names(attribute: str) -> frozenset[str]:
        value = getattr(parser, attribute, ())
        if isinstance(value, str) or not isinstance(value, Iterable):
            raise PluginError(
                f"parser {where} declares {attribute} = {value!r}; "
                "expected a tuple of strings, e.g. ('.pdf',)"
            )
        items = list(value)
        if not all(isinstance(item, str) and item.strip(".") for item in items):
            raise PluginError(f"parser {where} declares invalid {attribute}: {items!r}")
        return frozenset(item.lower() for item in items)

    extensions = frozenset(e if e.startswith(".") else "." + e for e in names("extensions"))
    catch_all = getattr(parser, "catch_all", False)
    if not isinstance(catch_all, bool):
        raise PluginError(f"parser {where} declares catch_all = {catch_all!r}; expected a bool")
    return extensions, names("media_types"), catch_all


@dataclass(eq=False)
class _Candidate:
    """One parser the dispatcher can choose, built on first use."""

    name: str
    origin: str
    factory: Callable[[], Any]
    extensions: frozenset[str]
    media_types: frozenset[str]
    tier: int
    entry_point: EntryPoint | None = None
    _instance: DocumentParser | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def claims(self, extension: str, media_type: str | None) -> bool:
        if self.tier != _SPECIFIC:
            return True
        return extension in self.extensions or (
            media_type is not None and media_type in self.media_types
        )

    def get(self) -> DocumentParser:
        if self._instance is None:
            with self._lock:
                if self._instance is None:
                    try:
                        self._instance = cast(DocumentParser, self.factory())
                    except Exception as exc:
                        raise PluginError(
                            f"plugin {self.origin} in group {plugins.DOCUMENT_PARSERS!r} "
                            f"failed to load: {exc}"
                        ) from exc
        return self._instance


def _constant(parser: DocumentParser) -> Callable[[], DocumentParser]:
    return lambda: parser


def _tier(extensions: frozenset[str], media_types: frozenset[str], catch_all: bool) -> int:
    if catch_all:
        return _CATCH_ALL
    return _SPECIFIC if extensions or media_types else _GENERIC


def _describe(ep: EntryPoint) -> str:
    dist = ep.dist.name if ep.dist is not None else "<unknown distribution>"
    return f"'{ep.name}' from {dist} ({ep.value})"


class DispatchingDocumentParser:
    """A :class:`DocumentParser` that hands each file to the parser that handles it.

    ``parsers`` are parser instances (declaring ``extensions`` / ``media_types`` /
    ``catch_all`` as described in the module docstring); where several claim a file, the
    first given wins. ``text_parser`` (default :class:`TextDocumentParser`) parses text
    files no other parser claims. :meth:`from_plugins` builds one from the installed
    ``ragloom.document_parsers`` entry points; loaders called without a parser use it.

    The choice uses ``source`` (a file name, path or URL: its extension) and the content's
    first bytes; :meth:`parser_for` tells which parser a file would get.
    """

    def __init__(
        self,
        parsers: Iterable[DocumentParser] = (),
        *,
        text_parser: DocumentParser | None = None,
    ) -> None:
        candidates = []
        for parser in parsers:
            extensions, media_types, catch_all = declared_claims(parser)
            candidates.append(
                _Candidate(
                    name=type(parser).__name__,
                    origin=type(parser).__qualname__,
                    factory=_constant(parser),
                    extensions=extensions,
                    media_types=media_types,
                    tier=_tier(extensions, media_types, catch_all),
                    _instance=parser,
                )
            )
        self._init(candidates, text_parser, preferred=())

    def _init(
        self,
        candidates: Sequence[_Candidate],
        text_parser: DocumentParser | None,
        preferred: Sequence[_Candidate],
    ) -> None:
        self._candidates = tuple(candidates)
        self._preferred = tuple(preferred)
        self.text_parser: DocumentParser = text_parser or TextDocumentParser()
        # lookup tables, the first candidate winning (explicit parsers: the order given)
        self._by_extension: dict[str, _Candidate] = {}
        self._by_media_type: dict[str, _Candidate] = {}
        for c in self._candidates:
            if c.tier == _SPECIFIC:
                for extension in c.extensions:
                    self._by_extension.setdefault(extension, c)
                for media_type in c.media_types:
                    self._by_media_type.setdefault(media_type, c)
        self._generic = next((c for c in self._candidates if c.tier == _GENERIC), None)
        self._catch_all = next((c for c in self._candidates if c.tier == _CATCH_ALL), None)

    @classmethod
    def from_plugins(
        cls,
        *,
        text_parser: DocumentParser | None = None,
        prefer: str | Sequence[str] | None = None,
        entry_points: Iterable[EntryPoint] | None = None,
    ) -> DispatchingDocumentParser:
        """A dispatcher over the installed ``ragloom.document_parsers`` plugins.

        ``prefer`` names plugins that win every file they claim (a comma-separated string
        or a sequence); by default it is read from ``RAGLOOM_DOCUMENT_PARSER``. Raises
        :class:`PluginError` for an unknown preferred name, a plugin that cannot be
        imported or declares nonsense, and two plugins claiming the same files while
        neither is preferred. Plugins are built on first use, not here. ``entry_points``
        replaces the installed ones (e.g. those of one distribution, for a test).
        """
        group = plugins.DOCUMENT_PARSERS
        variable = plugins.env_var(group)
        if prefer is None:
            prefer = os.environ.get(variable, "")
        wanted = [n.strip() for n in prefer.split(",")] if isinstance(prefer, str) else prefer
        wanted = [name for name in wanted if name]
        if entry_points is None:
            found = plugins.providers(group)
        else:
            found = tuple(sorted(entry_points, key=lambda ep: (ep.name, ep.value)))
        installed = ", ".join(_describe(ep) for ep in found) or "none"
        for name in wanted:
            matching = [ep for ep in found if ep.name == name]
            if not matching:
                raise PluginError(
                    f"no plugin named {name!r} in group {group!r}; installed: {installed}"
                )
            if len(matching) > 1:
                raise PluginError(
                    f"plugin name {name!r} in group {group!r} is provided twice: "
                    + " and ".join(_describe(ep) for ep in matching)
                    + "; uninstall one of the distributions"
                )
        candidates = [cls._candidate(ep) for ep in found]
        preferred = [c for name in wanted for c in candidates if c.name == name]
        cls._check_ambiguity(candidates, preferred, variable)
        dispatcher = cls.__new__(cls)
        dispatcher._init(candidates, text_parser, preferred)
        return dispatcher

    @staticmethod
    def _candidate(ep: EntryPoint) -> _Candidate:
        origin = _describe(ep)
        try:
            factory = ep.load()
        except Exception as exc:
            raise PluginError(
                f"plugin {origin} in group {plugins.DOCUMENT_PARSERS!r} failed to load: {exc}"
            ) from exc
        extensions, media_types, catch_all = declared_claims(factory, origin)
        return _Candidate(
            name=ep.name,
            origin=origin,
            factory=factory,
            extensions=extensions,
            media_types=media_types,
            tier=_tier(extensions, media_types, catch_all),
            entry_point=ep,
        )

    @staticmethod
    def _check_ambiguity(
        candidates: Sequence[_Candidate], preferred: Sequence[_Candidate], variable: str
    ) -> None:
        claims: dict[tuple[int, str], list[_Candidate]] = {}
        for c in candidates:
            keys = sorted(c.extensions | c.media_types) if c.tier == _SPECIFIC else ["*"]
            for key in keys:
                claims.setdefault((c.tier, key), []).append(c)
        what = {_GENERIC: "every file", _CATCH_ALL: "every file as the last resort"}
        conflicts: dict[tuple[str, ...], list[str]] = {}
        names: set[str] = set()
        for (tier, key), owners in claims.items():
            if len(owners) > 1 and not any(o in preferred for o in owners):
                label = what.get(tier, repr(key))
                conflicts.setdefault(tuple(o.origin for o in owners), []).append(label)
                names.update(o.name for o in owners)
        if not conflicts:
            return
        parts = [
            f"{', '.join(labels)} claimed by {' and '.join(origins)}"
            for origins, labels in conflicts.items()
        ]
        raise PluginError(
            f"several plugins in {plugins.DOCUMENT_PARSERS!r} parse the same files: "
            + "; ".join(parts)
            + f"; choose by passing a parser explicitly or by setting {variable}=<name> "
            f"(one of: {', '.join(sorted(names))}; several names may be separated by commas)"
        )

    def parser_for(self, source: str | None, data: bytes = b"") -> DocumentParser:
        """The parser this dispatcher uses for a file named ``source`` holding ``data``."""
        extension = _extension(source)
        sniffed: str | None = sniff_media_type(data) if data or not extension else None
        for candidate in self._preferred:
            if candidate.claims(extension, sniffed):
                return candidate.get()
        by_extension = self._by_extension.get(extension)
        if sniffed is not None and sniffed not in _TEXTUAL:
            by_content = self._by_media_type.get(sniffed)
            if by_content is not None and (
                by_extension is None or sniffed not in by_extension.media_types
            ):
                return by_content.get()
        if by_extension is not None:
            return by_extension.get()
        if sniffed is not None and (sniffed != "text/html" or extension not in TEXT_EXTENSIONS):
            by_content = self._by_media_type.get(sniffed)
            if by_content is not None:
                return by_content.get()
        if self._generic is not None:
            return self._generic.get()
        if extension in TEXT_EXTENSIONS or (
            extension not in _NOT_PLAIN_TEXT and sniffed in _TEXTUAL
        ):
            return self.text_parser
        if self._catch_all is not None:
            return self._catch_all.get()
        kind = f"{extension} files" if extension else "files without an extension"
        raise UnsupportedDocumentError(
            f"{source or '<bytes>'}: no installed parser handles {kind} "
            f"(content looks like {sniffed or 'unknown'}); install ragloom-parser-auto, "
            "which parses almost any format, or a parser for this type, or pass a parser"
        )

    def parse(self, data: bytes | BinaryIO, *, source: str | None = None) -> Document:
        """Parse ``data`` with the parser chosen for ``source`` and its content."""
        raw = read_all(data)
        name = source_name(data, source)
        return self.parser_for(name if name != "<bytes>" else None, raw).parse(raw, source=name)

    def __repr__(self) -> str:
        names = ", ".join(c.name for c in self._candidates)
        return f"DispatchingDocumentParser([{names}], text_parser={self.text_parser!r})"


# Extensions whose content is not to be read as plain text even when it looks textual.
# fmt: off
_NOT_PLAIN_TEXT = frozenset({
    ".pdf", ".doc", ".docx", ".xls", ".xlsx", ".xlsm", ".ppt", ".pptx", ".odt", ".ods", ".odp",
    ".rtf", ".epub", ".zip", ".gz", ".7z", ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".tif",
    ".tiff", ".webp", ".mp3", ".mp4", ".wav", ".msg", ".eml", ".mbox"
})
# fmt: on


def _extension(source: str | None) -> str:
    if not source:
        return ""
    path = urlsplit(source).path if "://" in source else source
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    extension = os.path.splitext(name)[1].lower()
    return "" if extension == "." else extension
