"""InMemoryEmbeddingStore with quantized and HNSW indexes: conformance, recall, staying in step."""

from __future__ import annotations

import dataclasses
import gc
import json
import re
import struct
import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from usearch.index import Index  # type: ignore[import-untyped,unused-ignore]

from ragloom.core import (
    EmbeddingSearchRequest,
    EmbeddingStoreError,
    InMemoryEmbeddingStore,
    TextSegment,
    metadata_key,
)
from ragloom.core.filters import Filter
from ragloom.core.stores._faiss import FaissGraphFile
from ragloom.core.stores._usearch import GraphFile, HnswGraph, native_dtype
from ragloom.core.stores.hnsw import HnswIndex
from ragloom.core.stores.quantized import IndexOptions, QuantizedIndex, _popcount_table
from ragloom.testkit import EmbeddingStoreFilterSuite, EmbeddingStoreSuite

KINDS = ("int8", "binary", "hnsw", "hnsw-faiss")  # hnsw-faiss: hnsw_engine="faiss"
ENGINES = ("usearch", "faiss")
ROWS = 20_000
DIMENSION = 384


class TestInt8Conformance(EmbeddingStoreSuite, EmbeddingStoreFilterSuite):
    @pytest.fixture
    def store(self) -> InMemoryEmbeddingStore:
        return InMemoryEmbeddingStore(index=IndexOptions("int8", exact_below=0))


class TestBinaryConformance(EmbeddingStoreSuite, EmbeddingStoreFilterSuite):
    @pytest.fixture
    def store(self) -> InMemoryEmbeddingStore:
        return InMemoryEmbeddingStore(
            index=IndexOptions("binary", oversample=4, min_candidates=32, exact_below=0)
        )


class TestHnswConformance(EmbeddingStoreSuite, EmbeddingStoreFilterSuite):
    @pytest.fixture(params=ENGINES)
    def store(self, request: pytest.FixtureRequest) -> InMemoryEmbeddingStore:
        return InMemoryEmbeddingStore(  # the walk runs above 32 rows
            index=IndexOptions("hnsw", exact_below=0, hnsw_engine=request.param)
        )


def clustered(count: int, seed: int = 0, noise: float = 1.0) -> npt.NDArray[np.float32]:
    """A mixture of 300 clusters in 384-d with a power-law spectrum and a shared offset.

    noise=1.0 gives the statistics of MiniLM sentence embeddings: mean pairwise cosine
    about 0.24, the 10th neighbour at about 0.67.
    """
    rng = np.random.default_rng(seed)
    spectrum = np.sqrt((1.0 + np.arange(DIMENSION)) ** -0.5)
    basis, _ = np.linalg.qr(rng.standard_normal((DIMENSION, DIMENSION)))
    centers = (rng.standard_normal((300, DIMENSION)) * spectrum) @ basis.T
    offset = rng.standard_normal(DIMENSION)
    offset *= 0.8 * np.linalg.norm(centers, axis=1).mean() / np.linalg.norm(offset)
    labels = rng.integers(0, 300, count)
    noise_part = (rng.standard_normal((count, DIMENSION)) * spectrum) @ basis.T
    return (centers[labels] + noise * noise_part + offset).astype(np.float32)


@pytest.fixture(scope="module")
def data() -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    vectors = clustered(ROWS + 50)
    return vectors[:ROWS], vectors[ROWS:]


def _ids(count: int) -> list[str]:
    return [f"r{i}" for i in range(count)]


def _top(
    store: InMemoryEmbeddingStore, query: npt.ArrayLike, k: int = 10, filter: Filter | None = None
) -> list[tuple[str, float]]:
    request = EmbeddingSearchRequest(query, k, filter=filter)
    return [(m.embedding_id, m.score) for m in store.search(request).matches]


def _options(kind: str, **options: object) -> IndexOptions:
    """The options of a test kind: an index kind, or "hnsw-faiss" (hnsw on faiss)."""
    if kind == "hnsw-faiss":
        return IndexOptions("hnsw", hnsw_engine="faiss", **options)  # type: ignore[arg-type]
    return IndexOptions(kind, **options)  # type: ignore[arg-type]


