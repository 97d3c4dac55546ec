"""RayIngestor on the local Ray cluster of scripts/services/ray.sh (a head and a worker
node: separate raylets and worker processes), writing from its actors into the real pgvector.

The reference is core's single-process EmbeddingStoreIngestor with the same model and
splitter, into the in-memory store: the pgvector table must hold the same ids, texts,
metadata and vectors (to 1e-6).
"""

from __future__ import annotations

import functools
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
import ray
from psycopg import sql

from ragloom.core import document_splitters
from ragloom.core.document import Document, TextSegment
from ragloom.core.embedding import EmbeddingModel, EmbeddingResult
from ragloom.core.errors import InvalidArgumentError, RagloomError
from ragloom.core.ingestor import EmbeddingStoreIngestor, IngestionResult
from ragloom.core.parsers.text import TextDocumentParser
from ragloom.core.stores.in_memory import InMemoryEmbeddingStore
from ragloom.embeddings.onnx import AllMiniLmL6V2QuantizedEmbeddingModel
from ragloom.ingestors.ray import RayIngestor
from ragloom.stores.pgvector import PgVectorEmbeddingStore
from ragloom.testkit import FakeEmbeddingModel

# This module's helpers travel to the Ray workers by value (pytest's importlib mode
# gives it a name the workers cannot import).
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.usefixtures("ray_cluster")]

DIMENSION = 64
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()  # noqa: SIM905


def corpus(count: int = 30) -> list[Document]:
    """Short documents of 1-4 segments; every third one with an explicit document_id."""
    documents = []
    for i in range(count):
        sentences = [
            " ".join(WORDS[(i + j + k) % len(WORDS)] for k in range(6)) + f" number {i}."
            for j in range(1 + i % 7)
        ]
        metadata = {"document_id": f"doc-{i}"} if i % 3 == 0 else {"url": f"https://x.test/{i}"}
        documents.append(Document(" ".join(sentences), metadata))
    return documents


def splitter() -> Any:
    return document_splitters.recursive(120, 0)


def pg_store(dsn: str, table: str) -> functools.partial[PgVectorEmbeddingStore]:
    return functools.partial(PgVectorEmbeddingStore, dsn, table, dimension=DIMENSION, pool_size=2)


def table_rows(dsn: str, table: str) -> dict[str, tuple[str, dict[str, Any], np.ndarray]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            sql.SQL("SELECT id, text, metadata, embedding::text FROM {}").format(
                sql.Identifier(table)
            )
        ).fetchall()
    return {r[0]: (r[1], r[2], np.array(json.loads(r[3]))) for r in rows}


def reference(documents: Sequence[Document]) -> tuple[IngestionResult, dict[str, Any]]:
    """What core's single-process ingestor writes for ``documents``."""
    store = InMemoryEmbeddingStore()
    result = EmbeddingStoreIngestor(
        store, FakeEmbeddingModel(DIMENSION), document_splitter=splitter(), batch_size=16
    ).ingest(documents)
    entries = json.loads(store.to_json())["entries"]
    return result, {e["id"]: (e["text"], e["metadata"], np.array(e["embedding"])) for e in entries}


def assert_same_content(actual: dict[str, Any], expected: dict[str, Any]) -> None:
    assert sorted(actual) == sorted(expected)
    for key, (text, metadata, vector) in expected.items():
        got_text, got_metadata, got_vector = actual[key]
        assert got_text == text
        assert got_metadata == metadata
        np.testing.assert_allclose(got_vector, vector, atol=1e-6)


def record_start(directory: str) -> None:
    """on_actor_start hook: each (re)started actor leaves a file in ``directory``, named
    after its process id, holding the id of the Ray node it runs on."""
    Path(directory, str(os.getpid())).write_text(ray.get_runtime_context().get_node_id())


def actor_nodes(directory: Path) -> dict[int, str]:
    """The process ids of the actors started so far, with their nodes (see record_start)."""
    return {int(p.name): p.read_text() for p in directory.iterdir() if p.read_text()}


def ray_ingestor(dsn: str, table: str, **options: Any) -> RayIngestor:
    options.setdefault("embedding_model_factory", functools.partial(FakeEmbeddingModel, DIMENSION))
    options.setdefault("documents_per_batch", 4)
    options.setdefault("num_cpus", 0.5)
    return RayIngestor(
        pg_store(dsn, table), document_splitter=splitter(), batch_size=16, concurrency=2, **options
    )


