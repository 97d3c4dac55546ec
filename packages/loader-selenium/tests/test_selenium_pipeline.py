"""End to end: Selenium -> HTML transformer -> splitter -> in-memory store -> retriever
finds the text that JavaScript put on the page after a delay."""

from __future__ import annotations

import pytest

from ragloom.core import (
    EmbeddingStoreContentRetriever,
    EmbeddingStoreIngestor,
    InMemoryEmbeddingStore,
    Query,
    document_splitters,
)
from ragloom.loaders.selenium import SeleniumDocumentLoader
from ragloom.testkit import FakeEmbeddingModel
from ragloom.transformers.html import HtmlDocumentParser, HtmlToTextDocumentTransformer

pytestmark = pytest.mark.integration


def test_javascript_rendered_text_is_retrievable(loader: SeleniumDocumentLoader, site: str) -> None:
    pages = [
        loader.load(f"{site}/delayed.html", wait_for="#late"),
        loader.load(f"{site}/static.html"),
    ]
    model = FakeEmbeddingModel()
    store = InMemoryEmbeddingStore()
    EmbeddingStoreIngestor(
        store,
        model,
        document_transformer=HtmlToTextDocumentTransformer(),
        document_splitter=document_splitters.recursive(200),
    ).ingest(pages)
    retriever = EmbeddingStoreContentRetriever(store, model, max_results=1)
    [best] = retriever.retrieve(Query("which animals are rendered by JavaScript?"))
    assert best.text_segment.text == "Quokkas are rendered by JavaScript."
    assert best.text_segment.metadata["final_url"] == f"{site}/delayed.html"


def test_parser_turns_the_rendered_page_into_text(
    session,
    site: str,  # type: ignore[no-untyped-def]
) -> None:
    with SeleniumDocumentLoader(
        session(), wait_for="#late", parser=HtmlDocumentParser(), allow_private_addresses=True
    ) as html:
        document = html.load(f"{site}/delayed.html")
    assert document.text == "Quokkas are rendered by JavaScript."
    assert document.metadata["title"] == "Delayed"
    assert document.metadata["url"] == f"{site}/delayed.html"