def _store(
    kind: str, vectors: npt.NDArray[np.float32], **options: int | float
) -> InMemoryEmbeddingStore:
    store = InMemoryEmbeddingStore(index=_options(kind, exact_below=0, **options))
    store.add_all(vectors, ids=_ids(len(vectors)))
    return store


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "bound"), [("int8", 0.97), ("binary", 0.9), ("hnsw", 0.95), ("hnsw-faiss", 0.95)]
)
def test_recall_at_10_against_exact_on_clustered_data(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]], kind: str, bound: float
) -> None:
    vectors, queries = data
    exact = _store("exact", vectors)
    quantized = _store(kind, vectors)
    recalls = []
    for query in queries:
        expected = _top(exact, query)
        found = _top(quantized, query)
        # Scores are exact: every returned row carries its exact score.
        exact_scores = dict(_top(exact, query, ROWS))
        assert all(score == exact_scores[row] for row, score in found)
        recalls.append(len({r for r, _ in expected} & {r for r, _ in found}) / 10)
    assert float(np.mean(recalls)) >= bound


@pytest.mark.parametrize("kind", KINDS)
def test_results_equal_exact_when_the_candidates_cover_every_row(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]], kind: str
) -> None:
    vectors, queries = data
    vectors = vectors[:2000]
    exact = _store("exact", vectors)
    # min_candidates just below the row count: the quantized scan runs and keeps all but one.
    quantized = _store(kind, vectors, min_candidates=1999)
    for query in queries[:10]:
        assert _top(quantized, query, 20) == _top(exact, query, 20)


@pytest.mark.parametrize("mmap", [False, True])
@pytest.mark.parametrize("kind", ["exact", *KINDS])
def test_matches_are_snapshots_of_the_store_at_the_search(
    kind: str, mmap: bool, tmp_path: Path
) -> None:
    """A match keeps the vector, text and metadata it was found with when its rows are
    replaced, others removed and compacted away, rows added, the store saved over the
    files it maps and then dropped; its vector stays read-only."""
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((200, 16)).astype(np.float32)
    store = InMemoryEmbeddingStore(index=_options(kind, exact_below=0))
    segments = [TextSegment(f"text {i}", {"n": i, "tag": f"g{i % 3}"}) for i in range(200)]
    # In two batches: the matrix has room to spare, so changes below write into it in place.
    store.add_all(vectors[:150], segments[:150], ids=_ids(200)[:150])
    store.add_all(vectors[150:], segments[150:], ids=_ids(200)[150:])
    if mmap:
        store.save(tmp_path / "store")
        store = InMemoryEmbeddingStore.load(tmp_path / "store", mmap=True)
    matches = store.search(EmbeddingSearchRequest(vectors[5], 10)).matches
    assert len(matches) == 10

    def seen() -> list[tuple[str, float, list[float], str, dict[str, object]]]:
        return [
            (
                m.embedding_id,
                m.score,
                m.embedding.vector.tolist(),
                m.embedded.text,
                m.embedded.metadata.to_dict(),
            )
            for m in matches
            if m.embedded is not None
        ]

    before = seen()
    assert [(i, t, md) for i, _, _, t, md in before] == [
        (f"r{n}", f"text {n}", {"n": n, "tag": f"g{n % 3}"})
        for n in (int(m.embedding_id[1:]) for m in matches)
    ]
    found = [m.embedding_id for m in matches]
    store.add_all(
        -vectors[: len(found)], [TextSegment("changed", {"n": -1})] * len(found), ids=found
    )
    store.remove_all([i for i in _ids(200) if i not in found][:120])  # compacts
    store.add_all(rng.standard_normal((50, 16)).astype(np.float32))
    store.search(EmbeddingSearchRequest(vectors[5], 10))
    if mmap:
        store.save(tmp_path / "store")  # over the mapped files
    del store
    gc.collect()
    assert seen() == before
    for match in matches:
        with pytest.raises(ValueError, match="read-only"):
            match.embedding.vector[0] = 0.0


def _not_found_first(
    store: InMemoryEmbeddingStore, probes: dict[str, npt.NDArray[np.float32]]
) -> list[str]:
    """The ids whose own vector does not find them first (at score 1.0)."""
    return [
        id_
        for id_, vector in probes.items()
        if _top(store, vector, 1) != [(id_, pytest.approx(1.0))]
    ]


