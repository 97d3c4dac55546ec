"""IndexService: one Easy RAG index behind the server, shared by HTTP and MCP.

- Retrieval is scoped: a :class:`Principal` bound to a tenant always adds
  ``tenant == <its tenant>`` to the filter (an AND, so no client filter can widen it).
- Ingestion runs on one background thread. The ingestor embeds into a staging store that
  only records its writes; they are then applied under a writer lock that retrievals
  hold as readers, so a query sees a document's old or new segments, never a mix. A job
  that raises anything ends ``failed`` naming the error; a write that fails halfway is
  undone under the same lock.
- Uploads get the ingestor's stable ids (``document_id`` = ``upload:<tenant>/<name>``);
  the manifest keeps each upload's SHA-256 and client metadata, so re-uploading the same
  bytes with the same metadata is a no-op.
- The index is saved when the queue runs empty and on :meth:`close`, which first
  finishes every accepted job: nothing acknowledged is lost on a graceful shutdown.
  Over a store that persists its own writes (pgvector, Qdrant, ...) the manifest and
  keyword index are saved after every job instead, so a crash leaves no segments in the
  store that the manifest does not list (beyond the job it interrupts).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import logging
import queue
import tempfile
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from ragloom.core import (
    BM25ContentRetriever,
    ChatMemory,
    ChatModel,
    Content,
    ContentRetriever,
    Document,
    Embedding,
    EmbeddingMatch,
    EmbeddingModel,
    EmbeddingSearchRequest,
    EmbeddingSearchResult,
    EmbeddingStore,
    EmbeddingStoreContentRetriever,
    EmbeddingStoreIngestor,
    FileSystemDocumentLoader,
    Filter,
    InvalidArgumentError,
    InvalidFilterError,
    MessageWindowChatMemory,
    Query,
    RagAssistant,
    RagloomError,
    StoredEmbedding,
    TextSegment,
    metadata_key,
    parse_filter,
    plugins,
)
from ragloom.core.document import INDEX
from ragloom.core.ingestor import DOCUMENT_ID
from ragloom.core.stores.validation import removal_target
from ragloom.easy_rag import ExtractiveAssistant, RagIndex
from ragloom.easy_rag.defaults import index_hybrid_retriever
from ragloom.easy_rag.store_config import StoreConfigError, open_index
from ragloom.server.settings import ServerConfigError, ServerSettings

__all__ = [
    "TENANT",
    "UPLOAD_PREFIX",
    "Mode",
    "Principal",
    "Job",
    "SourceEntry",
    "ReadWriteLock",
    "ConversationMemories",
    "IndexService",
    "safe_filename",
]

TENANT = "tenant"
UPLOAD_PREFIX = "upload:"
METADATA = "metadata"
MAX_PASSAGES = 10_000  # segments of one document read back as a resource
UNDO_PAGE = 10_000
"""Segments per search when a re-upload captures the document it may have to put back
(under Milvus's 16,384 results of one search); the capture pages past it."""
MAX_FILENAME = 128
MAX_ERROR = 1000  # characters of an error a job reports
Mode = Literal["hybrid", "dense", "keyword"]
logger = logging.getLogger("ragloom.server")


@dataclass(frozen=True)
class Principal:
    """Who is calling: a key's label and its tenant (``None``: every tenant)."""

    name: str
    tenant: str | None

    def scope(self, filter: Filter | None) -> Filter | None:
        """``filter`` restricted to this principal's tenant (AND: it cannot widen)."""
        if self.tenant is None:
            return filter
        own = metadata_key(TENANT).is_equal_to(self.tenant)
        return own if filter is None else own & filter

    def may_see(self, tenant: str | None) -> bool:
        """Whether a document of ``tenant`` belongs to this principal."""
        return self.tenant is None or self.tenant == tenant


@dataclass
class Job:
    """One accepted upload: ``queued`` → ``running`` → ``done`` | ``unchanged`` | ``failed``."""

    id: str
    tenant: str | None
    source: str
    status: str = "queued"
    error: str | None = None
    segments: int = 0
    created: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        """The job as the status endpoint shows it."""
        return {
            "id": self.id,
            "source": self.source,
            "tenant": self.tenant,
            "status": self.status,
            "error": self.error,
            "segments": self.segments,
            "created": self.created,
        }


@dataclass(frozen=True)
class SourceEntry:
    """One document in the index manifest."""

    id: str
    name: str
    tenant: str | None
    sha256: str
    metadata: dict[str, Scalar] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "tenant": self.tenant,
            "sha256": self.sha256,
            "metadata": self.metadata,
        }


