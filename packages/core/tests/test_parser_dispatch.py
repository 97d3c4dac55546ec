"""Per-file parser dispatch, with real (tiny) plugin distributions written to a directory.

Tests that must not see the parser plugins installed in the environment (CI installs
every package) pass the entry points of their own directory to ``from_plugins``; tests
through the loaders use claims no real parser makes (``.upper``, ``.lower``).
"""

from __future__ import annotations

import io
import sys
import zipfile
from collections.abc import Iterator
from importlib.metadata import EntryPoint, distributions
from pathlib import Path

import pytest

from ragloom.core import (
    Document,
    EmptyDocumentError,
    FileSystemDocumentLoader,
    PackageResourceDocumentLoader,
    PluginError,
    TextDocumentParser,
    UnsupportedDocumentError,
    plugins,
)
from ragloom.core.loaders.default_parser import default_document_parser
from ragloom.core.parsers.dispatch import (
    OOXML_EXCEL,
    OOXML_WORD,
    DispatchingDocumentParser,
    declared_claims,
    sniff_media_type,
)
from ragloom.testkit import DocumentParserSuite, ParserSample

GROUP = "ragloom.document_parsers"

MODULE = """
from ragloom.core import Document

class Parser:
    extensions = {extensions}
    media_types = {media_types}
    catch_all = {catch_all}
    built = 0

    def __init__(self):
        type(self).built += 1

    def parse(self, data, *, source=None):
        raw = data if isinstance(data, bytes) else data.read()
        return Document("parsed by {name}: " + raw[:20].decode("latin-1"), {{"parser": "{name}"}})
"""


def install(
    site: Path,
    dist: str,
    *,
    name: str | None = None,
    extensions: tuple[str, ...] = (),
    media_types: tuple[str, ...] = (),
    catch_all: bool = False,
    value: str = "Parser",
) -> None:
    """Write an installed distribution whose entry point ``name`` declares these claims."""
    module = dist.replace("-", "_")
    (site / f"{module}.py").write_text(
        MODULE.format(
            name=name or dist,
            extensions=extensions,
            media_types=media_types,
            catch_all=catch_all,
        )
    )
    info = site / f"{module}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{name or dist} = {module}:{value}\n")


def entry_points_of(site: Path) -> list[EntryPoint]:
    return [
        ep for d in distributions(path=[str(site)]) for ep in d.entry_points if ep.group == GROUP
    ]


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "site"
    path.mkdir()
    monkeypatch.syspath_prepend(str(path))
    monkeypatch.delenv("RAGLOOM_DOCUMENT_PARSER", raising=False)
    plugins.refresh()
    yield path
    plugins.refresh()
    for module in [m for m in sys.modules if m.startswith("fake_")]:
        del sys.modules[module]


def dispatcher(site: Path, **kwargs: object) -> DispatchingDocumentParser:
    return DispatchingDocumentParser.from_plugins(entry_points=entry_points_of(site), **kwargs)  # type: ignore[arg-type]


def parsed_by(document: Document) -> str:
    return str(document.metadata.get("parser", "text"))


def ooxml(member: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr(member, "<x/>")
    return buffer.getvalue()


PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n"


# -- sniffing ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (PDF, "application/pdf"),
        (b"junk before\n" + PDF, "application/pdf"),
        (ooxml("word/document.xml"), OOXML_WORD),
        (ooxml("xl/workbook.xml"), OOXML_EXCEL),
        (ooxml("other.txt"), "application/zip"),
        (b"PK\x03\x04truncated zip", "application/zip"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(100), "application/x-ole-storage"),
        (b"\x89PNG\r\n\x1a\n" + bytes(20), "image/png"),
        (b"  <!DOCTYPE html><html><body>x</body></html>", "text/html"),
        (b"\xef\xbb\xbf<html lang=en>", "text/html"),
        (b"<div><head></head></div>", "text/html"),
        (b'<?xml version="1.0"?><a/>', "application/xml"),
        ("plain text, ünïcode 世界 🌍".encode(), "text/plain"),
        ("utf-16 text".encode("utf-16-le"), "text/plain"),
        (b"", "text/plain"),
        (bytes(range(256)) * 4, "application/octet-stream"),
    ],
)
def test_sniff_media_type(data: bytes, expected: str) -> None:
    assert sniff_media_type(data) == expected


def test_sniff_reads_the_mimetype_of_opendocument() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        archive.writestr("content.xml", "<x/>")
    assert sniff_media_type(buffer.getvalue()) == "application/vnd.oasis.opendocument.text"


# -- declarations -----------------------------------------------------------------------


