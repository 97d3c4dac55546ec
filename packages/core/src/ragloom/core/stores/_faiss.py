"""The one module that imports faiss (the ``ragloom-core[faiss]`` extra), for the HNSW
index's ``hnsw_engine="faiss"``.

:class:`FaissGraph` wraps a faiss ``IndexHNSWSQ`` (float16 or bfloat16 codes) or
``IndexHNSWFlat`` (float32) over unit vectors, inner product. faiss numbers its nodes
``0, 1, ...`` in the order they are added and cannot remove one, so a key *is* a node
number: removing keys clears their bits in a bitmap of live nodes, and a walk over a
graph with dead nodes passes faiss an ``IDSelectorBitmap`` of the live ones (they are
still walked through, never returned; the index rebuilds the graph when they pile up).

faiss's own reader trusts its files (a damaged neighbour id reads out of bounds), so
a graph is saved in a layout of ragloom's, :class:`FaissGraphFile`, checked with numpy
before any of it reaches faiss, then copied into a new faiss index's vectors (faiss
keeps its links and codes in vectors of its own: nothing of a loaded graph stays
memory-mapped). The layout, little-endian::

    head (80 bytes)     "RLFAISS1", then u32 version, u32 scalar kind (0 f32, 1 f16,
                        2 bf16), u64 dimension, connectivity, expansion_add, nodes,
                        neighbour slots, i64 entry node, i64 top level, u64 dead nodes
    levels   i32[nodes]            faiss's level count of each node (1 + its top level)
    offsets  u64[nodes + 1]        where each node's neighbour slots start
    links    i32[slots]            neighbour node numbers, -1 for an empty slot
    live     u8[ceil(nodes / 8)]   bit ``i % 8`` of byte ``i // 8``: node ``i`` is live
    codes    u8[nodes * code size] each node's vector as faiss encodes it

each array starting at a multiple of 64 bytes (zero padding between).
"""

from __future__ import annotations

import mmap
import os
import struct
from typing import Any

import numpy as np
import numpy.typing as npt

from ragloom.core.errors import EmbeddingStoreError

__all__ = ["FaissGraph", "FaissGraphFile", "require_faiss"]

Keys = npt.NDArray[np.int64]

_MAGIC = b"RLFAISS1"
_VERSION = 1
_HEAD = struct.Struct("<8sII5Q2qQ")
_ALIGN = 64
_KINDS = {"f32": 0, "f16": 1, "bf16": 2}  # hnsw_dtype -> scalar kind in the file
_SCALAR_BYTES = (4, 2, 2)
_MAX_CONNECTIVITY = 1 << 12
_MAX_EXPANSION = 1 << 16


def require_faiss() -> Any:
    """The ``faiss`` module, or the error saying which extra to install."""
    try:
        import faiss
    except ImportError as exc:
        raise EmbeddingStoreError(
            "hnsw_engine='faiss' needs the faiss library, which is not installed: "
            "pip install 'ragloom-core[faiss]'"
        ) from exc
    return faiss


def _new_index(faiss: Any, dimension: int, kind: int, connectivity: int) -> Any:
    """An empty faiss HNSW index of the scalar ``kind`` (see the module docstring)."""
    if kind == 0:
        return faiss.IndexHNSWFlat(dimension, connectivity, faiss.METRIC_INNER_PRODUCT)
    qtype = faiss.ScalarQuantizer.QT_fp16 if kind == 1 else faiss.ScalarQuantizer.QT_bf16
    return faiss.IndexHNSWSQ(dimension, qtype, connectivity, faiss.METRIC_INNER_PRODUCT)