def _walk_misses(kind: str, probes: int) -> int:
    """Probes an index may miss: none when codes choose the candidates (a scan of every
    code); for HNSW, one in ten plus one: a graph promises no row is found by its own
    vector (built by several threads at once, usearch's left about 1 probe in 150 without
    its node, and it is now built on one); a row under the wrong key would miss every
    probe."""
    return probes // 10 + 1 if kind.startswith("hnsw") else 0


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_codes_follow_replacement_removal_and_compaction(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]], kind: str
) -> None:
    vectors, queries = data
    store = _store(kind, vectors)
    _top(store, vectors[0])  # encode everything
    # New draws from the data's mixture (a graph cannot be asked to reach outliers).
    moved = queries[:20]
    store.add_all(moved, ids=[f"r{i}" for i in range(100, 120)])  # replaced in place
    probes = {f"r{100 + i}": vector for i, vector in enumerate(moved)}
    assert len(_not_found_first(store, probes)) <= _walk_misses(kind, len(probes))
    store.remove_all([f"r{i}" for i in range(0, ROWS, 2)])  # tombstones, then compaction
    store.add_all(vectors[:10] * 1.0, ids=[f"new{i}" for i in range(10)])  # appended
    probes = {f"r{i}": vectors[i] for i in range(1, 2000, 40)}
    assert len(_not_found_first(store, probes)) <= _walk_misses(kind, len(probes))
    for i in range(0, 10, 2):  # removed rows are never found, whatever the index
        assert f"r{i}" not in dict(_top(store, vectors[i], 3))
    appended = {f"new{i}": vectors[i] for i in range(0, 10, 2)}
    assert len(_not_found_first(store, appended)) <= _walk_misses(kind, len(appended))


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_filters_fall_back_to_exact_when_selective_and_stay_correct_otherwise(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]], kind: str
) -> None:
    vectors, queries = data
    segments = [TextSegment(f"t{i}", {"tenant": i % 50, "half": i % 2}) for i in range(ROWS)]
    exact = InMemoryEmbeddingStore()
    exact.add_all(vectors, segments, ids=_ids(ROWS))
    quantized = InMemoryEmbeddingStore(index=_options(kind, exact_below=1000))
    quantized.add_all(vectors, segments, ids=_ids(ROWS))
    selective = metadata_key("tenant").is_equal_to(3)  # 400 rows < exact_below: exact
    broad = metadata_key("half").is_equal_to(1)  # 10,000 rows: quantized
    overlap = 0
    for query in queries[:20]:
        assert _top(quantized, query, filter=selective) == _top(exact, query, filter=selective)
        found = _top(quantized, query, filter=broad)
        assert all(int(row[1:]) % 2 == 1 for row, _ in found)
        overlap += len({r for r, _ in found} & {r for r, _ in _top(exact, query, filter=broad)})
    assert overlap / 200 >= 0.9


def test_below_exact_below_search_is_exact_and_encodes_nothing(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]],
) -> None:
    vectors, queries = data
    store = InMemoryEmbeddingStore(index="binary")
    store.add_all(vectors[:5000], ids=_ids(5000))
    exact = _store("exact", vectors[:5000])
    assert _top(store, queries[0]) == _top(exact, queries[0])
    assert store._quantized is not None
    assert store._quantized.nbytes == 0


@pytest.mark.parametrize(
    "options",
    [
        {"kind": "ivf"},
        {"kind": "hnsw", "connectivity": 1},
        {"kind": "hnsw", "expansion": 8.0},
        {"kind": "hnsw", "hnsw_dtype": "f64"},
        {"kind": "hnsw", "hnsw_engine": "hnswlib"},
        {"kind": "hnsw", "hnsw_engine": "faiss", "hnsw_dtype": "i8"},
        {"kind": "int8", "oversample": 0.5},
        {"kind": "int8", "oversample": float("nan")},
        {"kind": "binary", "min_candidates": -1},
        {"kind": "binary", "exact_below": 1.5},
    ],
)
def test_bad_index_options_are_rejected(options: dict[str, object]) -> None:
    with pytest.raises(EmbeddingStoreError):
        IndexOptions(**options)  # type: ignore[arg-type]
    with pytest.raises(EmbeddingStoreError):
        InMemoryEmbeddingStore(index=42)  # type: ignore[arg-type]


