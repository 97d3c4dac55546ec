"""RayIngestor: core's EmbeddingStoreIngestor semantics, scaled out on Ray actors.

Pipeline: documents (or file paths) -> batches of ``documents_per_batch`` -> a pool of
plain Ray actors, each of which builds its embedding model and its store once (from
factories) and, per batch, loads, transforms and splits the documents, then embeds and
writes their segments. The driver keeps two batches queued on each actor and blocks in
``ray.wait`` between results. No Ray Data: its executor loop, its stats and autoscaling
actors and the ledger that bounded its unbounded retries cost 0.12 of a core while a
job ran (measured, docs/distributed-ingestion.md); the driver now counts the deaths
itself. ``split_num_cpus`` moves loading and splitting to Ray tasks of their own, for
parsers heavy enough to want cores beside the embedding.

The segments, ids, versions and writes are core's: the split stage and the writer stage
are thin subclasses of :class:`~ragloom.core.ingestor.EmbeddingStoreIngestor` calling its
own steps, so a store filled here equals one filled by the single-process ingestor
(same ids from ``segment_id(document_identity(doc), index)``, same vectors), and a
re-run after a failure or a killed worker converges to the same state: writes overwrite
by id, then stale versions are removed, per document.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol, cast, runtime_checkable

import ray

from ragloom.core import plugins
from ragloom.core.document import Document, TextSegment
from ragloom.core.embedding import EmbeddingModel, TokenUsage
from ragloom.core.errors import InvalidArgumentError, PluginError, RagloomError
from ragloom.core.ingestor import (
    DocumentOutcome,
    EmbeddingStoreIngestor,
    IngestionResult,
    document_identity,
)
from ragloom.core.loaders.file_system import FileSystemDocumentLoader
from ragloom.core.parsers.base import DocumentParser
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
    "EmbeddingModelFactory",
    "EmbeddingStoreFactory",
    "Plan",
    "default_embedding_model",
    "RayIngestor",
]

EmbeddingModelFactory = Callable[[], EmbeddingModel]
"""Builds the embedding model inside an actor (called once per actor)."""
EmbeddingStoreFactory = Callable[[], EmbeddingStore]
"""Builds the store inside an actor; its client must work from a worker process."""

Plan = tuple[str, list[TextSegment] | RagloomError]
"""A document's identity and its segments, or why it could not be split."""


def default_embedding_model() -> EmbeddingModel:
    """The installed default embedding model (core's plugin loader; e.g. embedding-onnx)."""
    return cast(EmbeddingModel, plugins.load_default(plugins.EMBEDDING_MODELS))


def _input_identity(item: Document | str) -> str:
    """The identity a document or a file path is reported (and stored) under."""
    return f"file:{Path(item).absolute()}" if isinstance(item, str) else document_identity(item)


def _error(identity: str, exc: BaseException) -> RagloomError:
    """A picklable ragloom error naming the document (as core's ingestor words it)."""
    if isinstance(exc, RagloomError):
        return exc
    return RagloomError(f"{identity}: {type(exc).__name__}: {exc}")


class _Splitter(EmbeddingStoreIngestor):
    """Core's transform-and-split step, without a store or a model (runs in Ray tasks)."""

    def __init__(
        self,
        splitter: DocumentSplitter | None,
        document_transformer: DocumentTransformer | None,
        text_segment_transformer: TextSegmentTransformer | None,
        parser: DocumentParser | None,
    ) -> None:
        self.document_splitter = splitter or cast(
            DocumentSplitter, plugins.load_default(plugins.DOCUMENT_SPLITTERS)
        )
        self.document_transformer = document_transformer
        self.text_segment_transformer = text_segment_transformer
        self.parser = parser

    def plan(self, item: Document | str) -> Plan:
        """Load ``item`` if it is a path, then split it; a failure is the document's."""
        if isinstance(item, str):
            path = item
            try:
                item = FileSystemDocumentLoader.load_document(path, self.parser)
            except PluginError:
                raise  # a broken installation, not a bad file
            except Exception as exc:
                return _input_identity(path), _error(path, exc)
        identity = document_identity(item)
        try:
            return identity, self.split_document(item, identity)
        except Exception as exc:
            return identity, _error(identity, exc)


