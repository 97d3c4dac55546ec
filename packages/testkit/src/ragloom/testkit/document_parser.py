"""DocumentParserSuite: the contract every DocumentParser passes unchanged.

Provide two fixtures: ``parser`` (the parser under test) and ``sample`` (a
:class:`ParserSample`: the bytes of a valid document of the parser's format and text
fragments its parsed text must contain)::

    class TestPdfParser(DocumentParserSuite):
        @pytest.fixture
        def parser(self):
            return PdfDocumentParser()

        @pytest.fixture
        def sample(self):
            return ParserSample(make_pdf("Hello PDF"), ["Hello PDF"])
"""

from __future__ import annotations

import io
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest

from ragloom.core.document import Document
from ragloom.core.errors import DocumentParseError, RagloomError
from ragloom.core.metadata import Metadata
from ragloom.core.parsers.base import DocumentParser
from ragloom.testkit.suite import ConformanceSuite, if_fails

__all__ = ["DocumentParserSuite", "ParserSample"]


@dataclass(frozen=True)
class ParserSample:
    """A valid input of the parser's format and fragments its text must contain."""

    data: bytes
    expected_fragments: list[str] = field(default_factory=list)


class DocumentParserSuite(ConformanceSuite, standard=True):
    """Parsing bytes and streams, blank and corrupt input, metadata types, thread safety."""

    integration_fixtures = frozenset({"parser", "sample"})

    @pytest.fixture
    def parser(self) -> DocumentParser:
        raise NotImplementedError("provide a `parser` fixture")

    @pytest.fixture
    def sample(self) -> ParserSample:
        raise NotImplementedError("provide a `sample` fixture")

    @if_fails("parse(bytes) must return a Document with the sample's text fragments")
    def test_parses_bytes_into_a_document(
        self, parser: DocumentParser, sample: ParserSample
    ) -> None:
        document = parser.parse(sample.data, source="sample")
        assert isinstance(document, Document)
        assert document.text.strip()
        for fragment in sample.expected_fragments:
            assert fragment in document.text
        assert isinstance(document.metadata, Metadata)

    @if_fails("parse(stream) must read the stream and give the same Document as parse(bytes)")
    def test_parses_a_stream_like_bytes(self, parser: DocumentParser, sample: ParserSample) -> None:
        assert parser.parse(io.BytesIO(sample.data)) == parser.parse(sample.data)

    @if_fails("the parser must implement the ragloom DocumentParser protocol")
    def test_is_a_document_parser(self, parser: DocumentParser) -> None:
        assert isinstance(parser, DocumentParser)

    @if_fails("empty input must raise DocumentParseError whose message names the source")
    def test_empty_input_is_a_parse_error_naming_the_source(self, parser: DocumentParser) -> None:
        with pytest.raises(DocumentParseError, match="empty-input.bin"):
            parser.parse(b"", source="empty-input.bin")

    @if_fails(
        "corrupt input must raise a RagloomError naming the source (wrap the library's error)"
    )
    def test_corrupt_input_is_a_ragloom_error(self, parser: DocumentParser) -> None:
        garbage = bytes(range(256)) * 16 + os.urandom(512)
        error: RagloomError | None = None
        try:
            document = parser.parse(garbage, source="garbage.bin")
        except RagloomError as exc:
            error = exc
        if error is not None:
            assert "garbage.bin" in str(error)
        else:  # a parser may accept anything (e.g. auto-detection), but must yield a Document
            assert isinstance(document, Document)

    @if_fails("parsing must be thread-safe: no shared mutable state in the parser")
    def test_concurrent_parses_agree(self, parser: DocumentParser, sample: ParserSample) -> None:
        expected = parser.parse(sample.data)
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda _: parser.parse(sample.data), range(8)))
        assert all(result == expected for result in results)
