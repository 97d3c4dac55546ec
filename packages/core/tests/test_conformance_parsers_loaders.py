"""The core parser and loaders pass the standard testkit suites."""

from pathlib import Path

import pytest

from ragloom.core import (
    Document,
    FileSystemDocumentLoader,
    LoadedDocuments,
    TextDocumentParser,
)
from ragloom.testkit import DocumentLoaderSuite, DocumentParserSuite, ParserSample


class TestTextDocumentParser(DocumentParserSuite):
    @pytest.fixture
    def parser(self) -> TextDocumentParser:
        return TextDocumentParser()

    @pytest.fixture
    def sample(self) -> ParserSample:
        return ParserSample("Plain text.\nSecond line, ünïcode.".encode(), ["Second line"])


class FileSystemHarness:
    def __init__(self, root: Path) -> None:
        self.root = root

    def put(self, name: str, data: bytes) -> None:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    def load_document(self, name: str, parser: TextDocumentParser) -> Document:
        return FileSystemDocumentLoader.load_document(self.root / name, parser)

    def load_documents(self, parser: TextDocumentParser) -> LoadedDocuments:
        return FileSystemDocumentLoader.load_documents(self.root, parser, recursive=True)

    def name_of(self, document: Document) -> str:
        directory = Path(str(document.metadata["absolute_directory_path"]))
        return (directory / str(document.metadata["file_name"])).relative_to(self.root).as_posix()


class TestFileSystemDocumentLoader(DocumentLoaderSuite):
    @pytest.fixture
    def harness(self, tmp_path: Path) -> FileSystemHarness:
        return FileSystemHarness(tmp_path.resolve())
