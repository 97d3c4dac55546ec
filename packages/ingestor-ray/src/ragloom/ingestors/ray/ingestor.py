"""RayIngestor: core's EmbeddingStoreIngestor semantics, scaled out on Ray Data.

Pipeline: documents (or file paths) -> a Ray dataset -> a pool of actors, each of which
builds its embedding model and its store once (from factories) and, per batch, loads,
transforms and splits the documents, then embeds and writes their segments. Splitting in
the actor is one Ray Data stage: no split worker processes to start and no segments to
pickle through the object store (measured: most of one actor's overhead over the single
process). ``split_num_cpus`` moves loading and splitting to Ray tasks of their own, for
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
import pickle
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
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


def _pack(values: Iterable[object]) -> np.ndarray[Any, np.dtype[np.object_]]:
    """A column of pickled Python objects (Ray Data stores them as Arrow binary)."""
    items = [pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL) for v in values]
    column = np.empty(len(items), dtype=object)
    column[:] = items
    return column


@ray.remote(num_cpus=0)
class _Attempts:
    """Counts, per key (a stage and an input position), the starts that never finished:
    a worker died on them.

    Ray Data redoes the batch of a lost task or actor without limit; this ledger is what
    bounds it, per document: see :class:`_Guard`.
    """

    def __init__(self) -> None:
        self.unfinished: dict[str, int] = {}

    def begin_batch(self, keys: list[str]) -> bool:
        """Start a whole batch (True) unless a worker was lost on one of them (False)."""
        if any(self.unfinished.get(k, 0) for k in keys):
            return False
        for k in keys:
            self.unfinished[k] = 1
        return True

    def begin(self, key: str) -> int:
        """Start one document; the number of earlier starts on it that never finished."""
        lost = self.unfinished.get(key, 0)
        self.unfinished[key] = lost + 1
        return lost

    def end(self, keys: list[str]) -> None:
        for k in keys:
            self.unfinished[k] = 0


class _Guard:
    """Runs a stage's batch so that a document that kills its worker is isolated.

    Normally the batch runs at once. When a worker died while holding one of its
    documents, Ray redoes the batch: it then runs document by document, and a document
    whose worker was lost more than ``max_retries`` times is reported as failed instead
    of being tried again, so the others finish (each stored once: writes are by id).
    """

    def __init__(self, attempts: Any, stage: str, max_retries: int) -> None:
        self.attempts = attempts
        self.stage = stage
        self.max_retries = max_retries

    def run(
        self,
        positions: Sequence[int],
        run: Callable[[list[int]], None],
        died: Callable[[int, RagloomError], None],
    ) -> None:
        """``run(indices)`` on the batch's documents; ``died(index, error)`` for a
        document given up on (indices into ``positions``)."""
        keys = [f"{self.stage}:{p}" for p in positions]
        if ray.get(self.attempts.begin_batch.remote(keys)):
            run(list(range(len(keys))))
            ray.get(self.attempts.end.remote(keys))
            return
        for index, key in enumerate(keys):
            lost = ray.get(self.attempts.begin.remote(key))
            if lost > self.max_retries:
                died(index, self._died(lost))
            else:
                run([index])
            ray.get(self.attempts.end.remote([key]))

    def _died(self, lost: int) -> RagloomError:
        return RagloomError(
            f"the worker process died {lost} times while {self.stage} it "
            f"(max_retries={self.max_retries}); the document was skipped"
        )


class _SplitStage:
    """Loading and splitting a batch: rows of pickled inputs -> plans. Called as a Ray
    task function (rows of pickled plans out) or from inside the embedding actor."""

    def __init__(self, splitter: _Splitter, guard: _Guard) -> None:
        self.splitter = splitter
        self.guard = guard

    def __call__(self, batch: dict[str, np.ndarray[Any, Any]]) -> dict[str, np.ndarray[Any, Any]]:
        """The task: the batch's plans, pickled for the embedding stage."""
        return {"position": batch["position"], "plan": _pack(self.plans(batch))}

    def plans(self, batch: dict[str, np.ndarray[Any, Any]]) -> list[Plan]:
        """Load and split the batch; a document that kills its worker (a parser or a
        transformer that crashes the process) is isolated by the guard."""
        items: list[Document | str] = [pickle.loads(raw) for raw in batch["item"]]
        plans: list[Plan] = []

        def run(indices: list[int]) -> None:
            plans.extend(self.splitter.plan(items[i]) for i in indices)

        def died(index: int, error: RagloomError) -> None:
            identity = _input_identity(items[index])
            plans.append((identity, RagloomError(f"{identity}: {error}")))

        self.guard.run([int(p) for p in batch["position"]], run, died)
        return plans


