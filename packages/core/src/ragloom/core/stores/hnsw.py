"""HNSW index for :class:`~ragloom.core.stores.in_memory.InMemoryEmbeddingStore` (usearch
or faiss).

Like the quantized indexes of :mod:`ragloom.core.stores.quantized`, the graph only
*chooses candidates*: a search walks it for the ``max(oversample * k, min_candidates)``
nearest unit vectors (``k`` by default, ``2 * k`` for an int8 graph) with a beam of
``expansion`` (raised to the candidate count), and the store rescores them exactly in
``float64``, so scores stay the exact relevance scores and only recall is approximate.
The beam sets the recall: rescoring more rows than ``k`` changes the top ``k`` only
where the graph's 16-bit distances misorder near-ties (recall@10 0.988 against 0.987 at
beam 64 on 100k text-like rows), at the cost of a cold read of a float32 row each. The
graph (usearch, the ``ragloom-core[hnsw]`` extra) holds its own copy of the unit
vectors, by default in ``bfloat16`` where usearch has SIMD kernels for it and
``float16`` elsewhere (half the float32 matrix; ``hnsw_dtype="i8"`` for a quarter,
``"f32"`` for the full copy), and about ``2 * connectivity`` 4-byte links a row.

Engines. ``hnsw_engine="usearch"`` (default) walks a usearch graph
(:mod:`~ragloom.core.stores._usearch`); ``"faiss"`` a faiss ``IndexHNSWSQ`` with float16
codes by default (:mod:`~ragloom.core.stores._faiss`, the ``ragloom-core[faiss]`` extra),
whose walk is faster (docs/indexes.md). faiss numbers its nodes itself and cannot remove
one: a removed key is a dead node the walk skips (an ``IDSelectorBitmap`` of the live
ones, passed only while there are dead ones), and a replaced row is added again under a
new key, its old node dead, counted like a removal towards the rebuild below.

Keeping in step. Each row gets a uint64 key when first indexed; ``key -> row`` is an
array, updated when compaction moves rows. Appends are indexed lazily, at the next
search that uses the graph (so the first such search on a large store pays the build);
replaced rows are removed and indexed again under their key; tombstoned rows are
skipped at search time and removed from the graph when the store compacts. usearch
only marks removed nodes, and a graph with many of them finds live neighbours less
reliably, so when they reach half the live ones the graph is rebuilt.

Filters. Below ``exact_below`` eligible rows search is exact, as for every kind. A
filter (or tombstones) keeping a share ``s`` of the rows: when ``s`` is small enough that
the walk would need more than a ``1 / 8`` of the rows (``wanted / s > size / 8``) search
is exact on the filtered rows, which is then cheap; otherwise the walk asks for
``1.5 * wanted / s + 16`` neighbours and keeps the eligible ones, falling back to exact
search when fewer than ``wanted`` survive.

Saved graphs. A plain load checks the saved graph (:class:`~ragloom.core.stores._usearch.
GraphFile`, or for faiss ragloom's own layout, :class:`~ragloom.core.stores._faiss.
FaissGraphFile`) and reads it into memory. A memory-mapped load maps the file and checks its
head only, so the store opens in milliseconds whatever its size; the rest of the check
(every node and neighbour, the keys against the row keys: O(rows), about 5 ms per 100k
rows) and usearch's view of the file wait for the first use of the graph (a search that
walks it, a change, a save), which raises the error naming the file if it is damaged.
The first change copies the view, already checked, into memory. faiss cannot view a
file: its graph is checked and copied into faiss's own memory at that first use, so a
memory-mapped load maps the faiss graph file only until then.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragloom.core.errors import EmbeddingStoreError
from ragloom.core.stores._faiss import FaissGraph, FaissGraphFile, require_faiss
from ragloom.core.stores._usearch import GraphFile, HnswGraph, native_dtype, require_usearch
from ragloom.core.stores.quantized import (
    STATE_VERSION,
    IndexOptions,
    QuantizedIndex,
    new_index,
    unit_rows,
)

__all__ = ["HnswIndex", "new_search_index"]

Positions = npt.NDArray[np.intp]
Matrix = npt.NDArray[np.float32]

_ADD_BLOCK = 65_536
_WALK_SHARE = 1 / 8  # exact on the filtered rows when the walk would visit more than this
_NO_ROW = -1


@dataclasses.dataclass(frozen=True)
class _SavedGraph:
    """A saved graph whose head passed, not opened yet: its file, the row keys saved
    with it (``codes``) and the count of nodes removed before the save."""

    file: GraphFile | FaissGraphFile
    files: Mapping[str, Path]
    row_keys: npt.NDArray[np.uint64]
    removed: int
    view: bool


def new_search_index(options: IndexOptions) -> HnswIndex | QuantizedIndex | None:
    """The index ``options`` ask for: HNSW, quantized, or ``None`` for exact search."""
    return HnswIndex(options) if options.kind == "hnsw" else new_index(options)


class HnswIndex:
    """A usearch or faiss graph over the store's unit rows (called with the store's
    lock held)."""

    def __init__(self, options: IndexOptions) -> None:
        self._faiss = options.hnsw_engine == "faiss"
        # Fail when the store is made, not at its first search.
        require_faiss() if self._faiss else require_usearch()
        self.options = options
        # The files state() writes besides the manifest: the row keys, then the graph's
        # (usearch's own format, or ragloom's layout of a faiss graph).
        self._graph_file = "faiss-graph" if self._faiss else "graph"
        self.saved_files: tuple[str, ...] = ("codes", self._graph_file)
        self._graph: HnswGraph | FaissGraph | None = None
        self._row_keys = np.empty(0, dtype=np.uint64)  # key of each indexed row
        self._key_rows = np.empty(0, dtype=np.intp)  # row of each key (or _NO_ROW)
        self._synced = 0  # rows [0, _synced) are in the graph
        self._dirty: set[int] = set()  # indexed rows rewritten since (replaced entries)
        self._removed = 0  # nodes removed from the graph since it was built
        self._saved: _SavedGraph | None = None  # a loaded graph until its first use

    @property
    def nbytes(self) -> int:
        """Bytes held by the graph (its vectors, links and reserved capacity)."""
        return 0 if self._graph is None else self._graph.nbytes

    # ------------------------------------------------------------------ keeping in step

    def replaced(self, rows: Positions) -> None:
        """Rows of the store were overwritten in place."""
        self._dirty.update(int(row) for row in rows.tolist() if row < self._synced)

    def compacted(self, keep: Positions) -> None:
        """The store kept ``keep`` (sorted) and moved them down to ``0..keep.size``."""
        if self._saved is not None:  # called before the store moves rows: may raise
            self._open()
        kept = keep[: int(np.searchsorted(keep, self._synced))]
        if self._graph is not None and kept.size < self._synced:
            gone = np.ones(self._synced, dtype=bool)
            gone[kept] = False
            dropped = self._row_keys[: self._synced][gone]
            self._writable().remove(dropped)
            self._key_rows[dropped.astype(np.intp)] = _NO_ROW
            self._removed += int(dropped.size)
        self._row_keys[: kept.size] = self._row_keys[kept]
        self._key_rows[self._row_keys[: kept.size].astype(np.intp)] = np.arange(kept.size)
        if self._dirty:
            dirty = np.fromiter(self._dirty, dtype=np.intp, count=len(self._dirty))
            where = np.searchsorted(keep, dirty)
            found = where < keep.size
            found[found] = keep[where[found]] == dirty[found]
            self._dirty = set(where[found].tolist())
        self._synced = int(kept.size)

    def sync(self, matrix: Matrix, inv_norms: npt.NDArray[np.float32], size: int) -> None:
        """Index the rows added or replaced since the last search (rebuilding if due)."""
        if self._saved is not None:
            self._open()
        if self._graph is None or 2 * self._removed > self._synced:
            self._build(int(matrix.shape[1]))
        if not self._dirty and size == self._synced:
            return
        graph = self._writable()
        if self._dirty:
            rows = np.fromiter(sorted(self._dirty), dtype=np.intp, count=len(self._dirty))
            keys = self._row_keys[rows]
            graph.remove(keys)
            if self._faiss:  # faiss numbers its nodes: the new vectors get new keys
                self._key_rows[keys.astype(np.intp)] = _NO_ROW
                self._removed += int(keys.size)
                keys = self._fresh_keys(rows)
            graph.add(keys, unit_rows(matrix, inv_norms, rows))
            self._dirty.clear()
        if size > self._synced:
            self._grow(size)
            for start in range(self._synced, size, _ADD_BLOCK):
                stop = min(start + _ADD_BLOCK, size)
                graph.add(
                    self._row_keys[start:stop], unit_rows(matrix, inv_norms, slice(start, stop))
                )
                self._synced = stop

    def _build(self, dimension: int) -> None:
        """A new, empty graph; every row is indexed again under fresh keys."""
        options = self.options
        dtype: str = options.hnsw_dtype
        if dtype == "auto":
            dtype = "f16" if self._faiss else native_dtype()
        self._graph = (FaissGraph if self._faiss else HnswGraph).new(
            dimension,
            dtype=dtype,
            connectivity=options.connectivity,
            expansion_add=options.expansion_add,
            expansion_search=options.expansion,
        )
        self._row_keys = np.empty(0, dtype=np.uint64)
        self._key_rows = np.empty(0, dtype=np.intp)
        self._synced = 0
        self._dirty.clear()
        self._removed = 0
        self._saved = None

    def _fresh_keys(self, rows: Positions) -> npt.NDArray[np.uint64]:
        """Give ``rows`` (indexed ones, rewritten) fresh keys, after every key ever given."""
        first_key = self._key_rows.size
        keys = np.arange(first_key, first_key + rows.size, dtype=np.uint64)
        self._row_keys[rows] = keys
        self._key_rows = np.concatenate([self._key_rows, rows])
        return keys

    def _grow(self, size: int) -> None:
        """Give rows ``_synced..size`` fresh keys (after every key ever given)."""
        first_key = self._key_rows.size
        count = size - self._synced
        row_keys = np.empty(max(size, 2 * self._row_keys.size), dtype=np.uint64)
        row_keys[: self._synced] = self._row_keys[: self._synced]
        row_keys[self._synced : size] = np.arange(first_key, first_key + count, dtype=np.uint64)
        self._row_keys = row_keys
        key_rows = np.empty(first_key + count, dtype=np.intp)
        key_rows[:first_key] = self._key_rows
        key_rows[first_key:] = np.arange(self._synced, size)
        self._key_rows = key_rows

    # ------------------------------------------------------------------ persistence

    def state(
        self, matrix: Matrix, inv_norms: npt.NDArray[np.float32], size: int
    ) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]]:
        """What a save keeps (nothing if never built): the manifest's header, the key of
        every row (``codes``) and the graph file (``graph``: usearch's, ``faiss-graph``:
        :class:`FaissGraphFile`), brought up to date first."""
        if self._graph is None and self._saved is None:
            return {}, {}
        self.sync(matrix, inv_norms, size)
        graph = np.frombuffer(self._writable().serialized(), dtype=np.uint8)
        header = {"version": STATE_VERSION, "removed": self._removed}
        return header, {"codes": self._row_keys[:size], self._graph_file: graph}

    def restore(
        self,
        header: Mapping[str, Any],
        row_keys: npt.NDArray[Any],
        dimension: int,
        *,
        files: Mapping[str, Path],
        mmap: bool,
    ) -> None:
        """Adopt a saved :meth:`state` (``row_keys``: its codes). A plain load (``mmap``
        false) checks the graph and reads it into memory; ``mmap`` checks the graph file's
        head only and leaves the rest of the check, and usearch's view of the file, to the
        first use of the graph (:meth:`_open`; see the module docstring)."""
        if header.get("version") != STATE_VERSION:
            raise ValueError(f"index state version {header.get('version')!r} is not supported")
        removed = header.get("removed")
        if type(removed) is not int or removed < 0:
            raise ValueError(f"invalid removed count {removed!r}")
        count = int(row_keys.size)
        if row_keys.dtype != np.uint64 or row_keys.ndim != 1 or removed > count:
            raise ValueError(f"the row keys are not a uint64 vector or {removed} removed")
        file = (FaissGraphFile if self._faiss else GraphFile)(files[self._graph_file], dimension)
        if file.present != count:
            raise ValueError(f"the graph holds {file.present} vectors, expected {count}")
        if self._faiss and file.nodes != count + removed:  # every key given is a node
            raise ValueError(f"the graph has {file.nodes} nodes, expected {count + removed}")
        self._graph, self._saved = None, _SavedGraph(file, files, row_keys, removed, view=mmap)
        self._synced, self._removed = count, removed
        self._dirty.clear()
        if not mmap:
            self._open()

    def _open(self) -> None:
        """Check the saved graph (its row keys, then every node) and open it: view it
        (``mmap``) or read it into memory. A damaged file raises the error naming it,
        leaving the index as it was."""
        saved = self._saved
        assert saved is not None
        row_keys, removed, count = saved.row_keys, saved.removed, int(saved.row_keys.size)
        # Keys are handed out in order, and each is kept by a row or counted as removed.
        codes = saved.files["codes"]
        if count and int(row_keys.max()) >= count + removed:
            raise EmbeddingStoreError(f"{codes}: corrupt graph keys, out of range for {count} rows")
        key_rows = np.full(count + removed, _NO_ROW, dtype=np.intp)
        key_rows[row_keys.astype(np.intp)] = np.arange(count)
        if (key_rows != _NO_ROW).sum() != count:
            raise EmbeddingStoreError(f"{codes}: corrupt graph keys, two rows share one")
        try:
            graph_keys = saved.file.check()
            if (graph_keys >= key_rows.size).any() or not _is_permutation(
                key_rows[graph_keys.astype(np.intp)], count
            ):
                raise ValueError("the graph's keys are not the rows' keys")
            graph = saved.file.graph(view=saved.view)
        except ValueError as exc:
            raise EmbeddingStoreError(
                f"{saved.files[self._graph_file]}: corrupt saved HNSW graph ({exc})"
            ) from exc
        self._graph, self._saved = graph, None
        self._row_keys, self._key_rows = np.array(row_keys), key_rows

    def _writable(self) -> HnswGraph | FaissGraph:
        """The graph, copied into memory first if it is a view of a saved file."""
        assert self._graph is not None
        self._graph = self._graph.in_memory()
        return self._graph

    # ------------------------------------------------------------------ searching

    def candidates(
        self,
        matrix: Matrix,
        inv_norms: npt.NDArray[np.float32],
        size: int,
        unit: Matrix,
        selected: Positions | None,
        k: int,
    ) -> Positions | None:
        """Rows to rescore for the top ``k`` among ``selected`` (None: all rows), or
        ``None`` when exact search should run instead (see the module docstring)."""
        options = self.options
        eligible = size if selected is None else int(selected.size)
        wanted = options.indexed_count(eligible, k)
        if wanted is None:
            return None
        share = eligible / size
        count = wanted if selected is None else math.ceil(1.5 * wanted / share) + 16
        if count > _WALK_SHARE * size:
            return None
        graph = self._graph
        if (  # what sync checks, inline: most searches find nothing to do
            graph is None
            or self._saved is not None
            or size != self._synced
            or self._dirty
            or 2 * self._removed > self._synced
        ):
            self.sync(matrix, inv_norms, size)
            graph = self._graph
            assert graph is not None
        keys = graph.search(unit, count, max(options.expansion, count))
        rows: Positions = self._key_rows.take(keys)  # take: no copy of the keys as intp
        if self._removed:  # only then can a key have lost its row
            rows = rows[rows != _NO_ROW]
        if selected is not None:
            where = np.searchsorted(selected, rows)
            where[where == selected.size] = 0
            rows = rows[selected[where] == rows][:wanted]
            if rows.size < wanted:
                return None
        return rows


def _is_permutation(rows: Positions, count: int) -> bool:
    """Whether ``rows`` holds each of ``0..count - 1`` exactly once."""
    if rows.size != count or (rows < 0).any():
        return False
    seen = np.zeros(count, dtype=bool)
    seen[rows] = True
    return bool(seen.all())