def one_actor_per_node(nodes: dict[str, float], split_tasks: bool = True) -> dict[str, Any]:
    """RayIngestor CPU options that put each actor on a node of its own (Ray's scheduler
    may otherwise pack both on one): an actor takes 90% of the smallest node's CPUs, the
    split tasks (when asked for) the rest."""
    actor_cpus = 0.9 * min(nodes.values())
    if actor_cpus <= max(nodes.values()) / 2:
        pytest.fail(f"nodes too different in size for this test: {nodes}", pytrace=False)
    split_cpus = min(nodes.values()) - actor_cpus if split_tasks else None
    return {"num_cpus": actor_cpus, "split_num_cpus": split_cpus}


@pytest.mark.parametrize("split_tasks", [False, True], ids=["split-in-actor", "split-tasks"])
def test_same_store_content_and_result_as_core_ingestor(
    pg_dsn: str,
    table_name: str,
    tmp_path: Path,
    ray_cluster: dict[str, float],
    split_tasks: bool,
) -> None:
    """The two actors run on two nodes of the cluster (separate raylets and processes);
    splitting in the actors or in tasks of its own gives the same store."""
    documents = corpus()
    expected_result, expected = reference(documents)
    progress: list[tuple[int, int]] = []

    actual_result = ray_ingestor(
        pg_dsn,
        table_name,
        on_progress=lambda d, t: progress.append((d, t)),
        on_actor_start=functools.partial(record_start, str(tmp_path)),
        **one_actor_per_node(ray_cluster, split_tasks),
    ).ingest(documents)

    assert actual_result.ids == expected_result.ids
    assert actual_result.token_usage == expected_result.token_usage
    assert actual_result.failures == []
    assert [o.document_id for o in actual_result.outcomes] == [
        o.document_id for o in expected_result.outcomes
    ]
    assert_same_content(table_rows(pg_dsn, table_name), expected)
    assert progress[-1] == (30, 30)
    assert len(progress) == 30
    used = set(actor_nodes(tmp_path).values())
    assert len(used) == 2
    assert used <= ray_cluster.keys()


def test_rerun_and_edit_converge_to_core_state(pg_dsn: str, table_name: str) -> None:
    documents = corpus()
    ingestor = ray_ingestor(pg_dsn, table_name)
    ingestor.ingest(documents)
    ingestor.ingest(documents)  # a re-run: no duplicates
    edited = [*documents[:-1], Document("a short new text.", documents[-1].metadata)]
    ingestor.ingest(edited)  # an edit: the old version's extra segments go away

    _, expected = reference(edited)
    assert_same_content(table_rows(pg_dsn, table_name), expected)


class PoisonModel(EmbeddingModel):
    """FakeEmbeddingModel, but any batch holding the word 'poison' raises."""

    def __init__(self) -> None:
        self.inner = FakeEmbeddingModel(DIMENSION)

    @property
    def dimension(self) -> int:
        return DIMENSION

    def embed_all(self, texts: Sequence[str | TextSegment]) -> EmbeddingResult:
        if any("poison" in (t if isinstance(t, str) else t.text) for t in texts):
            raise ValueError("cannot embed poison")
        return self.inner.embed_all(texts)


@pytest.mark.parametrize("documents_per_batch", [1, 4])
def test_poison_documents_and_bad_files_are_reported_others_written(
    pg_dsn: str, table_name: str, tmp_path: Path, documents_per_batch: int
) -> None:
    good_file = tmp_path / "good.txt"
    good_file.write_text("a file that is fine. it has two sentences.", encoding="utf-8")
    documents = corpus(12)
    documents[5] = Document("this one is poison for the model.", {"document_id": "bad"})
    inputs: list[Any] = [*documents, str(good_file), tmp_path / "missing.txt"]

    result = ray_ingestor(
        pg_dsn,
        table_name,
        embedding_model_factory=PoisonModel,
        documents_per_batch=documents_per_batch,
        document_parser=TextDocumentParser(),
    ).ingest(inputs)

    failed = {o.document_id: str(o.error) for o in result.failures}
    assert set(failed) == {"bad", f"file:{tmp_path / 'missing.txt'}"}
    assert "cannot embed poison" in failed["bad"]
    assert "missing.txt" in failed[f"file:{tmp_path / 'missing.txt'}"]
    good_docs = [d for d in documents if d.metadata.get("document_id") != "bad"]
    loaded = Document(
        good_file.read_text(), {"file_name": "good.txt", "absolute_directory_path": str(tmp_path)}
    )
    _, expected = reference([*good_docs, loaded])
    assert_same_content(table_rows(pg_dsn, table_name), expected)
    assert result.ids == list(expected_ids_in_order(result))