def test_popcount_fallback_matches_numpy() -> None:
    values = np.random.default_rng(1).integers(0, 2**63, (100, 6), dtype=np.uint64)
    expected = np.array([[bin(int(v)).count("1") for v in row] for row in values])
    assert (_popcount_table(values) == expected).all()


def test_usearch_graph_is_the_same_for_the_same_rows_and_reaches_every_one() -> None:
    # usearch's concurrent add strands unreachable nodes (USearch issue 735): two
    # threads built a different graph each time and left some of 2000 rows unreachable.
    vectors = np.random.default_rng(7).standard_normal((2000, 4)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    keys = np.arange(2000, dtype=np.uint64)
    graphs = []
    for _ in range(3):
        graph = HnswGraph.new(
            4, dtype="f32", connectivity=16, expansion_add=128, expansion_search=64
        )
        graph.add(keys, vectors)
        graphs.append(graph)
    assert graphs[0].serialized() == graphs[1].serialized() == graphs[2].serialized()
    found = [int(graphs[0].search(vector, 1, 64)[0]) for vector in vectors]
    assert found == keys.tolist()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["hnsw", "hnsw-faiss"])
def test_hnsw_skips_tombstones_and_rebuilds_after_many_removals(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]], kind: str
) -> None:
    vectors, queries = data
    store = _store(kind, vectors)
    exact = _store("exact", vectors)
    _top(store, queries[0])  # builds the graph
    index = store._quantized
    assert index is not None
    assert index.nbytes > 0
    gone = [f"r{i}" for i in range(0, ROWS, 10)]  # 10%: tombstones, no compaction
    store.remove_all(gone)
    exact.remove_all(gone)
    for i in range(0, 200, 10):
        assert f"r{i}" not in dict(_top(store, vectors[i], 10))
    for start in (1, 2, 3, 4, 5, 6):  # compactions; removed nodes reach half the live ones
        ids = [f"r{i}" for i in range(start, ROWS, 10)]
        store.remove_all(ids)
        exact.remove_all(ids)
        _top(store, queries[0])
    assert len(store) == 3 * ROWS // 10
    assert index._removed == 0  # the graph was rebuilt from the live rows
    recalls = []
    for query in queries:
        expected, found = _top(exact, query), _top(store, query)
        exact_scores = dict(_top(exact, query, 100))
        assert all(score == exact_scores[row] for row, score in found if row in exact_scores)
        recalls.append(len({r for r, _ in expected} & {r for r, _ in found}) / 10)
    assert float(np.mean(recalls)) >= 0.95


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["hnsw", "hnsw-faiss"])
def test_hnsw_filtered_walk_keeps_only_matching_rows(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]], kind: str
) -> None:
    """A 2% filter above exact_below: the walk is oversampled 1/share, then rescored."""
    vectors, queries = data
    segments = [TextSegment(f"t{i}", {"tenant": i % 50}) for i in range(ROWS)]
    exact = InMemoryEmbeddingStore()
    exact.add_all(vectors, segments, ids=_ids(ROWS))
    store = InMemoryEmbeddingStore(index=_options(kind, exact_below=100))
    store.add_all(vectors, segments, ids=_ids(ROWS))
    tenant = metadata_key("tenant").is_equal_to(3)
    overlap = 0
    for query in queries[:20]:
        found = _top(store, query, filter=tenant)
        expected = _top(exact, query, filter=tenant)
        assert len(found) == 10
        assert all(int(row[1:]) % 50 == 3 for row, _ in found)
        exact_scores = dict(_top(exact, query, 400, filter=tenant))
        assert all(score == exact_scores[row] for row, score in found)
        overlap += len({r for r, _ in found} & {r for r, _ in expected})
    assert overlap / 200 >= 0.9