def test_declared_claims_are_normalised() -> None:
    class P:
        extensions = ("PDF", ".Txt2")
        media_types = ("Application/PDF",)

    assert declared_claims(P) == (
        frozenset({".pdf", ".txt2"}),
        frozenset({"application/pdf"}),
        False,
    )
    assert declared_claims(TextDocumentParser()) == (frozenset(), frozenset(), False)


@pytest.mark.parametrize(
    ("attribute", "value", "message"),
    [
        ("extensions", ".pdf", "expected a tuple"),
        ("extensions", (".pdf", 3), "invalid extensions"),
        ("media_types", ("",), "invalid media_types"),
        ("catch_all", "yes", "expected a bool"),
    ],
)
def test_malformed_declarations_are_plugin_errors(
    attribute: str, value: object, message: str
) -> None:
    parser = type("Bad", (), {attribute: value})
    with pytest.raises(PluginError, match=f"my-origin.*{message}"):
        declared_claims(parser, "my-origin")


# -- choosing among plugins -------------------------------------------------------------


def test_extension_then_content_then_text_then_catch_all(site: Path) -> None:
    install(site, "fake-pdf", extensions=(".pdf",), media_types=("application/pdf",))
    install(site, "fake-word", extensions=(".docx",), media_types=(OOXML_WORD,))
    install(site, "fake-html", extensions=(".html", ".htm"), media_types=("text/html",))
    install(site, "fake-auto", catch_all=True)
    d = dispatcher(site)
    assert parsed_by(d.parse(PDF, source="a.pdf")) == "fake-pdf"
    assert parsed_by(d.parse(PDF, source="/dir/A.PDF")) == "fake-pdf"
    assert parsed_by(d.parse(PDF, source="https://host/x.pdf?download=1")) == "fake-pdf"
    assert parsed_by(d.parse(ooxml("word/document.xml"), source="b.docx")) == "fake-word"
    # wrong or missing extension: the content's signature decides
    assert parsed_by(d.parse(PDF, source="report.docx")) == "fake-pdf"
    assert parsed_by(d.parse(PDF, source="report.txt")) == "fake-pdf"
    assert parsed_by(d.parse(PDF, source="no-extension")) == "fake-pdf"
    assert parsed_by(d.parse(PDF)) == "fake-pdf"
    assert parsed_by(d.parse(io.BytesIO(ooxml("word/document.xml")))) == "fake-word"
    # HTML content is HTML unless its extension says plain text
    page = b"<!doctype html><title>t</title><p>hi"
    assert parsed_by(d.parse(page, source="page.htm")) == "fake-html"
    assert parsed_by(d.parse(page, source="https://host/docs/")) == "fake-html"
    assert parsed_by(d.parse(page, source="notes.txt")) == "text"
    # text extensions and text-looking unknown files go to the text parser
    assert d.parse(b"hello", source="a.txt").text == "hello"
    assert d.parse(b"hello", source="Makefile").text == "hello"
    assert d.parse(b"key: 1", source="config.unknownext").text == "key: 1"
    # the catch-all takes the rest
    assert parsed_by(d.parse(bytes(range(256)) * 4, source="blob.bin")) == "fake-auto"
    assert parsed_by(d.parse(ooxml("xl/workbook.xml"), source="sheet.xlsx")) == "fake-auto"
    assert parsed_by(d.parse(b"text-looking", source="legacy.doc")) == "fake-auto"


def test_parsers_are_built_once_on_first_use(site: Path) -> None:
    install(site, "fake-pdf", extensions=(".pdf",))
    install(site, "fake-auto", catch_all=True)
    d = dispatcher(site)
    module = sys.modules["fake_pdf"]
    assert module.Parser.built == 0
    d.parse(PDF, source="a.pdf")
    d.parse(PDF, source="b.pdf")
    assert module.Parser.built == 1
    assert sys.modules["fake_auto"].Parser.built == 0
    assert isinstance(d.parser_for("x.pdf"), module.Parser)
    assert d.parser_for("x.txt") is d.text_parser


def test_without_catch_all_unhandled_binary_is_unsupported(site: Path) -> None:
    install(site, "fake-pdf", extensions=(".pdf",))
    d = dispatcher(site)
    with pytest.raises(UnsupportedDocumentError, match=r"photo\.png.*\.png.*ragloom-parser-auto"):
        d.parse(b"\x89PNG\r\n\x1a\n" + bytes(64), source="photo.png")
    with pytest.raises(UnsupportedDocumentError, match=r"old\.doc.*application/x-ole-storage"):
        d.parse(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(64), source="old.doc")
    with pytest.raises(UnsupportedDocumentError, match="files without an extension"):
        d.parse(bytes(range(256)) * 4, source="blob")
    with pytest.raises(EmptyDocumentError, match="empty.txt"):
        d.parse(b"", source="empty.txt")
    with pytest.raises(EmptyDocumentError, match="empty-no-extension"):
        d.parse(b"", source="empty-no-extension")


