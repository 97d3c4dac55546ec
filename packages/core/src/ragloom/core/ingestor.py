"""EmbeddingStoreIngestor: transform, split, embed and store documents, re-runnably.

Segment ids are derived from the document's identity and the segment's index, so
ingesting the same documents again writes the same ids (no duplicates), and an edited
document replaces its old segments: each segment records its document's identity
(``document_id``) and content version (``document_version``, a hash of the text);
new segments overwrite by id, then the segments of older versions are removed. A run
that fails half-way leaves every document either in its old or in its new state, and
can simply be re-run.

A document's identity is, in order: its ``document_id`` metadata; its ``url``; its
``package`` + ``resource``; its ``absolute_directory_path`` + ``file_name``; else a hash
of its text (then an edited text is a new document, and the old one stays).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import cast

from ragloom.core import plugins
from ragloom.core.document import (
    ABSOLUTE_DIRECTORY_PATH,
    FILE_NAME,
    INDEX,
    URL,
    Document,
    TextSegment,
)
from ragloom.core.embedding import Embedding, EmbeddingModel, TokenUsage
from ragloom.core.errors import InvalidArgumentError, RagloomError
from ragloom.core.filters import Filter, metadata_key
from ragloom.core.loaders.package_resource import PACKAGE, RESOURCE
from ragloom.core.progress import ProgressCallback
from ragloom.core.splitters.base import DocumentSplitter
from ragloom.core.stores.base import EmbeddingStore
from ragloom.core.transformers import (
    DocumentFunction,
    DocumentTransformer,
    TextSegmentFunction,
    TextSegmentTransformer,
    as_document_transformer,
    as_text_segment_transformer,
)

__all__ = [
    "DOCUMENT_ID",
    "DOCUMENT_VERSION",
    "document_identity",
    "document_version",
    "segment_id",
    "DocumentOutcome",
    "IngestionResult",
    "EmbeddingStoreIngestor",
]

DOCUMENT_ID = "document_id"
DOCUMENT_VERSION = "document_version"
_ID_NAMESPACE = uuid.UUID("5b0c6e0e-3f1a-4d8e-9c43-6f0e2a7d9a11")


def document_identity(document: Document) -> str:
    """The stable identity of ``document`` (see the module docstring)."""
    meta = document.metadata
    if DOCUMENT_ID in meta:
        return str(meta[DOCUMENT_ID])
    if URL in meta:
        return f"url:{meta[URL]}"
    if PACKAGE in meta and RESOURCE in meta:
        return f"resource:{meta[PACKAGE]}:{meta[RESOURCE]}"
    if ABSOLUTE_DIRECTORY_PATH in meta and FILE_NAME in meta:
        return f"file:{meta[ABSOLUTE_DIRECTORY_PATH]}/{meta[FILE_NAME]}"
    return "sha256:" + document_version(document)


def document_version(document: Document) -> str:
    """A hash of the document's text: segments of other versions are stale."""
    return hashlib.sha256(document.text.encode("utf-8")).hexdigest()


def segment_id(document_id: str, index: int) -> str:
    """The deterministic id (a UUID5 string) of segment ``index`` of a document.

    Lone surrogates (an undecodable file name) are hashed as they are (``surrogatepass``),
    so such names get ids of their own instead of failing the batch.
    """
    name = f"{document_id}#{index}".encode("utf-8", "surrogatepass")
    digest = hashlib.sha1(_ID_NAMESPACE.bytes + name, usedforsecurity=False).digest()
    return str(uuid.UUID(bytes=digest[:16], version=5))


@dataclass(frozen=True, slots=True)
class DocumentOutcome:
    """What happened to one input document."""

    document_id: str
    segment_ids: list[str] = field(default_factory=list)
    dropped: bool = False
    """True when a transformer dropped the document (or all of its segments)."""
    error: RagloomError | None = None


@dataclass(frozen=True, slots=True)
class IngestionResult:
    """The spec's IngestionResult: token usage plus the ids written and per-document outcomes."""

    token_usage: TokenUsage | None
    outcomes: list[DocumentOutcome]

    @property
    def ids(self) -> list[str]:
        """Every segment id written, in document and segment order."""
        return [i for outcome in self.outcomes for i in outcome.segment_ids]

    @property
    def failures(self) -> list[DocumentOutcome]:
        """The documents that could not be ingested (their old state is kept)."""
        return [outcome for outcome in self.outcomes if outcome.error is not None]


