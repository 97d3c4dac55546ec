"""Main job until easy RAG lands: load the sample documents in docs/ and split them."""

from __future__ import annotations

import argparse
from pathlib import Path

from ragloom.core import FileSystemDocumentLoader, document_splitters

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("directory", nargs="?", default=str(ROOT / "docs"))
    parser.add_argument("--max-segment-size", type=int, default=1000)
    parser.add_argument("--max-overlap", type=int, default=100)
    args = parser.parse_args()

    documents = FileSystemDocumentLoader.load_documents(args.directory, glob="*.md")
    splitter = document_splitters.recursive(args.max_segment_size, args.max_overlap)
    print(f"loaded {len(documents)} documents from {args.directory}")
    for failure in documents.failures:
        print(f"  skipped {failure}")
    total = 0
    for document in documents:
        segments = splitter.split(document)
        total += len(segments)
        name = document.metadata["file_name"]
        print(f"  {name}: {len(document.text)} chars -> {len(segments)} segments")
    print(f"{total} segments of at most {args.max_segment_size} characters")


if __name__ == "__main__":
    main()
