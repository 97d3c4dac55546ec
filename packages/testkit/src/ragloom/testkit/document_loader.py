"""DocumentLoaderSuite: the contract every DocumentLoader passes unchanged.

Loaders differ in how they address documents (paths, URLs, buckets), so the suite talks
to a :class:`LoaderHarness` the integration provides as the ``harness`` fixture: it
stores named objects in the real backend (a directory, a bucket, a container) and loads
them back through the loader under test.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import pytest

from ragloom.core.document import Document
from ragloom.core.errors import DocumentLoadError, EmptyDocumentError, RagloomError
from ragloom.core.loaders.result import LoadedDocuments
from ragloom.core.parsers.text import TextDocumentParser
from ragloom.testkit.suite import ConformanceSuite, if_fails

__all__ = ["DocumentLoaderSuite", "LoaderHarness"]


class LoaderHarness(Protocol):
    """Bridges the suite to one loader and a fresh, empty backend location."""

    def put(self, name: str, data: bytes) -> None:
        """Store ``data`` under ``name`` (a relative, ``/``-separated name)."""

    def load_document(self, name: str, parser: TextDocumentParser) -> Document:
        """Load the object ``name`` with the loader under test."""

    def load_documents(self, parser: TextDocumentParser) -> LoadedDocuments:
        """Load every object of the location with the loader under test."""

    def name_of(self, document: Document) -> str:
        """The name the document was stored under, read back from its metadata."""


def _by_name(harness: LoaderHarness, documents: Sequence[Document]) -> dict[str, str]:
    return {harness.name_of(d): d.text for d in documents}


class DocumentLoaderSuite(ConformanceSuite, standard=True):
    """Single and bulk loads, metadata naming the source, failures that lose nothing."""

    integration_fixtures = frozenset({"harness"})

    @pytest.fixture
    def harness(self) -> LoaderHarness:
        raise NotImplementedError("provide a `harness` fixture")

    @if_fails(
        "the loader must decode the bytes with the parser and record the source name in metadata"
    )
    def test_load_one_document(self, harness: LoaderHarness) -> None:
        harness.put("one.txt", "first document, ünïcode ✓".encode())
        document = harness.load_document("one.txt", TextDocumentParser())
        assert document.text == "first document, ünïcode ✓"
        assert harness.name_of(document) == "one.txt"

    @if_fails("a missing object must raise DocumentLoadError whose message names it")
    def test_missing_document_names_it(self, harness: LoaderHarness) -> None:
        harness.put("present.txt", b"here")
        with pytest.raises(DocumentLoadError, match="absent-document.txt"):
            harness.load_document("absent-document.txt", TextDocumentParser())

    @if_fails("load_documents must load every object of the location, with no failures")
    def test_load_all_documents(self, harness: LoaderHarness) -> None:
        harness.put("a.txt", b"alpha")
        harness.put("b.txt", b"beta")
        harness.put("c.txt", "gamma é".encode("cp1252"))
        documents = harness.load_documents(TextDocumentParser())
        assert _by_name(harness, documents) == {
            "a.txt": "alpha",
            "b.txt": "beta",
            "c.txt": "gamma é",
        }
        assert documents.failures == []

    @if_fails("per-document errors must go to failures (as RagloomError), not abort the load")
    def test_bad_documents_are_reported_without_losing_good_ones(
        self, harness: LoaderHarness
    ) -> None:
        harness.put("good.txt", b"good")
        harness.put("blank.txt", b"   ")
        harness.put("bad-utf8.txt", b"\xff\xfe\xfa broken")
        documents = harness.load_documents(TextDocumentParser("utf-8"))
        assert _by_name(harness, documents) == {"good.txt": "good"}
        failed = {f.source: f.error for f in documents.failures}
        assert len(failed) == 2
        assert any("blank.txt" in source for source in failed)
        assert any("bad-utf8.txt" in source for source in failed)
        assert all(isinstance(error, RagloomError) for error in failed.values())
        blank = next(e for s, e in failed.items() if "blank.txt" in s)
        assert isinstance(blank, EmptyDocumentError)