@pytest.mark.parametrize("kind", ["hnsw", "hnsw-faiss"])
def test_hnsw_beam_is_the_recall_knob(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]], kind: str
) -> None:
    """The walk fetches max_results rows by default (the beam, not oversampling, sets
    recall); a wider ``expansion`` finds more of the true top 10 on the same graph, and
    every score stays exact at any beam."""
    vectors, queries = data
    vectors = vectors[:3000]
    exact = _store("exact", vectors)
    store = _store(kind, vectors)
    index = store._quantized
    assert isinstance(index, HnswIndex)
    store.search(EmbeddingSearchRequest(queries[0], 10))  # builds the graph
    unit = queries[0] / np.linalg.norm(queries[0])
    rows = index.candidates(store._matrix, store._inv_norms, 3000, unit, None, 7)
    assert rows is not None
    assert rows.size == 7
    recalls = {}
    for expansion in (4, 128):
        index.options = dataclasses.replace(index.options, expansion=expansion)
        hits = 0
        for query in queries:
            found = _top(store, query)
            exact_scores = dict(_top(exact, query, 3000))
            assert len(found) == 10
            assert all(score == exact_scores[row] for row, score in found)
            hits += len({r for r, _ in found} & {r for r, _ in _top(exact, query)})
        recalls[expansion] = hits / (10 * len(queries))
    assert recalls[128] >= 0.95
    assert recalls[128] > recalls[4]


def test_hnsw_auto_dtype_builds_the_native_graph_and_keeps_auto_in_saves(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]], tmp_path: Path
) -> None:
    """The default ``hnsw_dtype="auto"`` builds bf16 where usearch has SIMD kernels for
    it, else f16; a save records "auto" (the graph file keeps its own kind)."""
    vectors, queries = data
    assert IndexOptions("hnsw").hnsw_dtype == "auto"
    expected = native_dtype()
    assert expected in ("bf16", "f16")
    accelerated = Index(ndim=8, metric="ip", dtype="bf16").hardware_acceleration
    assert (expected == "bf16") == (str(accelerated) != "serial")
    store = _store("hnsw", vectors[:3000])
    before = [_top(store, query) for query in queries[:5]]
    index = store._quantized
    assert isinstance(index, HnswIndex)
    assert index._graph is not None
    assert str(index._graph._index.dtype) == f"ScalarKind.{expected.upper()}"
    store.save(tmp_path)
    loaded = InMemoryEmbeddingStore.load(tmp_path, mmap=True)
    assert loaded.index_options.hnsw_dtype == "auto"
    assert [_top(loaded, query) for query in queries[:5]] == before


@pytest.mark.slow
def test_hnsw_i8_graph_rescores_twice_k_and_keeps_recall(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]],
) -> None:
    """An int8 graph misorders near neighbours; its 2k rescored candidates keep recall."""
    vectors, queries = data
    options = IndexOptions("hnsw", exact_below=0, hnsw_dtype="i8")
    assert options.candidate_count(10) == 20
    assert dataclasses.replace(options, oversample=1).candidate_count(10) == 10
    exact = _store("exact", vectors)
    store = InMemoryEmbeddingStore(index=options)
    store.add_all(vectors, ids=_ids(len(vectors)))
    recalls = []
    for query in queries:
        expected = {r for r, _ in _top(exact, query)}
        found = _top(store, query)
        exact_scores = dict(_top(exact, query, ROWS))
        assert all(score == exact_scores[row] for row, score in found)
        recalls.append(len(expected & {r for r, _ in found}) / 10)
    assert float(np.mean(recalls)) >= 0.95


@pytest.mark.parametrize("mmap", [False, True])
@pytest.mark.parametrize(
    ("kind", "dtype"), [("hnsw", "bf16"), ("hnsw-faiss", "bf16"), ("hnsw-faiss", "f32")]
)
def test_hnsw_bf16_graph_searches_saves_and_loads(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]],
    tmp_path: Path,
    mmap: bool,
    kind: str,
    dtype: str,
) -> None:
    """A bfloat16 graph (and faiss's float32 one): exact scores, and a save the graph
    check accepts on load."""
    vectors, queries = data
    exact = _store("exact", vectors[:3000])
    store = InMemoryEmbeddingStore(index=_options(kind, exact_below=0, hnsw_dtype=dtype))
    store.add_all(vectors[:3000], ids=_ids(3000))
    found = _top(store, queries[0])
    exact_scores = dict(_top(exact, queries[0], 3000))
    assert all(score == exact_scores[row] for row, score in found)
    assert len({r for r, _ in found} & {r for r, _ in _top(exact, queries[0])}) >= 8
    store.save(tmp_path)
    loaded = InMemoryEmbeddingStore.load(tmp_path, mmap=mmap)
    assert loaded.index_options.hnsw_dtype == dtype
    assert [_top(loaded, query) for query in queries[:5]] == [
        _top(store, query) for query in queries[:5]
    ]