class _Writer(EmbeddingStoreIngestor):
    """Core's embed-and-write step over pre-split documents (runs in an actor)."""

    def __init__(self, store: EmbeddingStore, model: EmbeddingModel, batch_size: int) -> None:
        self.embedding_store = store
        self.embedding_model = model
        self.batch_size = batch_size
        self.on_progress = None

    def write(self, plans: Sequence[Plan]) -> tuple[list[DocumentOutcome], TokenUsage | None]:
        """Embed and write ``plans``; when the batch fails, isolate the poison documents.

        A batch whose embedding raises is retried one document at a time, so the
        documents that fail are reported (each once) and the others are written.
        """
        total = sum(len(p) for _, p in plans if isinstance(p, list))
        outcomes: list[DocumentOutcome] = []
        try:
            usage, _ = self.write_documents(plans, outcomes, None, 0, total)
            return outcomes, usage
        except Exception as exc:
            if len(plans) == 1:
                return [DocumentOutcome(plans[0][0], error=_error(plans[0][0], exc))], None
        outcomes, usage = [], None
        for identity, plan in plans:
            try:
                usage, _ = self.write_documents([(identity, plan)], outcomes, usage, 0, total)
            except Exception as exc:
                outcomes.append(DocumentOutcome(identity, error=_error(identity, exc)))
        return outcomes, usage


@runtime_checkable
class _Threaded(Protocol):
    """A model whose intra-op thread count can be set before it loads (embedding-onnx)."""

    intra_op_threads: int | None


class _EmbedActor:
    """The Ray actor: builds the model and the store once, then embeds and writes batches
    (loading and splitting them first when it has the ``splitter``)."""

    def __init__(
        self,
        model_factory: EmbeddingModelFactory,
        store_factory: EmbeddingStoreFactory,
        batch_size: int,
        on_start: Callable[[], None] | None,
        splitter: _Splitter | None,
        model_threads: int,
    ) -> None:
        if on_start is not None:
            on_start()
        model = model_factory()
        if isinstance(model, _Threaded) and model.intra_op_threads is None:
            # The model's own default is the whole machine, in every actor of the node.
            model.intra_op_threads = model_threads
        self.writer = _Writer(store_factory(), model, batch_size)
        self.splitter = splitter

    def ready(self) -> None:
        """Answers once the actor is constructed (the driver's probe after a restart)."""

    def write(self, items: list[Any]) -> tuple[list[DocumentOutcome], TokenUsage | None]:
        """Embed and write a batch: inputs (Documents, paths) when the actor splits, else
        plans; one outcome per item, in order, and the batch's token usage."""
        splitter = self.splitter
        plans: list[Plan] = items if splitter is None else [splitter.plan(i) for i in items]
        return self.writer.write(plans)


def _split(splitter: _Splitter, items: list[Document | str]) -> tuple[int, list[Plan]]:
    """The split task: the batch's plans (and their count, a small first return value
    the driver reads to learn that the task finished, without fetching the plans)."""
    return len(items), [splitter.plan(item) for item in items]


_LOST = (
    ray.exceptions.RayActorError,  # the actor's process died (or is restarting)
    ray.exceptions.WorkerCrashedError,  # a split task's process died
)


class _Batch:
    """Documents (input positions) that travel together, and their plans once split."""

    def __init__(self, positions: list[int], plans: Any = None) -> None:
        self.positions = positions
        self.plans = plans  # an ObjectRef of the split task's plans, in split-task mode