def expected_ids_in_order(result: IngestionResult) -> list[str]:
    return [i for o in result.outcomes if o.error is None for i in o.segment_ids]


def test_bad_settings_are_rejected() -> None:
    with pytest.raises(InvalidArgumentError, match="concurrency"):
        RayIngestor(lambda: InMemoryEmbeddingStore(), concurrency=0)
    with pytest.raises(InvalidArgumentError, match="model_threads must be None or an int >= 1"):
        RayIngestor(lambda: InMemoryEmbeddingStore(), model_threads=0)
    assert RayIngestor(lambda: InMemoryEmbeddingStore()).ingest([]).outcomes == []


class SlowModel(FakeEmbeddingModel):
    """FakeEmbeddingModel that takes a while per batch, so a run can be killed mid-way."""

    def embed_all(self, texts: Sequence[str | TextSegment]) -> EmbeddingResult:
        time.sleep(0.15)
        return super().embed_all(texts)


def test_actor_killed_mid_run_job_finishes_with_core_state(
    pg_dsn: str, table_name: str, tmp_path: Path, ray_cluster: dict[str, float]
) -> None:
    """The actor process on a worker node (not the head) is SIGKILLed after the first
    write; its node's raylet restarts it (the only node with room) and the job finishes."""
    documents = corpus()
    pids = tmp_path / "pids"
    pids.mkdir()
    head = next(n["NodeID"] for n in ray.nodes() if "node:__internal_head__" in n["Resources"])
    killed: list[tuple[int, str, float]] = []

    def kill_worker_node_actor_after_first_write() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            started = [(pid, node) for pid, node in actor_nodes(pids).items() if node != head]
            try:
                written = len(table_rows(pg_dsn, table_name))
            except psycopg.errors.UndefinedTable:
                written = 0
            if started and written:
                pid, node = started[0]
                os.kill(pid, signal.SIGKILL)
                killed.append((pid, node, time.monotonic()))
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_worker_node_actor_after_first_write)
    killer.start()
    result = ray_ingestor(
        pg_dsn,
        table_name,
        embedding_model_factory=functools.partial(SlowModel, DIMENSION),
        on_actor_start=functools.partial(record_start, str(pids)),
        max_retries=3,
        **one_actor_per_node(ray_cluster),
    ).ingest(documents)
    finished = time.monotonic()
    killer.join()

    assert killed, "no actor was killed"
    _, killed_node, kill_time = killed[0]
    assert kill_time < finished, "the kill came after the run"
    assert list(actor_nodes(pids).values()).count(killed_node) >= 2  # restarted on its node
    assert result.failures == []
    expected_result, expected = reference(documents)
    assert result.ids == expected_result.ids
    assert_same_content(table_rows(pg_dsn, table_name), expected)


def test_default_onnx_model_loaded_in_actor_gives_core_vectors(
    pg_dsn: str, table_name: str
) -> None:
    """No model factory: each actor loads the installed default (embedding-onnx) once."""
    documents = corpus(6)
    result = RayIngestor(
        functools.partial(PgVectorEmbeddingStore, pg_dsn, table_name, dimension=384, pool_size=1),
        document_splitter=splitter(),
        concurrency=1,
        num_cpus=0.5,
    ).ingest(documents)

    store = InMemoryEmbeddingStore()
    expected_result = EmbeddingStoreIngestor(store, document_splitter=splitter()).ingest(documents)
    assert result.ids == expected_result.ids
    assert result.token_usage == expected_result.token_usage
    expected = {
        e["id"]: (e["text"], e["metadata"], np.array(e["embedding"]))
        for e in json.loads(store.to_json())["entries"]
    }
    assert_same_content(table_rows(pg_dsn, table_name), expected)


class ThreadsRecordingModel(AllMiniLmL6V2QuantizedEmbeddingModel):
    """The default ONNX model, writing the intra-op threads its session got to ``path``."""

    def __init__(self, path: str, intra_op_threads: int | None = None) -> None:
        super().__init__(intra_op_threads=intra_op_threads)
        self.path = path

    def embed_all(self, texts: Sequence[str | TextSegment]) -> EmbeddingResult:
        options = self.load().session.get_session_options()
        Path(self.path).write_text(str(options.intra_op_num_threads))
        return super().embed_all(texts)


