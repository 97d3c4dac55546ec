"""RagIndex: an embedding store plus the manifest of the files ingested into it.

Layout of an index directory: ``store/`` (the :class:`InMemoryEmbeddingStore` saved
atomically; absent when the index is over another store, which persists its own
writes), ``keywords/`` (a :class:`BM25Index` of the same segments under the same
ids, for keyword and hybrid retrieval) and ``files.json`` (per file: content hash and
document identity, plus the embedding model the index was built with). The indexes are
saved before the manifest, so a crash in between only makes the next ingest redo some
files, which is idempotent.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from ragloom.core import (
    BM25Index,
    BM25IndexError,
    Document,
    Embedding,
    EmbeddingSearchRequest,
    EmbeddingSearchResult,
    EmbeddingStore,
    EmbeddingStoreError,
    EmbeddingStoreIngestor,
    FileSystemDocumentLoader,
    Filter,
    InMemoryEmbeddingStore,
    LoadFailure,
    RagIndexError,
    RagloomError,
    StoredEmbedding,
    TextSegment,
    UnsupportedDocumentError,
    metadata_key,
)
from ragloom.core.ingestor import DOCUMENT_ID, document_identity
from ragloom.core.loaders.file_selection import select_files
from ragloom.core.loaders.file_system import readable_name
from ragloom.core.progress import ProgressCallback
from ragloom.core.stores.validation import removal_target
from ragloom.easy_rag.progress import captured_warnings

__all__ = [
    "FORMAT",
    "VERSION",
    "MANIFEST",
    "STORE",
    "KEYWORDS",
    "LOCK",
    "DEFAULT_LOCK_WAIT",
    "READER_PACKAGES",
    "IngestReport",
    "KeywordMirroredStore",
    "RagIndex",
]

FORMAT = "ragloom-easy-rag-index"
VERSION = 1
MANIFEST = "files.json"
STORE = "store"
KEYWORDS = "keywords"
LOCK = ".lock"
DEFAULT_LOCK_WAIT = 10.0
"""Seconds a writer waits for another writer of the same index before giving up."""
# The parser distribution for a file type; any other type: ragloom-parser-auto.
READER_PACKAGES = {
    ".pdf": "ragloom-parser-pdf",
    **dict.fromkeys((".docx", ".xlsx", ".pptx"), "ragloom-parser-office"),
    **dict.fromkeys((".html", ".htm"), "ragloom-transformer-html"),
}


@dataclass
class IngestReport:
    """What an incremental ingest did, file by file."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failures: list[LoadFailure] = field(default_factory=list)
    #: Files with no text (0-byte, blank, an image): not ingested, not failures either
    #: (:attr:`~ragloom.core.LoadFailure.no_text`).
    skipped: list[LoadFailure] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)
    segments: int = 0
    #: ``(file, warning)`` pairs: what parsers and models warned about, per file
    #: (``file`` is empty for warnings raised while splitting and embedding).
    warnings: list[tuple[str, str]] = field(default_factory=list)

    def install_hints(self) -> list[str]:
        """One line per parser package that would read the unsupported files."""
        by_package: dict[str, list[str]] = {}
        for path in self.unsupported:
            by_package.setdefault(_reader_package(path), []).append(Path(path).name)
        return [
            f"skipped {len(names)} file(s) of unsupported type ({', '.join(names[:3])}"
            f"{', ...' if len(names) > 3 else ''}): pip install {package} to read them"
            for package, names in sorted(by_package.items())
        ]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary; file names that are not UTF-8 appear with ``\\xff``
        escapes, as in the text output (never as lone surrogates)."""
        return {
            "added": [readable_name(path) for path in self.added],
            "updated": [readable_name(path) for path in self.updated],
            "unchanged": [readable_name(path) for path in self.unchanged],
            "removed": [readable_name(path) for path in self.removed],
            "failures": [
                {"source": readable_name(f.source), "error": readable_name(str(f.error))}
                for f in self.failures
            ],
            "skipped": [
                {"source": readable_name(f.source), "reason": readable_name(str(f.error))}
                for f in self.skipped
            ],
            "unsupported": [readable_name(path) for path in self.unsupported],
            "segments": self.segments,
            "warnings": [
                {"source": readable_name(source), "warning": readable_name(text)}
                for source, text in self.warnings
            ],
        }


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _absolute(path: str | os.PathLike[str]) -> Path:
    """An absolute, normalised path that keeps symlinks as named (errors name them)."""
    return Path(os.path.abspath(path))


def _reader_package(path: str) -> str:
    """The distribution that reads files like ``path``."""
    return READER_PACKAGES.get(Path(path).suffix.lower(), "ragloom-parser-auto")


def _within(file: str, roots: Sequence[Path]) -> bool:
    return any(Path(file) == root or Path(file).is_relative_to(root) for root in roots)


class KeywordMirroredStore(EmbeddingStore):
    """An embedding store that keeps a BM25 index of the same segments in step.

    Whatever the ingestor adds or removes (by id or by filter) happens in both, so the
    dense and the keyword side always hold the same segments under the same ids.
    """

    def __init__(self, store: EmbeddingStore, keywords: BM25Index) -> None:
        self.store = store
        self.keywords = keywords

    def add_all(
        self,
        embeddings: Sequence[Embedding],
        segments: Sequence[TextSegment] | None = None,
        *,
        ids: Sequence[str] | None = None,
    ) -> list[str]:
        written = self.store.add_all(embeddings, segments, ids=ids)
        if segments:
            self.keywords.add_all(segments, ids=written)
        return written

    def search(self, request: EmbeddingSearchRequest) -> EmbeddingSearchResult:
        return self.store.search(request)

    def remove_all(
        self, ids: Iterable[str] | Filter | None = None, *, filter: Filter | None = None
    ) -> None:
        id_list, filter = removal_target(ids, filter)
        self.store.remove_all(id_list, filter=filter)
        self.keywords.remove_all(id_list, filter=filter)

    def get(self, ids: Iterable[str], *, embeddings: bool = False) -> list[StoredEmbedding]:
        return self.store.get(ids, embeddings=embeddings)


class RagIndex:
    """Open with :meth:`open` (existing) or :meth:`create`; :meth:`ingest` then :meth:`save`.

    The vectors live in the in-memory store saved under ``store/``, or in any other
    :class:`EmbeddingStore` given as ``store`` (pgvector, Qdrant, ...), which persists
    its own writes; the directory then keeps the keyword index and the manifest.
    """

    def __init__(
        self,
        path: Path,
        store: EmbeddingStore,
        keywords: BM25Index,
        files: dict[str, dict[str, str]],
        model: str,
    ) -> None:
        self.path = path
        self.store = store
        self.keywords = keywords
        self.files = files
        self.model = model
        self.mirrored = KeywordMirroredStore(store, keywords)

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, store: EmbeddingStore | None = None) -> RagIndex:
        """Load the index at ``path`` (its vectors in ``store`` when given, else its saved
        in-memory store); :class:`RagIndexError` when there is none or a part of it cannot
        be read (naming the file)."""
        directory = Path(path)
        manifest_path = directory / MANIFEST
        if not manifest_path.is_file():
            raise RagIndexError(
                f"{directory}: no ragloom index here; create one with `ragloom ingest PATH "
                f"--index {directory}`"
            )
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RagIndexError(f"{manifest_path}: unreadable index manifest: {exc}") from exc
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise RagIndexError(f"{manifest_path}: not a ragloom easy-rag index manifest")
        if manifest.get("version") != VERSION:
            raise RagIndexError(
                f"{manifest_path}: index format version {manifest.get('version')!r}, "
                f"this ragloom reads version {VERSION}; rebuild the index"
            )
        store_path, keywords_path = directory / STORE, directory / KEYWORDS
        try:
            if store is None:
                store = (
                    InMemoryEmbeddingStore.load(store_path)
                    if store_path.is_dir()
                    else InMemoryEmbeddingStore()
                )
            keywords = BM25Index.load(keywords_path) if keywords_path.is_dir() else BM25Index()
        except (EmbeddingStoreError, BM25IndexError) as exc:
            raise RagIndexError(
                f"unreadable index: {exc}; rebuild it (remove {directory}, then `ragloom ingest`)"
            ) from exc
        return cls(directory, store, keywords, dict(manifest["files"]), str(manifest["model"]))

    @staticmethod
    @contextlib.contextmanager
    def locked(path: str | os.PathLike[str], *, wait: float = DEFAULT_LOCK_WAIT) -> Iterator[None]:
        """Hold the index's writer lock (``.lock`` in its directory) for a whole
        open-ingest-save cycle, so two writers never lose each other's work: the second
        waits up to ``wait`` seconds, then gets :class:`RagIndexError` ("index in use").
        The operating system releases the lock when its process dies."""
        directory = Path(path)
        directory.mkdir(parents=True, exist_ok=True)
        lock = FileLock(directory / LOCK, timeout=wait)
        try:
            lock.acquire()
        except Timeout as exc:
            raise RagIndexError(
                f"{directory}: index in use by another ragloom process (waited {wait:g} s "
                f"for {directory / LOCK}); retry when it has finished"
            ) from exc
        try:
            yield
        finally:
            lock.release()

    @classmethod
    def create(
        cls, path: str | os.PathLike[str], model: str, *, store: EmbeddingStore | None = None
    ) -> RagIndex:
        """An empty index at ``path`` (written by :meth:`save`) over ``store`` (default: a
        new in-memory one)."""
        vectors = InMemoryEmbeddingStore() if store is None else store
        return cls(Path(path), vectors, BM25Index(), {}, model)

    @classmethod
    def open_or_create(
        cls, path: str | os.PathLike[str], model: str, *, store: EmbeddingStore | None = None
    ) -> RagIndex:
        """Open the index at ``path``, or start a new one (over ``store`` when given);
        refuses another model's index."""
        if not (Path(path) / MANIFEST).exists():
            return cls.create(path, model, store=store)
        index = cls.open(path, store=store)
        if index.model != model:
            raise RagIndexError(
                f"{path}: index built with embedding model {index.model!r}, not {model!r}; "
                "use another --index directory or rebuild it"
            )
        return index

    def ingest(
        self,
        paths: Sequence[str | os.PathLike[str]],
        ingestor: EmbeddingStoreIngestor,
        *,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        on_progress: ProgressCallback | None = None,
    ) -> IngestReport:
        """Bring the index in line with ``paths``: add new, replace changed, drop deleted files.

        The files are those :func:`~ragloom.core.loaders.file_selection.select_files`
        picks (hidden, git-ignored and virtualenv files skipped; ``include``/``exclude``
        patterns), never
        the index's own. ``ingestor`` must write to :attr:`mirrored` (so the keyword index
        follows). Files of a type no installed parser reads are listed in ``unsupported``;
        unreadable or unparseable ones in ``failures``; the others are still ingested.
        Warnings raised meanwhile (a parser's, the model's) go to ``warnings``, not the
        terminal. ``on_progress(files_read, files_total)`` follows the reading phase.
        Call :meth:`save` afterwards to persist.
        """
        roots = [_absolute(p) for p in paths]
        try:
            selected = select_files(roots, include=include, exclude=exclude)
        except FileNotFoundError as exc:
            raise RagIndexError(str(exc)) from exc
        # A file's identity is its resolved path: reached through a symlinked folder or
        # under two names, it is still one file (one manifest entry, one set of segments).
        own = _absolute(self.path).resolve()
        named = {f.resolve(): f for f in reversed(selected)}  # resolved -> first name given
        files = [
            f for f in dict.fromkeys(f.resolve() for f in selected) if not f.is_relative_to(own)
        ]
        roots = [root.resolve() for root in roots]
        report = IngestReport()
        documents: list[tuple[str, str, Document]] = []
        for number, file in enumerate(files, 1):
            if on_progress is not None and number > 1:
                on_progress(number - 1, len(files))
            key = str(file)
            try:
                digest = _sha256(file)
            except OSError as exc:
                label = key if named[file] == file else f"{named[file]} -> {key}"
                report.failures.append(
                    LoadFailure(key, RagIndexError(f"{label}: cannot read: {exc}"))
                )
                continue
            known = self.files.get(key)
            if known is not None and known["sha256"] == digest:
                report.unchanged.append(key)
                continue
            try:
                with captured_warnings() as raised:
                    document = FileSystemDocumentLoader.load_document(file)
            except UnsupportedDocumentError:
                report.unsupported.append(key)
                continue
            except RagloomError as exc:
                failure = LoadFailure(key, exc)
                (report.skipped if failure.no_text else report.failures).append(failure)
                continue
            finally:
                report.warnings += [(key, text) for text in raised]
            documents.append((key, digest, document))
            (report.updated if known is not None else report.added).append(key)
        if on_progress is not None and files:
            on_progress(len(files), len(files))
        with captured_warnings() as raised:
            result = ingestor.ingest([document for _, _, document in documents])
        report.warnings += [("", text) for text in raised]
        for (key, digest, document), outcome in zip(documents, result.outcomes, strict=True):
            if outcome.error is not None:
                report.failures.append(LoadFailure(key, outcome.error))
                for bucket in (report.added, report.updated):
                    with contextlib.suppress(ValueError):
                        bucket.remove(key)
                continue
            self.files[key] = {"sha256": digest, "document_id": document_identity(document)}
            report.segments += len(outcome.segment_ids)
        present = {str(f) for f in files}
        for key in sorted(self.files):
            if _within(key, roots) and key not in present:
                identity = self.files.pop(key)["document_id"]
                self.mirrored.remove_all(filter=metadata_key(DOCUMENT_ID).is_equal_to(identity))
                report.removed.append(key)
        return report

    @property
    def store_persists_itself(self) -> bool:
        """Whether the store writes through (any but the in-memory one, which :meth:`save`
        writes): then each change is on disk at once, and only the manifest and keyword
        index wait for :meth:`save`."""
        return not isinstance(self.store, InMemoryEmbeddingStore)

    def save(self) -> None:
        """Persist the in-memory store (another store has persisted its writes already)
        and the keyword index, then the manifest (each atomically)."""
        self.path.mkdir(parents=True, exist_ok=True)
        if isinstance(self.store, InMemoryEmbeddingStore):
            self.store.save(self.path / STORE)
        self.keywords.save(self.path / KEYWORDS)
        manifest = {"format": FORMAT, "version": VERSION, "model": self.model, "files": self.files}
        temporary = self.path / f"{MANIFEST}.tmp"
        with temporary.open("w", encoding="utf-8") as file:
            json.dump(manifest, file, indent=2, sort_keys=True)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, self.path / MANIFEST)

    def close(self) -> None:
        """Close the store's connections (for the stores that hold any)."""
        close = getattr(self.store, "close", None)
        if callable(close):
            close()