class _Run:
    """One ``ingest`` call's driver: feeds the actors (and split tasks), blocks in
    ``ray.wait`` for the next result, and bounds the redo of documents whose worker died.

    Each actor has at most two batches queued (the next is already there when one ends).
    When a worker dies, the batch it was running counts one death for each of its
    documents, which are then redone one at a time; a document whose worker died more
    than ``max_retries`` times is reported as failed. Batches queued behind it on the
    same actor never started: they are redone without counting. After a death the actor
    gets nothing until it answers a probe, then one batch at a time while documents that
    saw a death are involved (see :meth:`_room`).
    """

    def __init__(self, ingestor: RayIngestor, items: list[Document | str]) -> None:
        self.ingestor = ingestor
        self.items = items
        self.outcomes: dict[int, DocumentOutcome] = {}
        self.usage: TokenUsage | None = None
        self.deaths: dict[int, int] = {}
        self.to_split: deque[_Batch] = deque()
        self.to_write: deque[_Batch] = deque()
        self.splitting: dict[Any, tuple[Any, _Batch]] = {}  # count ref -> (plans ref, batch)
        self.writing: dict[Any, int] = {}  # result ref -> actor index
        step = ingestor.documents_per_batch
        batches = [
            _Batch(list(range(i, min(i + step, len(items))))) for i in range(0, len(items), step)
        ]
        split_tasks = ingestor.split_num_cpus is not None
        (self.to_split if split_tasks else self.to_write).extend(batches)
        self.write_stage = (
            "embedding and writing" if split_tasks else "loading, splitting, embedding and writing"
        )

    def run(self, actors: list[Any], splitter: Any) -> None:
        """Until every document has its outcome."""
        queues: list[deque[tuple[Any, _Batch]]] = [deque() for _ in actors]
        probes: dict[Any, int] = {}  # ready() ref -> the restarting actor's index
        split: Any = ray.remote(_split).options(  # Ray's stubs type one return value
            num_cpus=self.ingestor.split_num_cpus, max_retries=0, num_returns=2
        )
        while self.to_split or self.to_write or self.splitting or self.writing:
            while self.to_split and len(self.splitting) < 2 * len(actors):
                batch = self.to_split.popleft()
                count, plans = split.remote(splitter, [self.items[p] for p in batch.positions])
                self.splitting[count] = (plans, batch)
            down = set(probes.values())
            for index, actor in enumerate(actors):
                while (
                    index not in down
                    and self.to_write
                    and len(queues[index]) < self._room(queues[index])
                ):
                    batch = self.to_write.popleft()
                    work = (
                        batch.plans
                        if batch.plans is not None
                        else [self.items[p] for p in batch.positions]
                    )
                    ref = actor.write.remote(work)
                    queues[index].append((ref, batch))
                    self.writing[ref] = index
            waiting = [*self.splitting, *self.writing, *probes]
            if not waiting:
                continue  # only documents given up on were left
            [ready], _ = ray.wait(waiting, num_returns=1)
            if ready in self.splitting:
                plans, batch = self.splitting.pop(ready)
                try:
                    ray.get(ready)
                except _LOST:
                    self._lost(batch, "loading and splitting")
                    continue
                self.to_write.append(_Batch(batch.positions, plans))
            elif ready in probes:
                index = probes.pop(ready)
                if not self._alive(ready):
                    probes[actors[index].ready.remote()] = index
            else:
                index = self.writing[ready]
                if self._written(queues[index], ready):
                    # Work sent before Ray knows of the restart would fail unrun (and be
                    # counted as a death): nothing more goes to it until it answers.
                    probes[actors[index].ready.remote()] = index

    def _room(self, queue: deque[tuple[Any, _Batch]]) -> int:
        """How many batches an actor may hold: two, or one while a batch of documents
        on which a worker died is involved. A process that dies may take the reply of
        the batch before with it, so only a lone batch's death is surely its own."""
        batches = [batch for _, batch in queue] + [self.to_write[0]]
        return 1 if any(p in self.deaths for b in batches for p in b.positions) else 2

    def _alive(self, probe: Any) -> bool:
        """Whether a restarting actor answered (False: ask again; it restarts forever
        unless its construction raises, which ends the run)."""
        try:
            ray.get(probe)
        except ray.exceptions.RayActorError as exc:
            if exc.actor_init_failed:
                raise RagloomError(f"Ray ingestion failed: {exc}") from exc
            return False
        return True

    def _written(self, queue: deque[tuple[Any, _Batch]], ready: Any) -> bool:
        """Take the results of ``queue`` (one actor's batches, in the order it runs
        them) up to ``ready``; when its worker died (True), redo the batches behind it."""
        died = False
        while queue:
            ref, batch = queue.popleft()
            del self.writing[ref]
            if died:
                self.to_write.append(batch)  # never started: again, as it was
                continue
            try:
                outcomes, usage = ray.get(ref)
            except _LOST as exc:
                if isinstance(exc, ray.exceptions.RayActorError) and exc.actor_init_failed:
                    raise RagloomError(f"Ray ingestion failed: {exc}") from exc
                died = True
                self._lost(batch, self.write_stage)
                continue
            self._done(batch, outcomes, usage)
            if ref == ready:
                break
        return died

    def _done(
        self, batch: _Batch, outcomes: list[DocumentOutcome], usage: TokenUsage | None
    ) -> None:
        if len(outcomes) != len(batch.positions):
            raise RagloomError(
                f"Ray returned {len(outcomes)} outcomes for {len(batch.positions)} documents"
            )
        if usage is not None:
            self.usage = usage + self.usage
        for position, outcome in zip(batch.positions, outcomes, strict=True):
            self.outcomes[position] = outcome
            if self.ingestor.on_progress is not None:  # per document, as core's ingestor
                self.ingestor.on_progress(len(self.outcomes), len(self.items))

    def _lost(self, batch: _Batch, stage: str) -> None:
        """The worker died on ``batch``: one death for each document, each redone alone
        (split again in split-task mode), or reported once it died more than
        ``max_retries`` times."""
        queue = self.to_split if self.ingestor.split_num_cpus is not None else self.to_write
        for position in batch.positions:
            lost = self.deaths[position] = self.deaths.get(position, 0) + 1
            if lost <= self.ingestor.max_retries:
                queue.append(_Batch([position]))
                continue
            identity = _input_identity(self.items[position])
            self.outcomes[position] = DocumentOutcome(
                identity,
                error=RagloomError(
                    f"{identity}: the worker process died {lost} times while {stage} it "
                    f"(max_retries={self.ingestor.max_retries}); the document was skipped"
                ),
            )