def test_hnsw_without_usearch_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "usearch", None)
    monkeypatch.setitem(sys.modules, "usearch.index", None)
    with pytest.raises(EmbeddingStoreError, match=r"pip install 'ragloom-core\[hnsw\]'"):
        InMemoryEmbeddingStore(index="hnsw")


def test_hnsw_faiss_without_faiss_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "faiss", None)
    with pytest.raises(EmbeddingStoreError, match=r"pip install 'ragloom-core\[faiss\]'"):
        InMemoryEmbeddingStore(index=IndexOptions("hnsw", hnsw_engine="faiss"))


def test_hnsw_faiss_auto_dtype_is_f16_and_replaced_rows_get_new_nodes(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]],
) -> None:
    """faiss cannot remove a node: a replaced row is walked under a new node, the old one
    is dead (skipped by the walk's selector) and counts towards the rebuild."""
    vectors, queries = data
    store = _store("hnsw-faiss", vectors[:3000])
    _top(store, queries[0])
    index = store._quantized
    assert isinstance(index, HnswIndex)
    assert index._graph is not None
    assert int(index._graph._storage.code_size) == 2 * DIMENSION  # float16 codes
    store.add_all(queries[:5], ids=_ids(5))  # replaced: new nodes 3000..3004
    assert [_top(store, query, 1)[0][0] for query in queries[:5]] == _ids(5)
    assert index._removed == 5
    assert index._row_keys[:5].tolist() == list(range(3000, 3005))
    assert len(index._graph) == 3000
    for i in range(5):  # the old vectors' nodes are dead: never returned
        assert all(score < 1.0 for _, score in _top(store, vectors[i], 3))


@pytest.mark.parametrize("mmap", [False, True])
@pytest.mark.parametrize("kind", KINDS)
def test_save_and_load_keep_the_index_without_rebuilding_it(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]],
    tmp_path: Path,
    kind: str,
    mmap: bool,
) -> None:
    vectors, queries = data
    store = _store(kind, vectors[:5000])
    before = [_top(store, query) for query in queries[:10]]  # builds the index
    store.save(tmp_path)
    loaded = InMemoryEmbeddingStore.load(tmp_path, mmap=mmap)
    assert loaded.index_options == store.index_options
    index, saved = loaded._quantized, store._quantized
    if isinstance(index, HnswIndex):
        assert isinstance(saved, HnswIndex)
        # A memory-mapped graph is checked and viewed at its first use, a read one at once.
        assert (index._graph is None) == mmap
    else:
        assert isinstance(index, QuantizedIndex)
        assert isinstance(saved, QuantizedIndex)
        assert index._trained_on == saved._trained_on
        assert np.array_equal(index._codes, saved._codes[:5000])
    assert [_top(loaded, query) for query in queries[:10]] == before
    if isinstance(index, HnswIndex):
        assert index._graph is not None
        assert index._graph.viewed == (mmap and kind == "hnsw")  # faiss copies it in
        assert len(index._graph) == 5000
    # Writes after a load (a memory-mapped graph is read into memory first).
    loaded.add_all(queries[:20], ids=[f"r{i}" for i in range(20)])  # replaced
    loaded.add_all(queries[20:30], ids=[f"q{i}" for i in range(10)])  # appended
    loaded.remove_all([f"r{i}" for i in range(100, 2000)])  # compaction
    probes = {f"r{i}": queries[i] for i in range(10)} | {
        f"q{i}": queries[20 + i] for i in range(10)
    }
    assert len(_not_found_first(loaded, probes)) <= _walk_misses(kind, len(probes))
    assert len(loaded) == 5000 + 10 - 1900