class _EmbedStage:
    """The Ray actor: builds the model and the store once, then embeds and writes batches
    (splitting them first when ``split`` is given: rows of inputs instead of plans)."""

    def __init__(
        self,
        model_factory: EmbeddingModelFactory,
        store_factory: EmbeddingStoreFactory,
        batch_size: int,
        on_start: Callable[[], None] | None,
        guard: _Guard,
        split: _SplitStage | None,
    ) -> None:
        if on_start is not None:
            on_start()
        self.writer = _Writer(store_factory(), model_factory(), batch_size)
        self.guard = guard
        self.split = split

    def __call__(self, batch: dict[str, np.ndarray[Any, Any]]) -> dict[str, np.ndarray[Any, Any]]:
        """Write the batch; a document that kills its worker is isolated by the guard."""
        plans: list[Plan] = (
            self.split.plans(batch)
            if self.split is not None
            else [pickle.loads(raw) for raw in batch["plan"]]
        )
        outcomes: list[DocumentOutcome] = []
        usage: TokenUsage | None = None

        def run(indices: list[int]) -> None:
            nonlocal usage
            done, done_usage = self.writer.write([plans[i] for i in indices])
            outcomes.extend(done)
            usage = done_usage + usage if done_usage is not None else usage

        def died(index: int, error: RagloomError) -> None:
            identity = plans[index][0]
            outcomes.append(DocumentOutcome(identity, error=RagloomError(f"{identity}: {error}")))

        self.guard.run([int(p) for p in batch["position"]], run, died)
        usages: list[TokenUsage | None] = [usage] + [None] * (len(outcomes) - 1)
        return {"position": batch["position"], "outcome": _pack(zip(outcomes, usages, strict=True))}


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
    raises (that one is not retried).
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
        # Ray Data redoes the batches of lost tasks and actors (its defaults, without
        # limit); the ledger bounds that per document (_Guard).
        attempts = _Attempts.remote()  # type: ignore[attr-defined]
        dataset: ray.data.Dataset = ray.data.from_items(
            [{"position": i, "item": pickle.dumps(item)} for i, item in enumerate(items)],
            override_num_blocks=max(1, min(len(items), self.concurrency * 4)),
        )
        split = _SplitStage(splitter, _Guard(attempts, "loading and splitting", self.max_retries))
        if self.split_num_cpus is not None:
            dataset = dataset.map_batches(
                split,  # an instance, not a class: runs as stateless tasks
                batch_size=self.documents_per_batch,
                batch_format="numpy",
                num_cpus=self.split_num_cpus,
            )
        embedded = dataset.map_batches(
            _EmbedStage,
            fn_constructor_args=(
                self.embedding_model_factory,
                self.store_factory,
                self.batch_size,
                self.on_actor_start,
                _Guard(attempts, "embedding and writing", self.max_retries),
                split if self.split_num_cpus is None else None,
            ),
            batch_size=self.documents_per_batch,
            batch_format="numpy",
            num_cpus=self.num_cpus,
            compute=ray.data.ActorPoolStrategy(size=self.concurrency),
        )
        try:
            return self._collect(embedded, len(items))
        finally:
            ray.kill(attempts)

    def _collect(self, dataset: Any, total: int) -> IngestionResult:
        """Stream the outcomes back, report progress, and order them as the input."""
        by_position: dict[int, DocumentOutcome] = {}
        usage: TokenUsage | None = None
        try:
            for row in dataset.iter_rows():
                outcome, batch_usage = pickle.loads(row["outcome"])
                by_position[int(row["position"])] = outcome
                if batch_usage is not None:
                    usage = batch_usage + usage
                if self.on_progress is not None:
                    self.on_progress(len(by_position), total)
        except ray.exceptions.RayError as exc:
            # A factory that fails in the workers, or a worker lost beyond max_retries:
            # documents already written stay written; a re-run completes the rest.
            if isinstance(exc, RagloomError):  # a RayTaskError wrapping a ragloom error
                raise
            raise RagloomError(f"Ray ingestion failed: {exc}") from exc
        missing = [i for i in range(total) if i not in by_position]
        if missing:
            raise RagloomError(f"Ray returned no outcome for input positions {missing[:10]}")
        return IngestionResult(usage, [by_position[i] for i in range(total)])