class RayIngestor:
    """Ingests documents on a Ray cluster with the single-process ingestor's results.

    ``store_factory`` and ``embedding_model_factory`` are called inside each actor (they
    are pickled to the workers, so use module-level functions or picklable callables);
    the model factory defaults to the installed default model (embedding-onnx). The
    splitter and transformers are pickled as they are; ``None`` means the installed
    default splitter. ``concurrency`` actors load, split, embed and write, each with
    ``num_cpus`` CPUs; ``documents_per_batch`` documents go to an actor at a time
    (embedded in chunks of ``batch_size`` segments). With ``split_num_cpus`` set,
    loading and splitting run in Ray tasks of that many CPUs instead (worth it only when
    parsing costs about as much as embedding: each stage boundary starts worker processes
    and pickles the segments through the object store). A task or actor killed mid-batch
    is restarted and its batch redone, one document at a time; a document on which a
    worker died more than ``max_retries`` times (e.g. its parser crashes the process) is
    reported in ``failures``, as is a document whose loading, splitting or embedding
    raises (that one is not retried). ``model_threads`` (default: the actor's whole CPUs,
    at least 1) becomes the model's ``intra_op_threads`` when the model has that option
    and its factory left it unset (embedding-onnx's default is a thread per physical core
    of the machine, in every actor: oversubscribed as soon as two actors share a node).
    """

    def __init__(
        self,
        store_factory: EmbeddingStoreFactory,
        embedding_model_factory: EmbeddingModelFactory | None = None,
        *,
        document_splitter: DocumentSplitter | None = None,
        document_transformer: DocumentTransformer | DocumentFunction | None = None,
        text_segment_transformer: TextSegmentTransformer | TextSegmentFunction | None = None,
        document_parser: DocumentParser | None = None,
        batch_size: int = 64,
        documents_per_batch: int = 32,
        concurrency: int = 1,
        num_cpus: float = 1.0,
        split_num_cpus: float | None = None,
        max_retries: int = 3,
        on_progress: ProgressCallback | None = None,
        on_actor_start: Callable[[], None] | None = None,
        model_threads: int | None = None,
    ) -> None:
        for name, value in (
            ("batch_size", batch_size),
            ("documents_per_batch", documents_per_batch),
            ("concurrency", concurrency),
        ):
            if type(value) is not int or value < 1:
                raise InvalidArgumentError(f"{name} must be an int >= 1, got {value!r}")
        if type(max_retries) is not int or max_retries < 0:
            raise InvalidArgumentError(f"max_retries must be an int >= 0, got {max_retries!r}")
        if model_threads is not None and (type(model_threads) is not int or model_threads < 1):
            raise InvalidArgumentError(
                f"model_threads must be None or an int >= 1, got {model_threads!r}"
            )
        if not (num_cpus > 0 and (split_num_cpus is None or split_num_cpus > 0)):
            raise InvalidArgumentError(
                f"num_cpus and split_num_cpus must be > 0, got {num_cpus!r}, {split_num_cpus!r}"
            )
        self.store_factory = store_factory
        self.embedding_model_factory = embedding_model_factory or default_embedding_model
        self.document_splitter = document_splitter
        # Plain functions adapted as core's ingestor does (pickled to the workers as such).
        self.document_transformer = (
            None if document_transformer is None else as_document_transformer(document_transformer)
        )
        self.text_segment_transformer = (
            None
            if text_segment_transformer is None
            else as_text_segment_transformer(text_segment_transformer)
        )
        self.document_parser = document_parser
        self.batch_size = batch_size
        self.documents_per_batch = documents_per_batch
        self.concurrency = concurrency
        self.num_cpus = num_cpus
        self.split_num_cpus = split_num_cpus
        self.max_retries = max_retries
        self.on_progress = on_progress
        self.on_actor_start = on_actor_start
        self.model_threads = model_threads or max(1, int(num_cpus))

    def ingest(
        self, documents: Document | Iterable[Document | str | os.PathLike[str]]
    ) -> IngestionResult:
        """Ingest documents and/or file paths; the result lists them in input order.

        Uses the connected Ray cluster (``ray.init`` is called with defaults when none
        is). Progress, when asked, is reported as ``on_progress(documents_done, total)``.
        """
        items: list[Document | str] = (
            [documents]
            if isinstance(documents, Document)
            else [d if isinstance(d, Document) else os.fspath(d) for d in documents]
        )
        for item in items:
            if not isinstance(item, Document | str):
                raise InvalidArgumentError(
                    f"expected Documents or file paths, got {type(item).__name__}"
                )
        if not items:
            return IngestionResult(None, [])
        if not ray.is_initialized():
            ray.init()
        splitter = _Splitter(
            self.document_splitter,
            self.document_transformer,
            self.text_segment_transformer,
            self.document_parser,
        )
        split_tasks = self.split_num_cpus is not None
        actor_class = ray.remote(_EmbedActor).options(
            num_cpus=self.num_cpus,
            max_restarts=-1,  # a killed actor comes back; _Run bounds the redo per document
            max_task_retries=0,
            scheduling_strategy="SPREAD",
        )
        actors: list[Any] = [
            actor_class.remote(
                self.embedding_model_factory,
                self.store_factory,
                self.batch_size,
                self.on_actor_start,
                None if split_tasks else splitter,
                self.model_threads,
            )
            for _ in range(self.concurrency)
        ]
        run = _Run(self, items)
        try:
            run.run(actors, ray.put(splitter) if split_tasks else None)
        except ray.exceptions.RayError as exc:
            # A factory or a step that raised in the workers: documents already written
            # stay written; a re-run completes the rest.
            if isinstance(exc, RagloomError):  # a RayTaskError wrapping a ragloom error
                raise
            raise RagloomError(f"Ray ingestion failed: {exc}") from exc
        finally:
            for actor in actors:
                ray.kill(actor, no_restart=True)
        missing = [i for i in range(len(items)) if i not in run.outcomes]
        if missing:
            raise RagloomError(f"Ray returned no outcome for input positions {missing[:10]}")
        return IngestionResult(run.usage, [run.outcomes[i] for i in range(len(items))])