class ReadWriteLock:
    """Many readers or one writer; a waiting writer stops new readers (no starvation)."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._readers = 0
        self._writer = False
        self._waiting_writers = 0

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        with self._condition:
            while self._writer or self._waiting_writers:
                self._condition.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._condition:
                self._readers -= 1
                self._condition.notify_all()

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        with self._condition:
            self._waiting_writers += 1
            while self._writer or self._readers:
                self._condition.wait()
            self._waiting_writers -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._condition:
                self._writer = False
                self._condition.notify_all()


class ConversationMemories:
    """At most ``users`` conversations of ``messages`` messages each; the least recently
    used conversation is forgotten first."""

    def __init__(self, users: int, messages: int) -> None:
        self.users = users
        self.messages = messages
        self._memories: OrderedDict[Hashable, ChatMemory] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._memories)

    def get(self, memory_id: Hashable) -> ChatMemory:
        """The memory of ``memory_id``, created on first use."""
        with self._lock:
            memory = self._memories.pop(memory_id, None)
            if memory is None:
                memory = MessageWindowChatMemory(self.messages, id=memory_id)
            self._memories[memory_id] = memory
            while len(self._memories) > self.users:
                self._memories.popitem(last=False)
            return memory


class _StagedWrites(EmbeddingStore):
    """Records the ingestor's writes so they can be applied to the index all at once."""

    def __init__(self) -> None:
        self.operations: list[Callable[[EmbeddingStore], object]] = []

    def add_all(
        self,
        embeddings: Sequence[Embedding],
        segments: Sequence[TextSegment] | None = None,
        *,
        ids: Sequence[str] | None = None,
    ) -> list[str]:
        if ids is None:
            raise InvalidArgumentError("staged writes need the ingestor's ids")
        vectors, parts, names = (
            list(embeddings),
            None if segments is None else list(segments),
            list(ids),
        )
        self.operations.append(lambda store: store.add_all(vectors, parts, ids=names))
        return names

    def search(self, request: EmbeddingSearchRequest) -> EmbeddingSearchResult:
        raise RagloomError("the staging store records writes only; search the index")

    def get(self, ids: Iterable[str], *, embeddings: bool = False) -> list[StoredEmbedding]:
        raise RagloomError("the staging store records writes only; read the index")

    def remove_all(
        self, ids: Iterable[str] | Filter | None = None, *, filter: Filter | None = None
    ) -> None:
        names, condition = removal_target(ids, filter)
        self.operations.append(lambda store: store.remove_all(names, filter=condition))


class _ReadLocked:
    """A retriever that holds the index's reader lock while it retrieves."""

    def __init__(self, retriever: ContentRetriever, lock: ReadWriteLock) -> None:
        self.retriever = retriever
        self.lock = lock

    def retrieve(self, query: Query) -> list[Content]:
        with self.lock.reading():
            return self.retriever.retrieve(query)


def safe_filename(name: str) -> str:
    """The base name of ``name`` with control and path characters refused; at most 128
    characters, not hidden. :class:`InvalidArgumentError` says what is wrong."""
    base = unicodedata.normalize("NFC", name).replace("\\", "/").rsplit("/", 1)[-1].strip()
    if not base or base in {".", ".."} or base.startswith("."):
        raise InvalidArgumentError(
            f"file name {name[:80]!r}: give a plain, non-hidden file name such as notes.md"
        )
    if any(unicodedata.category(ch)[0] == "C" for ch in base):
        raise InvalidArgumentError(f"file name {name[:80]!r}: control characters are not allowed")
    if len(base) > MAX_FILENAME:
        raise InvalidArgumentError(f"file name of {len(base)} characters: at most {MAX_FILENAME}")
    return base


def _fail(job: Job, exc: Exception) -> None:
    """Mark ``job`` failed naming ``exc``: a core error by its message, any other by its
    type too (the traceback goes to the server log, never to the client)."""
    if isinstance(exc, RagloomError):
        job.error = str(exc)[:MAX_ERROR]
    else:
        logger.error("ragloom-server: job %s (%s) failed", job.id, job.source, exc_info=exc)
        job.error = f"{type(exc).__name__}: {exc}"[:MAX_ERROR]
    job.status = "failed"