class FaissGraph:
    """A faiss HNSW graph over unit vectors (inner product); keys are node numbers."""

    viewed = False  # faiss holds its graph in its own memory, never a view of a file

    def __init__(self, index: Any, kind: int, live: npt.NDArray[np.uint8], dead: int) -> None:
        faiss = require_faiss()
        self._index, self._kind = index, kind
        self._storage = faiss.downcast_index(index.storage)
        self._live, self._dead = live, dead  # bitmap of live nodes, count of dead ones
        self._params = faiss.SearchParametersHNSW()
        self._selector: Any = None  # the bitmap's IDSelector, made when a walk needs it
        self._selecting: Any = None  # the selector the walk's parameters hold
        self._expansion = int(self._params.efSearch)
        self._ptr = faiss.swig_ptr
        self._labels = np.empty(0, dtype=np.int64)
        self._distances = np.empty(0, dtype=np.float32)
        self._outputs = (self._ptr(self._distances), self._ptr(self._labels))
        self._faiss = faiss

    @classmethod
    def new(
        cls,
        dimension: int,
        *,
        dtype: str,
        connectivity: int,
        expansion_add: int,
        expansion_search: int,
    ) -> FaissGraph:
        """An empty graph; ``dtype``: ``"f32"``, ``"f16"`` or ``"bf16"``."""
        faiss = require_faiss()
        kind = _KINDS[dtype]
        index = _new_index(faiss, dimension, kind, connectivity)
        index.hnsw.efConstruction = expansion_add
        index.hnsw.efSearch = expansion_search
        return cls(index, kind, np.zeros(0, dtype=np.uint8), 0)

    def in_memory(self) -> FaissGraph:
        return self

    def __len__(self) -> int:
        """Live nodes."""
        return int(self._index.ntotal) - self._dead

    @property
    def dimension(self) -> int:
        return int(self._index.d)

    @property
    def nbytes(self) -> int:
        """Memory the graph holds: codes, links, offsets, levels and the live bitmap."""
        hnsw, nodes = self._index.hnsw, int(self._index.ntotal)
        codes = nodes * int(self._storage.code_size)
        return codes + 4 * int(hnsw.neighbors.size()) + 12 * nodes + self._live.nbytes

    def add(self, keys: npt.NDArray[Any], vectors: npt.NDArray[np.float32]) -> None:
        """Add ``vectors`` as nodes ``keys``, which must be the next node numbers."""
        first = int(self._index.ntotal)
        if keys.size != vectors.shape[0] or not np.array_equal(
            keys, np.arange(first, first + keys.size)
        ):
            raise ValueError(f"faiss numbers its nodes itself: keys must follow {first}")
        self._index.add(np.ascontiguousarray(vectors, dtype=np.float32))
        nodes = first + keys.size
        if self._live.size * 8 < nodes:
            live = np.zeros(max(-(-nodes // 8), 2 * self._live.size), dtype=np.uint8)
            live[: self._live.size] = self._live
            self._live, self._selector = live, None  # the selector points at the old one
        bits = np.unpackbits(self._live, bitorder="little")
        bits[first:nodes] = 1
        self._live[:] = np.packbits(bits, bitorder="little")

    def remove(self, keys: npt.NDArray[Any]) -> None:
        """Mark nodes ``keys`` dead: walks no longer return them."""
        if not keys.size:
            return
        bits = np.unpackbits(self._live, bitorder="little")
        where = keys.astype(np.intp)
        self._dead += int(bits[where].sum())
        bits[where] = 0
        self._live[:] = np.packbits(bits, bitorder="little")

    def search(self, vector: npt.NDArray[np.float32], count: int, expansion: int) -> Keys:
        """Keys of about the ``count`` nearest live vectors, best first, walking with a
        beam of ``expansion``, on this thread (a view of a buffer the next search reuses)."""
        params = self._params
        if expansion != self._expansion:  # each SWIG attribute write costs ~0.5 us
            params.efSearch = self._expansion = expansion
        if self._dead and self._selector is None:
            ptr = self._ptr(self._live)
            self._selector = self._faiss.IDSelectorBitmap(self._live.size, ptr)
        selector = self._selector if self._dead else None
        if selector is not self._selecting:
            params.sel = self._selecting = selector
        labels = self._labels
        if labels.size < count:  # the output buffers and their pointers, made once a size
            labels = self._labels = np.empty(count, dtype=np.int64)
            self._distances = np.empty(count, dtype=np.float32)
            self._outputs = (self._ptr(self._distances), self._ptr(labels))
        query = np.ascontiguousarray(vector, dtype=np.float32)  # faiss reads it raw: 0.15 us
        self._index.search_c(1, self._ptr(query), count, *self._outputs, params)
        found = labels[:count]
        if labels.item(count - 1) < 0:  # fewer than count found: faiss pads with -1
            found = found[found >= 0]
        return found

    def serialized(self) -> bytearray:
        """The graph in :class:`FaissGraphFile`'s layout."""
        faiss, hnsw, nodes = self._faiss, self._index.hnsw, int(self._index.ntotal)
        arrays = [
            faiss.vector_to_array(hnsw.levels).astype("<i4"),
            faiss.vector_to_array(hnsw.offsets).astype("<u8"),
            faiss.vector_to_array(hnsw.neighbors).astype("<i4"),
            self._live[: -(-nodes // 8)],
            faiss.vector_to_array(self._storage.codes).astype(np.uint8),
        ]
        head = _HEAD.pack(
            _MAGIC,
            _VERSION,
            self._kind,
            int(self._index.d),
            int(hnsw.nb_neighbors(1)),
            int(hnsw.efConstruction),
            nodes,
            int(arrays[2].size),
            int(hnsw.entry_point),
            int(hnsw.max_level),
            self._dead,
        )
        out = bytearray(head)
        for array in arrays:
            out += bytes(-len(out) % _ALIGN)
            out += array.tobytes()
        return out


class FaissGraphFile:
    """A saved :class:`FaissGraph` of ``dimension``, mapped read-only, whose head is
    checked on opening (the sizes of every array against the file's: O(1)). Raises
    ``ValueError`` (``OSError`` if unreadable). :meth:`check` checks every node,
    :meth:`graph` copies the checked arrays into a new faiss index."""

    def __init__(self, path: os.PathLike[str] | str, dimension: int) -> None:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            if size < _HEAD.size:
                raise ValueError("the graph file ends early")
            self._mapping = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        magic, version, kind, dims, connectivity, expansion_add, nodes, slots, entry, top, dead = (
            _HEAD.unpack_from(self._mapping, 0)
        )
        if magic != _MAGIC or version != _VERSION or kind >= len(_SCALAR_BYTES):
            raise ValueError("not a ragloom faiss HNSW graph of version 1")
        if dims != dimension or not 2 <= connectivity <= _MAX_CONNECTIVITY:
            raise ValueError(f"{dims} dimensions (not {dimension}), connectivity {connectivity}")
        if not 2 <= expansion_add <= _MAX_EXPANSION:  # a damaged one would stall adds
            raise ValueError(f"build beam {expansion_add}")
        if dead > nodes or not -1 <= top < 64 or not -1 <= entry < max(nodes, 1):
            raise ValueError(f"{nodes} nodes, {dead} dead, entry {entry}, top level {top}")
        code_size = dims * _SCALAR_BYTES[kind]
        layout, at = [], _HEAD.size
        for dtype, count in (
            ("<i4", nodes),
            ("<u8", nodes + 1),
            ("<i4", slots),
            ("u1", -(-nodes // 8)),
            ("u1", nodes * code_size),
        ):
            at += -at % _ALIGN
            layout.append((dtype, count, at))
            at += count * np.dtype(dtype).itemsize
        if at != size:
            raise ValueError(f"the graph's arrays take {at} bytes, the file {size}")
        self._layout, self._data = layout, np.frombuffer(self._mapping, dtype=np.uint8)
        self._kind, self._dimension, self._code_size = kind, dims, code_size
        self._connectivity, self._expansion_add = connectivity, expansion_add
        self.nodes, self.present = nodes, nodes - dead
        self._entry, self._top, self._dead = entry, top, dead
        self._keys: Keys | None = None

    def _array(self, which: int) -> npt.NDArray[Any]:
        dtype, count, at = self._layout[which]
        array: npt.NDArray[Any] = np.frombuffer(self._data, dtype, count, at)
        return array

    def check(self) -> Keys:
        """Raise ``ValueError`` unless every node is well formed (levels in range, the
        entry on the top level, each node's slots where its levels put them, every
        neighbour a node, on an upper level one that reaches that level, as many live
        bits as the head says). Returns the keys of the live nodes (checked once)."""
        if self._keys is None:
            self._keys = self._check_nodes()
        return self._keys

    def _unshrunk(self) -> None:
        """Raise ``ValueError`` if the file is now shorter than its mapping (truncated
        since it was opened): reading a page past its end would be a SIGBUS."""
        if self._mapping.size() < len(self._mapping):  # the file's size, by fstat
            raise ValueError(
                f"the graph file shrank to {self._mapping.size()} bytes since it was opened"
            )

    def _check_nodes(self) -> Keys:
        self._unshrunk()
        levels, offsets, links, live = (self._array(i) for i in range(4))
        nodes, top = self.nodes, self._top
        faiss = require_faiss()
        empty = _new_index(faiss, 8, 1, self._connectivity)  # referenced while read
        # Slots up to each level, as faiss lays them out for this connectivity.
        steps = faiss.vector_to_array(empty.hnsw.cum_nneighbor_per_level).astype(np.int64)
        if not nodes:
            if links.size or top != -1 or self._entry != -1 or offsets[0]:
                raise ValueError("links, levels or an entry in an empty graph")
            return np.empty(0, dtype=np.int64)
        if self._entry < 0 or int(levels.min()) < 1 or int(levels.max()) != top + 1:
            raise ValueError(f"levels out of range (top level {top}, entry {self._entry})")
        if top + 1 >= steps.size:
            raise ValueError(f"levels out of range (top level {top})")
        if levels[self._entry] != top + 1:
            raise ValueError(f"the entry node {self._entry} is not on the top level {top}")
        starts = offsets.astype(np.int64)
        if starts[0] != 0 or not np.array_equal(np.diff(starts), steps[levels]):
            raise ValueError("a node's neighbour slots do not match its levels")
        if starts[-1] != links.size:
            raise ValueError(f"the nodes take {starts[-1]} slots, the file holds {links.size}")
        if int(links.min(initial=0)) < -1 or int(links.max(initial=0)) >= nodes:
            raise ValueError("a neighbour is not a node of the graph")
        for level in range(1, top + 1):  # upper lists link nodes that reach the level
            owners = np.flatnonzero(levels > level)
            width = int(steps[level + 1] - steps[level])
            slots = links[(starts[owners] + steps[level])[:, None] + np.arange(width)]
            used = slots[slots >= 0]
            if used.size and int(levels[used].min()) <= level:
                raise ValueError(f"a level-{level} neighbour does not reach level {level}")
        bits = np.unpackbits(live, bitorder="little")
        if bits[nodes:].any() or int(bits.sum()) != self.present:
            raise ValueError(f"{int(bits[:nodes].sum())} live nodes, the head says {self.present}")
        keys: Keys = np.flatnonzero(bits[:nodes]).astype(np.int64)
        return keys

    def graph(self, *, view: bool = False) -> FaissGraph:
        """The checked graph (:meth:`check` first), copied into a new faiss index
        (``view`` is accepted for the usearch graph's interface; faiss cannot view)."""
        del view
        self.check()
        self._unshrunk()  # again: checked maybe long ago, copied now
        faiss = require_faiss()
        index = _new_index(faiss, self._dimension, self._kind, self._connectivity)
        hnsw = index.hnsw
        # Straight from the checked mapping into faiss's vectors: one copy.
        for which, vector in ((0, hnsw.levels), (1, hnsw.offsets), (2, hnsw.neighbors)):
            faiss.copy_array_to_vector(self._array(which), vector)
        hnsw.entry_point, hnsw.max_level = self._entry, self._top
        hnsw.efConstruction = self._expansion_add
        storage = faiss.downcast_index(index.storage)
        faiss.copy_array_to_vector(self._array(4), storage.codes)
        storage.ntotal = index.ntotal = self.nodes
        return FaissGraph(index, self._kind, np.array(self._array(3)), self._dead)