def _damage_a_neighbour(path: Path) -> Path:
    """Point the first neighbour of the graph's last node past the last node (what made
    usearch read out of bounds), keeping the file's size and head checksum: only the
    check of every node finds it. Returns the graph file."""
    graph = path / json.loads((path / "manifest.json").read_text())["files"]["graph"]["name"]
    data = bytearray(graph.read_bytes())
    rows, width = struct.unpack_from("<2I", data, 0)
    nodes, connectivity, base, _, _ = struct.unpack_from("<5Q", data, 8 + rows * width + 64)
    levels = np.frombuffer(data, "<i2", nodes, 8 + rows * width + 104)
    # The last node's lists end the file: level 0's, then one a level above it.
    level_0 = len(data) - 4 * (base + 1) - int(levels[-1]) * 4 * (connectivity + 1)
    struct.pack_into("<2I", data, level_0, 1, nodes)
    graph.write_bytes(bytes(data))
    return graph


def _damage_a_faiss_neighbour(path: Path) -> Path:
    """Point the first neighbour slot of a saved faiss graph past the last node, keeping
    the file's size and head checksum. Returns the graph file."""
    files = json.loads((path / "manifest.json").read_text())["files"]
    graph = path / files["faiss-graph"]["name"]
    file = FaissGraphFile(graph, DIMENSION)
    _, _, links_at = file._layout[2]
    data = bytearray(graph.read_bytes())
    struct.pack_into("<i", data, links_at, file.nodes)
    graph.write_bytes(bytes(data))
    return graph


@pytest.mark.parametrize("kind", ["hnsw", "hnsw-faiss"])
def test_a_damaged_graph_is_found_at_the_first_use_of_a_memory_mapped_load(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]], tmp_path: Path, kind: str
) -> None:
    vectors, queries = data
    store = _saved_with_index(kind, vectors[:3000], queries[0], tmp_path)
    damage = _damage_a_neighbour if kind == "hnsw" else _damage_a_faiss_neighbour
    graph = damage(tmp_path)
    with pytest.raises(EmbeddingStoreError, match=re.escape(graph.name)):
        InMemoryEmbeddingStore.load(tmp_path, verify=True)  # checksums: at once
    loaded = InMemoryEmbeddingStore.load(tmp_path, mmap=True)  # the head only
    for _ in range(2):  # the first search that walks the graph, and every one after
        with pytest.raises(EmbeddingStoreError, match=re.escape(graph.name)):
            _top(loaded, queries[0])
    # A removal that compacts opens the graph before it moves a row: the rows stay
    # removed and in step (k = 400 searches exactly, without the graph).
    with pytest.raises(EmbeddingStoreError, match=re.escape(graph.name)):
        loaded.remove_all(_ids(1000))
    store.remove_all(_ids(1000))
    assert _top(loaded, queries[1], k=400) == _top(store, queries[1], k=400)


@pytest.mark.parametrize("kind", ["hnsw", "hnsw-faiss"])
def test_a_memory_mapped_graph_is_checked_once_and_outlives_a_save_that_deletes_it(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
) -> None:
    vectors, queries = data
    store = _saved_with_index(kind, vectors[:3000], queries[0], tmp_path)
    checks: list[int] = []
    file_class = GraphFile if kind == "hnsw" else FaissGraphFile
    check_nodes = file_class._check_nodes
    monkeypatch.setattr(
        file_class,
        "_check_nodes",
        lambda self: checks.append(1) or check_nodes(self),  # type: ignore[arg-type]
    )
    loaded = InMemoryEmbeddingStore.load(tmp_path, mmap=True)
    old = set(tmp_path.iterdir())
    InMemoryEmbeddingStore.load(tmp_path).save(tmp_path)  # another writer: new files
    assert not any(path.exists() for path in old if path.name != "manifest.json")
    assert checks == [1]  # the other writer's plain load
    assert [_top(loaded, query) for query in queries[:5]] == [
        _top(store, query) for query in queries[:5]
    ]
    loaded.add_all(queries[:5], ids=["n0", "n1", "n2", "n3", "n4"])  # copies the view
    assert _top(loaded, queries[0])[0][0] == "n0"
    assert checks == [1, 1]  # the first search's check, not again at the first change


