"""Reading retrieval evaluation sets in the BEIR layout.

A BEIR data set is a directory with ``corpus.jsonl`` (``{"_id", "title", "text"}`` per line,
other fields ignored), ``queries.jsonl`` (``{"_id", "text"}``) and ``qrels/<split>.tsv``
(a ``query-id  corpus-id  score`` header, then one judgement per line; a score > 0 means
relevant, higher is more relevant).
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragloom.core.document import Document
from ragloom.core.errors import EvaluationDataError

__all__ = ["DOC_ID", "BeirDataset", "CorpusEntry", "EvaluationDataError", "load_beir"]

DOC_ID = "doc_id"
"""Metadata key under which :meth:`BeirDataset.documents` stores each corpus id."""


@dataclass(frozen=True, slots=True)
class CorpusEntry:
    """One corpus document: its title (may be empty) and text."""

    title: str
    text: str


@dataclass(frozen=True, slots=True)
class BeirDataset:
    """A corpus, queries, and relevance judgements ``qrels[query_id][doc_id] = grade``."""

    name: str
    corpus: dict[str, CorpusEntry]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]

    def documents(self) -> list[Document]:
        """The corpus as documents (title and text joined by a blank line), each with its
        corpus id under ``doc_id`` and, when present, its ``title``."""
        documents = []
        for doc_id, entry in self.corpus.items():
            text = f"{entry.title}\n\n{entry.text}" if entry.title else entry.text
            metadata = {DOC_ID: doc_id, "title": entry.title} if entry.title else {DOC_ID: doc_id}
            documents.append(Document(text, metadata))
        return documents

    def judged_queries(self) -> dict[str, str]:
        """The queries with at least one relevant document (the ones that are scored)."""
        return {
            query_id: text
            for query_id, text in self.queries.items()
            if any(grade > 0 for grade in self.qrels.get(query_id, {}).values())
        }


def load_beir(path: str | os.PathLike[str], split: str = "test") -> BeirDataset:
    """Read the BEIR directory ``path`` with the judgements of ``split``; checks that every
    judged query and document exists."""
    directory = Path(path)
    corpus: dict[str, CorpusEntry] = {}
    for source, record in _jsonl(directory / "corpus.jsonl"):
        corpus[_id(record, source)] = CorpusEntry(
            _text(record, "title", source, required=False), _text(record, "text", source)
        )
    queries = {
        _id(record, source): _text(record, "text", source)
        for source, record in _jsonl(directory / "queries.jsonl")
    }
    qrels_path = directory / "qrels" / f"{split}.tsv"
    qrels: dict[str, dict[str, int]] = {}
    try:
        with open(qrels_path, encoding="utf-8", newline="") as file:
            rows = list(csv.reader(file, delimiter="\t"))
    except OSError as exc:
        raise EvaluationDataError(f"{qrels_path}: cannot read the judgements ({exc})") from exc
    for number, row in enumerate(rows, start=1):
        source = f"{qrels_path}:{number}"
        if number == 1 and row and row[0] == "query-id":
            continue
        if len(row) != 3:
            raise EvaluationDataError(f"{source}: expected query-id, corpus-id, score")
        query_id, doc_id, grade = row
        try:
            value = int(grade)
        except ValueError as exc:
            raise EvaluationDataError(f"{source}: score {grade!r} is not an integer") from exc
        if query_id not in queries:
            raise EvaluationDataError(f"{source}: unknown query {query_id!r}")
        if doc_id not in corpus:
            raise EvaluationDataError(f"{source}: unknown document {doc_id!r}")
        qrels.setdefault(query_id, {})[doc_id] = value
    return BeirDataset(directory.name, corpus, queries, qrels)


def _jsonl(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise EvaluationDataError(f"{path}: cannot read ({exc})") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        source = f"{path}:{number}"
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise EvaluationDataError(f"{source}: not valid JSON ({exc})") from exc
        if not isinstance(record, dict):
            raise EvaluationDataError(f"{source}: expected a JSON object")
        yield source, record


def _id(record: dict[str, Any], source: str) -> str:
    value = record.get("_id")
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value:
        raise EvaluationDataError(f"{source}: missing or invalid '_id'")
    return value


def _text(record: dict[str, Any], key: str, source: str, *, required: bool = True) -> str:
    value = record.get(key, None if required else "")
    if not isinstance(value, str):
        raise EvaluationDataError(f"{source}: {key!r} must be a string")
    return value
