"""The shipped sample documents (docs/) load cleanly through the default parser."""

from pathlib import Path

from ragloom.core import FileSystemDocumentLoader

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_every_doc_page_loads_without_failures() -> None:
    documents = FileSystemDocumentLoader.load_documents(DOCS, glob="*.md", recursive=True)
    assert documents.failures == []
    assert len(documents) >= 5
    names = {d.metadata["file_name"] for d in documents}
    assert {"index.md", "loading.md", "documents.md"} <= names
    assert all(d.text.strip() for d in documents)