def test_a_plugin_declaring_nothing_claims_everything_before_text(site: Path) -> None:
    install(site, "fake-pdf", extensions=(".pdf",))
    install(site, "fake-generic")
    install(site, "fake-auto", catch_all=True)
    d = dispatcher(site)
    assert parsed_by(d.parse(PDF, source="a.pdf")) == "fake-pdf"
    assert parsed_by(d.parse(b"hello", source="a.txt")) == "fake-generic"
    assert parsed_by(d.parse(bytes(range(256)), source="a.bin")) == "fake-generic"


def test_two_plugins_claiming_an_extension_are_ambiguous(site: Path) -> None:
    install(site, "fake-pdf-one", extensions=(".pdf",), media_types=("application/pdf",))
    install(site, "fake-pdf-two", extensions=(".pdf", ".pdfa"))
    install(site, "fake-word", extensions=(".docx",))
    with pytest.raises(PluginError) as err:
        dispatcher(site)
    message = str(err.value)
    assert "'.pdf' claimed by 'fake-pdf-one' from fake-pdf-one" in message
    assert "'fake-pdf-two' from fake-pdf-two" in message
    assert "RAGLOOM_DOCUMENT_PARSER=<name>" in message
    assert "one of: fake-pdf-one, fake-pdf-two;" in message
    assert "fake-word" not in message