@pytest.mark.parametrize(
    ("factory_threads", "model_threads", "expected"),
    [(None, None, 1), (None, 2, 2), (3, None, 3)],
    ids=["default-share", "model_threads", "factory-choice-kept"],
)
def test_actor_sizes_the_model_threads_to_its_cpus_unless_told(
    pg_dsn: str,
    table_name: str,
    tmp_path: Path,
    factory_threads: int | None,
    model_threads: int | None,
    expected: int,
) -> None:
    """onnxruntime's default is a thread per physical core in every actor: the actor
    (num_cpus=0.5) gives the model 1, or model_threads; a count the factory set stays."""
    path = tmp_path / "threads"
    result = RayIngestor(
        functools.partial(PgVectorEmbeddingStore, pg_dsn, table_name, dimension=384, pool_size=1),
        functools.partial(ThreadsRecordingModel, str(path), factory_threads),
        document_splitter=splitter(),
        num_cpus=0.5,
        model_threads=model_threads,
    ).ingest(corpus(2))
    assert result.failures == []
    assert path.read_text() == str(expected)


def test_store_factory_failing_in_workers_raises_a_ragloom_error(
    pg_dsn: str, table_name: str
) -> None:
    """A missing table with create_table=False: the store cannot be built in the actor."""
    ingestor = RayIngestor(
        functools.partial(PgVectorEmbeddingStore, pg_dsn, table_name, create_table=False),
        functools.partial(FakeEmbeddingModel, DIMENSION),
        document_splitter=splitter(),
        num_cpus=0.5,
        split_num_cpus=0.5,
    )
    with pytest.raises(RagloomError, match=f"{table_name} does not exist"):
        ingestor.ingest(corpus(2))


class CrashingModel(FakeEmbeddingModel):
    """Kills its own worker process when asked to embed a text containing "CRASH"."""

    def embed_all(self, texts: Sequence[str | TextSegment]) -> EmbeddingResult:
        if any("CRASH" in (t if isinstance(t, str) else t.text) for t in texts):
            os.kill(os.getpid(), signal.SIGKILL)
        return super().embed_all(texts)


def test_document_killing_its_worker_is_reported_after_max_retries(
    pg_dsn: str, table_name: str
) -> None:
    """Ray redoes a lost batch without limit; the ingestor stops at max_retries per document."""
    documents = corpus(8)
    documents[5] = Document("this one CRASH es the worker", {"document_id": "poison"})
    result = ray_ingestor(
        pg_dsn,
        table_name,
        embedding_model_factory=functools.partial(CrashingModel, DIMENSION),
        max_retries=1,
    ).ingest(documents)

    assert [f.document_id for f in result.failures] == ["poison"]
    assert "died 2 times" in str(result.failures[0].error)
    good = documents[:5] + documents[6:]
    expected_result, expected = reference(good)
    assert result.ids == expected_result.ids
    assert_same_content(table_rows(pg_dsn, table_name), expected)


class CrashingTransformer:
    """A document transformer that ends its worker process (as a crashing native parser
    would) on a document containing "CRASH"."""

    def transform(self, document: Document) -> Document | None:
        if "CRASH" in document.text:
            os._exit(1)
        return document

    def transform_all(self, documents: Sequence[Document]) -> list[Document]:
        return [d for d in documents if self.transform(d) is not None]


@pytest.mark.parametrize("split_num_cpus", [None, 0.5], ids=["split-in-actor", "split-tasks"])
def test_document_killing_its_split_worker_is_reported_others_written_once(
    pg_dsn: str, table_name: str, tmp_path: Path, split_num_cpus: float | None
) -> None:
    """Ray redoes a lost split task (or actor) without limit (the job never ended); the
    batch is redone one document at a time and the killer reported after max_retries."""
    documents = corpus(8)
    documents[2] = Document("this one CRASH es the parser", {"document_id": "poison"})
    crash_file = tmp_path / "crash.txt"
    crash_file.write_text("a file that CRASH es the parser too.", encoding="utf-8")
    result = ray_ingestor(
        pg_dsn,
        table_name,
        document_transformer=CrashingTransformer(),
        document_parser=TextDocumentParser(),
        max_retries=1,
        split_num_cpus=split_num_cpus,
    ).ingest([*documents, crash_file])

    failed = {f.document_id: str(f.error) for f in result.failures}
    assert set(failed) == {"poison", f"file:{crash_file}"}
    for identity, error in failed.items():
        assert error.startswith(f"{identity}: the worker process died 2 times while loading")
    good = documents[:2] + documents[3:]
    expected_result, expected = reference(good)
    assert result.ids == expected_result.ids
    assert_same_content(table_rows(pg_dsn, table_name), expected)