def _model_name(model: EmbeddingModel) -> str:
    """The name ``ragloom ingest`` records in the manifest for ``model``."""
    return f"{type(model).__module__}.{type(model).__qualname__}"


Scalar = str | bool | int | float
_Upload = tuple[Job, str, "bytes | str", dict[str, Scalar]]


class IndexService:
    """Owns the index (its writer lock for the service's lifetime), the models, the
    ingestion thread and the conversation memories."""

    def __init__(
        self,
        settings: ServerSettings,
        *,
        embedding_model: EmbeddingModel | None = None,
        chat_model: ChatModel | None = None,
    ) -> None:
        self.settings = settings
        self.embedding_model = embedding_model or cast(
            EmbeddingModel, plugins.load_default(plugins.EMBEDDING_MODELS)
        )
        self.chat_model = chat_model
        self._owner = RagIndex.locked(settings.index, wait=0)
        self._owner.__enter__()  # released by close(): ragloom ingest waits meanwhile
        try:
            self.index = open_index(
                settings.index,
                settings.store.kind,
                settings.store.options,
                self.embedding_model.dimension,
                model=_model_name(self.embedding_model),
            )
        except StoreConfigError as exc:  # named store.kind / store.options already
            self._owner.__exit__(None, None, None)
            raise ServerConfigError(str(exc)) from None
        except BaseException:
            self._owner.__exit__(None, None, None)
            raise
        self.lock = ReadWriteLock()
        self._save_lock = threading.Lock()
        self.memories = ConversationMemories(settings.memory_users, settings.memory_messages)
        self.jobs: OrderedDict[str, Job] = OrderedDict()
        self._jobs_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._queue: queue.Queue[_Upload | None] = queue.Queue()
        self._accepting = True
        self._dirty = False
        self._worker = threading.Thread(target=self._work, name="ragloom-ingest", daemon=True)
        self._worker.start()

    # --- retrieval and answers ------------------------------------------------------------

    def retriever(
        self,
        principal: Principal,
        *,
        max_results: int,
        min_score: float = 0.0,
        filter: str | None = None,
        mode: Mode = "hybrid",
    ) -> ContentRetriever:
        """The CLI's retrieval for ``mode``, limited to the principal's tenant."""
        if mode == "keyword" and min_score:
            raise InvalidArgumentError(
                "min_score does not apply to mode keyword (BM25 scores are unbounded)"
            )
        try:
            parsed = parse_filter(filter) if filter else None
        except InvalidFilterError as exc:
            raise InvalidFilterError(f"filter: {exc}") from None
        scoped = principal.scope(parsed)
        keywords = self.index.keywords
        store = self.index.store
        model = self.embedding_model
        inner: ContentRetriever
        if mode == "keyword":
            inner = BM25ContentRetriever(keywords, max_results=max_results, filter=scoped)
        elif mode == "dense":
            inner = EmbeddingStoreContentRetriever(
                store, model, max_results=max_results, min_score=min_score, filter=scoped
            )
        else:
            inner = index_hybrid_retriever(
                store, keywords, model, max_results, min_score=min_score, filter=scoped
            )
        return _ReadLocked(inner, self.lock)

    @contextlib.contextmanager
    def assistant(
        self, retriever: ContentRetriever, memory: ChatMemory | None, system_prompt: str | None
    ) -> Iterator[RagAssistant | ExtractiveAssistant]:
        """The configured chat model over ``retriever``, else the extractive answer (as
        the CLI does); closed on exit."""
        if self.chat_model is None:
            yield ExtractiveAssistant(retriever)
            return
        with RagAssistant(
            self.chat_model,
            content_retriever=retriever,
            chat_memory=memory,
            system_prompt=system_prompt,
        ) as assistant:
            yield assistant

    # --- documents ------------------------------------------------------------------------

    def submit(
        self,
        principal: Principal,
        name: str,
        data: bytes | str,
        metadata: dict[str, Scalar] | None = None,
    ) -> Job:
        """Queue one upload with the client's ``metadata`` (validated by the caller: no
        reserved key) for ingestion; :class:`InvalidArgumentError` for a bad name."""
        if not self._accepting:
            raise RagloomError("the server is shutting down; retry on the next instance")
        source = safe_filename(name)
        job = Job(
            f"job-{next(self._ids)}-{time.time_ns() % 1_000_000:06d}", principal.tenant, source
        )
        with self._jobs_lock:
            self.jobs[job.id] = job
            while len(self.jobs) > self.settings.max_jobs:
                self.jobs.popitem(last=False)
        self._queue.put((job, source, data, dict(metadata or {})))
        return job

    def job(self, principal: Principal, job_id: str) -> Job | None:
        """The job ``job_id`` if it belongs to the principal's tenant."""
        with self._jobs_lock:
            job = self.jobs.get(job_id)
        return job if job is not None and principal.may_see(job.tenant) else None

    def sources(self, principal: Principal) -> list[SourceEntry]:
        """The documents in the index the principal may see, by id."""
        with self.lock.reading():
            entries = list(self.index.files.items())
        result = []
        for key, entry in sorted(entries):
            tenant = entry.get(TENANT)
            if principal.may_see(tenant):
                name = entry.get("name") or Path(key).name
                result.append(
                    SourceEntry(
                        key, name, tenant, entry["sha256"], json.loads(entry.get(METADATA, "{}"))
                    )
                )
        return result

    def passages(self, principal: Principal, source_id: str) -> list[TextSegment] | None:
        """The segments of the document ``source_id`` in document order (by ``start``);
        ``None`` when the principal has no such document. The index keeps segments, not
        the original file, so this is what can be read back."""
        with self.lock.reading():
            entry = self.index.files.get(source_id)
            if entry is None or not principal.may_see(entry.get(TENANT)):
                return None
            matches = self._segments_of(entry["document_id"])
        segments = [m.embedded for m in matches if m.embedded is not None]
        return sorted(segments, key=lambda s: (s.metadata.get("start") or 0, s.text))

    def delete(self, principal: Principal, source_id: str) -> bool:
        """Remove the document ``source_id`` (an id from :meth:`sources`); ``False`` when
        the principal has no such document."""
        with self.lock.writing():
            entry = self.index.files.get(source_id)
            if entry is None or not principal.may_see(entry.get(TENANT)):
                return False
            identity = entry["document_id"]
            self.index.mirrored.remove_all(filter=metadata_key("document_id").is_equal_to(identity))
            del self.index.files[source_id]
        self.save()
        return True

    def save(self) -> None:
        """Persist the index as readers see it (writers wait meanwhile)."""
        with self._save_lock, self.lock.reading():
            self.index.save()
            self._dirty = False

    def pending(self) -> int:
        """Uploads accepted but not yet ingested."""
        return self._queue.unfinished_tasks

    def _work(self) -> None:
        unsaved: list[Job] = []  # written, still ``running`` until a save covers them
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    break
                if self._ingest(*item):
                    unsaved.append(item[0])
                self._settle(unsaved, now=self._queue.empty() or self.index.store_persists_itself)
            except Exception:  # the worker must survive anything; the job says what failed
                logger.exception("ragloom-server: ingestion worker error")
            finally:
                self._queue.task_done()
        try:  # the jobs written since the last save; close() then saves once more
            self._settle(unsaved, now=True)
        except Exception:
            logger.exception("ragloom-server: saving the index at shutdown failed")

    def _settle(self, unsaved: list[Job], *, now: bool) -> None:
        """Save when ``now`` (or see that another save did), then mark ``unsaved`` done: a
        job a client sees ``done`` survives a crash. A failed save fails them, naming why."""
        try:
            if self._dirty and now:
                self.save()
        except Exception as exc:
            for job in unsaved:
                job.status, job.error = "failed", f"written but the index was not saved: {exc}"
            unsaved.clear()
            raise
        if not self._dirty:
            for job in unsaved:
                job.status = "done"
            unsaved.clear()

    def _ingest(
        self, job: Job, source: str, data: bytes | str, metadata: dict[str, Scalar]
    ) -> bool:
        """Ingest one upload; ``True`` when it wrote to the index (its job is done once
        saved)."""
        job.status = "running"
        key = f"{UPLOAD_PREFIX}{job.tenant or '-'}/{source}"
        raw = data.encode("utf-8") if isinstance(data, str) else data
        digest = hashlib.sha256(raw).hexdigest()
        known = self.index.files.get(key)
        recorded = json.dumps(metadata, sort_keys=True)
        if (
            known is not None
            and known["sha256"] == digest
            and known.get(METADATA, "{}") == recorded
        ):
            job.status = "unchanged"
            return False
        try:
            document = self._document(key, job.tenant, source, data, metadata)
            staged = _StagedWrites()
            outcome = EmbeddingStoreIngestor(staged, self.embedding_model).ingest([document])
            error = outcome.outcomes[0].error
            if error is not None:
                raise error
        except Exception as exc:  # a parser's or model's own bug too: the job says so
            _fail(job, exc)
            return False
        entry = {"sha256": digest, "document_id": key, "name": source}
        if metadata:
            entry[METADATA] = recorded  # the manifest holds strings: the metadata as JSON
        if job.tenant is not None:
            entry[TENANT] = job.tenant
        with self.lock.writing():
            before = self._all_segments_of(key) if known is not None else []
            try:
                for operation in staged.operations:
                    operation(self.index.mirrored)
            except Exception as exc:
                _fail(job, exc)  # first: should the undo raise too, the job still says why
                self._restore(key, before)
                return False
            self.index.files[key] = entry
            self._dirty = True
        job.segments = len(outcome.ids)
        return True

    def _segments_of(self, document_id: str) -> list[EmbeddingMatch]:
        """The stored segments of ``document_id`` read back as a resource (at most
        ``MAX_PASSAGES``)."""
        return self._search(metadata_key(DOCUMENT_ID).is_equal_to(document_id), MAX_PASSAGES)

    def _all_segments_of(self, document_id: str) -> list[EmbeddingMatch]:
        """Every stored segment of ``document_id`` with its vector, however many: one
        search when they fit in :data:`UNDO_PAGE`, else by ranges of their ``index``
        (a segment's id is its document's and its index, so a range of ``UNDO_PAGE``
        indexes holds at most ``UNDO_PAGE`` segments) until none lies beyond."""
        of_document = metadata_key(DOCUMENT_ID).is_equal_to(document_id)
        found = {m.embedding_id: m for m in self._search(of_document, UNDO_PAGE)}
        if len(found) < UNDO_PAGE:
            return list(found.values())
        index = metadata_key(INDEX)
        start = 0
        while True:
            end = start + UNDO_PAGE
            page = of_document & index.is_greater_than_or_equal_to(start) & index.is_less_than(end)
            found.update((m.embedding_id, m) for m in self._search(page, UNDO_PAGE))
            if not self._search(of_document & index.is_greater_than_or_equal_to(end), 1):
                return list(found.values())
            start = end

    def _search(self, filter: Filter, max_results: int) -> list[EmbeddingMatch]:
        """The first ``max_results`` segments ``filter`` selects, with their vectors (the
        query vector does not matter)."""
        request = EmbeddingSearchRequest(
            [1.0] * self.embedding_model.dimension, max_results=max_results, filter=filter
        )
        return self.index.store.search(request).matches

    def _restore(self, document_id: str, before: list[EmbeddingMatch]) -> None:
        """Put ``document_id`` back as ``before`` after a write failed halfway (the
        writer lock held): queries then see the old document, as if the job never ran."""
        self.index.mirrored.remove_all(filter=metadata_key("document_id").is_equal_to(document_id))
        kept = [m for m in before if m.embedded is not None]
        if kept:
            self.index.mirrored.add_all(
                [m.embedding for m in kept],
                [m.embedded for m in kept if m.embedded is not None],
                ids=[m.embedding_id for m in kept],
            )

    @staticmethod
    def _document(
        key: str, tenant: str | None, source: str, data: bytes | str, extra: dict[str, Scalar]
    ) -> Document:
        """The document of an upload: parsed by the parser for its type, with the client's
        ``extra`` metadata over the parser's and the server's (file name, id, tenant) over
        both: a client never sets those."""
        if isinstance(data, str):
            text = data
            metadata: dict[str, Any] = {}
        else:
            with tempfile.TemporaryDirectory(prefix="ragloom-upload-") as folder:
                path = Path(folder) / source
                path.write_bytes(data)
                parsed = FileSystemDocumentLoader.load_document(path)
            text = parsed.text
            metadata = {
                k: v
                for k, v in parsed.metadata.to_dict().items()
                if k not in {"absolute_directory_path", "file_name", TENANT, "document_id"}
            }
        metadata.update(extra)
        metadata.update({"file_name": source, "document_id": key})
        if tenant is not None:
            metadata[TENANT] = tenant
        return Document(text, metadata)

    # --- lifetime -------------------------------------------------------------------------

    def close(self) -> None:
        """Finish every accepted upload, save the index, release its lock."""
        if not self._accepting:
            return
        self._accepting = False
        self._queue.put(None)
        self._worker.join()
        try:
            self.save()
        finally:
            self.index.close()
            self._owner.__exit__(None, None, None)