class EmbeddingStoreIngestor:
    """The ingestion pipeline: transform → split → transform segments → embed → store.

    ``embedding_model`` and ``document_splitter`` default to the installed plugins
    (groups ``ragloom.embedding_models`` / ``ragloom.document_splitters``); a
    :class:`~ragloom.core.errors.PluginError` says what to install when none is.
    Either transformer may be a plain function of one item (the spec's lambda form).
    Progress: ``on_split(documents_split, documents_total)`` after each document,
    ``on_progress(segments_embedded, segments_total)`` after each embedding batch.
    """

    def __init__(
        self,
        embedding_store: EmbeddingStore,
        embedding_model: EmbeddingModel | None = None,
        *,
        document_splitter: DocumentSplitter | None = None,
        document_transformer: DocumentTransformer | DocumentFunction | None = None,
        text_segment_transformer: TextSegmentTransformer | TextSegmentFunction | None = None,
        batch_size: int = 64,
        on_progress: ProgressCallback | None = None,
        on_split: ProgressCallback | None = None,
    ) -> None:
        if batch_size < 1:
            raise InvalidArgumentError(f"batch_size must be >= 1, got {batch_size!r}")
        self.embedding_store = embedding_store
        self.embedding_model = embedding_model or cast(
            EmbeddingModel, plugins.load_default(plugins.EMBEDDING_MODELS)
        )
        self.document_splitter = document_splitter or cast(
            DocumentSplitter, plugins.load_default(plugins.DOCUMENT_SPLITTERS)
        )
        self.document_transformer = (
            None if document_transformer is None else as_document_transformer(document_transformer)
        )
        self.text_segment_transformer = (
            None
            if text_segment_transformer is None
            else as_text_segment_transformer(text_segment_transformer)
        )
        self.batch_size = batch_size
        self.on_progress = on_progress
        self.on_split = on_split

    @classmethod
    def from_defaults(cls, embedding_store: EmbeddingStore) -> EmbeddingStoreIngestor:
        """An ingestor with the discovered default model and splitter."""
        return cls(embedding_store)

    def ingest(self, documents: Document | Iterable[Document]) -> IngestionResult:
        """Ingest one or many documents; see the module docstring for re-runs and edits."""
        docs = [documents] if isinstance(documents, Document) else list(documents)
        plans: list[tuple[str, list[TextSegment] | RagloomError]] = []
        for number, document in enumerate(docs, 1):
            identity = document_identity(document)
            try:
                plans.append((identity, self.split_document(document, identity)))
            except RagloomError as exc:
                plans.append((identity, exc))
            except Exception as exc:
                plans.append((identity, RagloomError(f"{identity}: {type(exc).__name__}: {exc}")))
            if self.on_split is not None:
                self.on_split(number, len(docs))

        usage: TokenUsage | None = None
        outcomes: list[DocumentOutcome] = []
        total = sum(len(segments) for _, segments in plans if isinstance(segments, list))
        done = 0
        pending: list[tuple[str, list[TextSegment] | RagloomError]] = []
        pending_size = 0
        for identity, segments in plans:
            pending.append((identity, segments))
            pending_size += len(segments) if isinstance(segments, list) else 0
            if pending_size >= self.batch_size:
                usage, done = self.write_documents(pending, outcomes, usage, done, total)
                pending, pending_size = [], 0
        if pending:
            usage, done = self.write_documents(pending, outcomes, usage, done, total)
        return IngestionResult(usage, outcomes)

    def split_document(self, document: Document, identity: str) -> list[TextSegment]:
        """Transform and split one document; its segments carry identity and version.

        Public for ingestors that distribute the work (ragloom-ingestor-ray): splitting in
        one worker and :meth:`write_documents` in another gives this ingestor's result."""
        version = document_version(document)
        if self.document_transformer is not None:
            transformed = self.document_transformer.transform(document)
            if transformed is None:
                return []
            document = transformed
        segments = self.document_splitter.split(document)
        if self.text_segment_transformer is not None:
            segments = self.text_segment_transformer.transform_all(segments)
        for segment in segments:
            segment.metadata[DOCUMENT_ID] = identity
            segment.metadata[DOCUMENT_VERSION] = version
        return segments

    def write_documents(
        self,
        pending: Sequence[tuple[str, list[TextSegment] | RagloomError]],
        outcomes: list[DocumentOutcome],
        usage: TokenUsage | None,
        done: int,
        total: int,
    ) -> tuple[TokenUsage | None, int]:
        """Embed the segments of whole documents, then write each document atomically;
        ``pending`` pairs each document identity with :meth:`split_document`'s segments
        (or its error), outcomes are appended, and ``(usage, done)`` is returned."""
        segments = [s for _, segs in pending if isinstance(segs, list) for s in segs]
        embeddings: list[Embedding] = []
        for start in range(0, len(segments), self.batch_size):
            batch = segments[start : start + self.batch_size]
            result = self.embedding_model.embed_all(batch)
            if len(result.embeddings) != len(batch):
                raise RagloomError(
                    f"embedding model returned {len(result.embeddings)} embeddings "
                    f"for {len(batch)} segments"
                )
            embeddings.extend(result.embeddings)
            usage = result.token_usage + usage if result.token_usage is not None else usage
            done += len(batch)
            if self.on_progress is not None:
                self.on_progress(done, total)
        position = 0
        for identity, segs in pending:
            if not isinstance(segs, list):
                outcomes.append(DocumentOutcome(identity, error=segs))
                continue
            vectors = embeddings[position : position + len(segs)]
            position += len(segs)
            outcomes.append(self._write(identity, segs, vectors))
        return usage, done

    def _write(
        self, identity: str, segments: list[TextSegment], vectors: list[Embedding]
    ) -> DocumentOutcome:
        """Add the new segments (overwriting by id), then remove other versions' segments."""
        ids = [segment_id(identity, int(s.metadata.get(INDEX, i))) for i, s in enumerate(segments)]
        stale: Filter = metadata_key(DOCUMENT_ID).is_equal_to(identity)
        if segments:
            version = segments[0].metadata[DOCUMENT_VERSION]
            stale = stale & metadata_key(DOCUMENT_VERSION).is_not_equal_to(version)
        try:
            if segments:
                self.embedding_store.add_all(vectors, segments, ids=ids)
            self.embedding_store.remove_all(filter=stale)
        except RagloomError as exc:
            return DocumentOutcome(identity, error=exc)
        return DocumentOutcome(identity, ids, dropped=not segments)