def test_preferred_plugin_resolves_the_ambiguity(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(site, "fake-pdf-one", extensions=(".pdf",))
    install(site, "fake-pdf-two", extensions=(".pdf",))
    install(site, "fake-word", extensions=(".docx",))
    d = dispatcher(site, prefer="fake-pdf-two")
    assert parsed_by(d.parse(PDF, source="a.pdf")) == "fake-pdf-two"
    assert parsed_by(d.parse(b"x", source="a.docx")) == "fake-word"  # others still dispatch
    monkeypatch.setenv("RAGLOOM_DOCUMENT_PARSER", " fake-pdf-one , fake-word")
    d = dispatcher(site)
    assert parsed_by(d.parse(PDF, source="a.pdf")) == "fake-pdf-one"
    assert d.parse(b"plain", source="a.txt").text == "plain"


def test_preferring_a_catch_all_makes_it_parse_everything(site: Path) -> None:
    install(site, "fake-pdf", extensions=(".pdf",))
    install(site, "fake-auto", catch_all=True)
    d = dispatcher(site, prefer=["fake-auto"])
    assert parsed_by(d.parse(PDF, source="a.pdf")) == "fake-auto"
    assert parsed_by(d.parse(b"plain", source="a.txt")) == "fake-auto"


def test_two_catch_alls_or_two_generic_plugins_are_ambiguous(site: Path) -> None:
    install(site, "fake-auto-one", catch_all=True)
    install(site, "fake-auto-two", catch_all=True)
    install(site, "fake-generic-one")
    install(site, "fake-generic-two")
    with pytest.raises(PluginError) as err:
        dispatcher(site)
    message = str(err.value)
    assert "every file as the last resort claimed by 'fake-auto-one'" in message
    assert "every file claimed by 'fake-generic-one'" in message
    assert dispatcher(site, prefer="fake-auto-two,fake-generic-one") is not None


def test_unknown_preferred_name_lists_the_installed_plugins(site: Path) -> None:
    install(site, "fake-pdf", extensions=(".pdf",))
    with pytest.raises(PluginError, match=r"no plugin named 'nope'.*'fake-pdf' from fake-pdf"):
        dispatcher(site, prefer="nope")


def test_unimportable_and_broken_plugins_are_plugin_errors(site: Path) -> None:
    install(site, "fake-missing", value="NoSuchClass")
    with pytest.raises(PluginError, match=r"fake-missing.*failed to load"):
        dispatcher(site)
    (site / "fake_missing.py").unlink()
    install(site, "fake-broken", extensions=(".brk",))
    (site / "fake_broken.py").write_text(
        "class Parser:\n    extensions = ('.brk',)\n"
        "    def __init__(self):\n        raise RuntimeError('boom')\n"
    )
    eps = [ep for ep in entry_points_of(site) if ep.name == "fake-broken"]
    d = DispatchingDocumentParser.from_plugins(entry_points=eps)
    with pytest.raises(PluginError, match=r"'fake-broken' from fake-broken.*boom"):
        d.parse(b"x", source="a.brk")


# -- explicit parsers -------------------------------------------------------------------


class Upper:
    extensions = (".upper",)

    def parse(self, data: object, *, source: str | None = None) -> Document:
        raw = data if isinstance(data, bytes) else data.read()  # type: ignore[attr-defined]
        return Document(raw.decode().upper(), {"parser": "upper"})


class Other(Upper):
    def parse(self, data: object, *, source: str | None = None) -> Document:
        return Document("other", {"parser": "other"})


def test_explicit_parsers_first_one_wins() -> None:
    d = DispatchingDocumentParser([Other(), Upper()], text_parser=TextDocumentParser("latin-1"))
    assert d.parse(b"abc", source="x.upper").text == "other"
    assert d.parse("é".encode("latin-1"), source="x.txt").text == "é"
    assert "Other" in repr(d)


# -- through the loaders, whatever else is installed ------------------------------------


def test_loaders_dispatch_per_file(site: Path, tmp_path: Path) -> None:
    install(site, "fake-upper", extensions=(".upper",))
    install(site, "fake-lower", extensions=(".lower",))
    plugins.refresh()
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.upper").write_bytes(b"one")
    (docs / "b.lower").write_bytes(b"two")
    (docs / "c.txt").write_bytes(b"three")
    (docs / "d.txt").write_bytes(b"")
    loaded = FileSystemDocumentLoader.load_documents(docs)
    assert [parsed_by(d) for d in loaded] == ["fake-upper", "fake-lower", "text"]
    assert loaded[2].text == "three"
    assert [Path(f.source).name for f in loaded.failures] == ["d.txt"]
    assert isinstance(default_document_parser(), DispatchingDocumentParser)


def test_bulk_load_stops_on_an_ambiguous_installation(site: Path, tmp_path: Path) -> None:
    install(site, "fake-upper-one", extensions=(".upper",))
    install(site, "fake-upper-two", extensions=(".upper",))
    plugins.refresh()
    (tmp_path / "a.txt").write_bytes(b"text")
    with pytest.raises(PluginError, match="fake-upper-one.*fake-upper-two"):
        FileSystemDocumentLoader.load_documents(tmp_path)


def test_bulk_load_stops_on_a_broken_plugin(site: Path, tmp_path: Path) -> None:
    install(site, "fake-crash", extensions=(".crash",))
    (site / "fake_crash.py").write_text(
        "class Parser:\n    extensions = ('.crash',)\n"
        "    def __init__(self):\n        raise RuntimeError('kaputt')\n"
    )
    plugins.refresh()
    (tmp_path / "a.crash").write_bytes(b"x")
    (tmp_path / "b.txt").write_bytes(b"text")
    with pytest.raises(PluginError, match="fake-crash.*kaputt"):
        FileSystemDocumentLoader.load_documents(tmp_path)


def test_package_resources_dispatch_by_resource_name(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(site, "fake-upper", extensions=(".upper",))
    plugins.refresh()
    package = tmp_path / "ragloom_dispatch_fixture_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.upper").write_bytes(b"shout")
    (package / "b.txt").write_bytes(b"plain")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        loaded = PackageResourceDocumentLoader.load_documents("ragloom_dispatch_fixture_pkg")
    finally:
        sys.modules.pop("ragloom_dispatch_fixture_pkg", None)
    assert [(d.text, parsed_by(d)) for d in loaded] == [
        ("parsed by fake-upper: shout", "fake-upper"),
        ("plain", "text"),
    ]


def test_no_plugins_and_no_variable_is_the_plain_text_parser(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patch:
        patch.setattr(plugins, "providers", lambda group: ())
        parser = default_document_parser("latin-1")
    assert type(parser) is TextDocumentParser
    assert parser.charset == "latin-1"


# -- the dispatcher is a DocumentParser like any other ----------------------------------


class TestDispatchingDocumentParser(DocumentParserSuite):
    @pytest.fixture
    def parser(self) -> DispatchingDocumentParser:
        return DispatchingDocumentParser([Upper()])

    @pytest.fixture
    def sample(self) -> ParserSample:
        return ParserSample("Plain text, 世界 🌍, שלום".encode(), ["世界 🌍", "שלום"])


def test_default_dispatcher_is_reused_until_discovery_changes(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(site, "fake-upper", extensions=(".upper",))
    plugins.refresh()
    first = default_document_parser()
    assert default_document_parser() is first
    assert default_document_parser("latin-1") is not first
    monkeypatch.setenv("RAGLOOM_DOCUMENT_PARSER", "fake-upper")
    preferring = default_document_parser()
    assert preferring is not first
    monkeypatch.delenv("RAGLOOM_DOCUMENT_PARSER")
    plugins.refresh()
    assert default_document_parser() is not first