def test_saves_without_an_index_still_load(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]], tmp_path: Path
) -> None:
    """Saves from before indexes have no "index" in their manifest: they load as exact."""
    vectors, queries = data
    store = _store("exact", vectors[:3000])
    store.save(tmp_path)
    manifest_path = tmp_path / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    assert set(manifest["files"]) == {"vectors", "rows"}
    del manifest["index"]
    manifest_path.write_text(json.dumps(manifest))
    for mmap in (False, True):
        loaded = InMemoryEmbeddingStore.load(tmp_path, mmap=mmap)
        assert loaded.index_options == IndexOptions()
        assert _top(loaded, queries[0]) == _top(store, queries[0])


def _saved_with_index(
    kind: str, vectors: npt.NDArray[np.float32], query: npt.NDArray[np.float32], path: Path
) -> InMemoryEmbeddingStore:
    """A store of ``kind`` over ``vectors``, its index built by one search, saved to ``path``."""
    store = _store(kind, vectors)
    _top(store, query)
    store.save(path)
    return store


@pytest.mark.parametrize(
    ("kind", "file_kind", "suffix"),
    [("hnsw", "graph", ".usearch"), ("hnsw-faiss", "faiss-graph", ".bin")],
)
def test_each_engine_saves_its_graph_file_under_its_own_kind_and_suffix(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]],
    tmp_path: Path,
    kind: str,
    file_kind: str,
    suffix: str,
) -> None:
    """usearch's own file format, and ragloom's layout of a faiss graph (which faiss's
    reader cannot open): two kinds of file, never one name for both."""
    vectors, queries = data
    _saved_with_index(kind, vectors[:3000], queries[0], tmp_path)
    files = json.loads((tmp_path / "manifest.json").read_text())["files"]
    assert sorted(files) == sorted(["vectors", "rows", "codes", file_kind])
    assert re.fullmatch(f"{file_kind}-[0-9a-f]{{32}}{re.escape(suffix)}", files[file_kind]["name"])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["manifest.json", *(entry["name"] for entry in files.values())]
    )


@pytest.mark.parametrize("kind", KINDS)
def test_a_manifest_missing_an_index_file_fails_the_load_naming_it(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]], tmp_path: Path, kind: str
) -> None:
    vectors, queries = data
    store = _saved_with_index(kind, vectors[:3000], queries[0], tmp_path)
    manifest_path = tmp_path / "manifest.json"
    original = manifest_path.read_text()
    assert store._quantized is not None
    kinds = store._quantized.saved_files
    assert set(kinds) <= set(json.loads(original)["files"])
    for file_kind in kinds:
        manifest = json.loads(original)
        del manifest["files"][file_kind]
        manifest_path.write_text(json.dumps(manifest))
        with pytest.raises(EmbeddingStoreError, match=f"names no valid {file_kind} file"):
            InMemoryEmbeddingStore.load(tmp_path)
    manifest_path.write_text(original)
    assert _top(InMemoryEmbeddingStore.load(tmp_path), queries[0]) == _top(store, queries[0])


@pytest.mark.parametrize("kind", KINDS)
def test_a_corrupt_index_file_fails_the_load_naming_it(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]], tmp_path: Path, kind: str
) -> None:
    vectors, queries = data
    store = _saved_with_index(kind, vectors[:3000], queries[0], tmp_path)
    files = json.loads((tmp_path / "manifest.json").read_text())["files"]
    for file_kind in ("codes", "graph", "faiss-graph"):
        if file_kind not in files:
            continue
        path = tmp_path / files[file_kind]["name"]
        original = path.read_bytes()
        path.write_bytes(original[:-9] + bytes([original[-9] ^ 1]) + original[-8:])
        with pytest.raises(EmbeddingStoreError, match=re.escape(path.name)):
            InMemoryEmbeddingStore.load(tmp_path)
        path.write_bytes(original)
    assert _top(InMemoryEmbeddingStore.load(tmp_path), queries[0]) == _top(store, queries[0])
