"""Easy RAG pipeline overhead and CLI cold start (issue 6).

1. Ingestion of a generated corpus of documents (seeded) with the Easy RAG defaults
   (recursive 254/30-token splitting, all-MiniLM-L6-v2 int8, in-memory store, keyword
   mirror): total time against the time the model alone needs to embed the same
   segments in the same batches. Goal: embedding share >= 0.8 (pipeline adds <= 25 %).
2. Cold start of ``ragloom query`` on an existing index: process start to first result.

Usage: .venv/bin/python scripts/bench/bench_easy_rag.py [--docs 1000] [--words 250]
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ragloom.core import Document, EmbeddingStoreIngestor
from ragloom.easy_rag.defaults import default_document_splitter
from ragloom.easy_rag.index import RagIndex
from ragloom.embeddings.onnx import AllMiniLmL6V2QuantizedEmbeddingModel

WORDS = [
    "retrieval",
    "augmented",
    "generation",
    "splits",
    "documents",
    "into",
    "segments",
    "embeds",
    "them",
    "stores",
    "vectors",
    "searches",
    "filters",
    "metadata",
    "answers",
    "questions",
    "with",
    "sources",
    "quickly",
    "and",
    "reliably",
    "across",
    "many",
    "files",
    "tenants",
    "languages",
    "formats",
    "pages",
    "tables",
    "reports",
]


def corpus(count: int, words: int, seed: int = 7) -> list[Document]:
    rng = random.Random(seed)
    documents = []
    for number in range(count):
        sentences = []
        for _ in range(max(1, words // 12)):
            sentence = " ".join(rng.choice(WORDS) for _ in range(12))
            sentences.append(sentence.capitalize() + ".")
        text = "\n\n".join(" ".join(sentences[i : i + 4]) for i in range(0, len(sentences), 4))
        documents.append(Document(text, {"document_id": f"doc-{number}"}))
    return documents


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--words", type=int, default=250)
    args = parser.parse_args()
    documents = corpus(args.docs, args.words)
    model = AllMiniLmL6V2QuantizedEmbeddingModel()
    model.embed("warm up")

    segments = default_document_splitter().split_all(documents)
    with tempfile.TemporaryDirectory() as tmp:
        totals, embeddings = [], []
        for round in range(2):  # alternate, keep the best: the machine may be shared
            begin = time.perf_counter()
            for first in range(0, len(segments), 64):
                model.embed_all(segments[first : first + 64])
            embeddings.append(time.perf_counter() - begin)
            index = RagIndex.create(Path(tmp) / f"index-{round}", "bench")
            ingestor = EmbeddingStoreIngestor(
                index.mirrored, model, document_splitter=default_document_splitter()
            )
            begin = time.perf_counter()
            result = ingestor.ingest(documents)
            totals.append(time.perf_counter() - begin)
        total, embedding = min(totals), min(embeddings)
        print(f"corpus: {len(documents)} documents, {len(result.ids)} segments")
        print(f"ingest (split + embed + store + keyword index): {total:.2f} s (best of 2)")
        print(f"embedding only, same segments and batches:       {embedding:.2f} s (best of 2)")
        print(f"embedding share of ingestion: {embedding / total:.2f} (goal >= 0.8)")

        index.save()
        runs = []
        for _ in range(3):
            start = time.perf_counter()
            subprocess.run(
                [
                    str(Path(sys.executable).parent / "ragloom"),
                    "query",
                    "filters and metadata",
                    "--index",
                    str(index.path),
                    "--mode",
                    "dense",
                    "--json",
                ],
                check=True,
                capture_output=True,
            )
            runs.append(time.perf_counter() - start)
        print(
            f"cold start of `ragloom query` (dense, {len(result.ids)} segments): "
            f"best {min(runs):.2f} s of {len(runs)}"
        )


if __name__ == "__main__":
    main()
