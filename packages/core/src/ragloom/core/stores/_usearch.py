"""The one module that imports usearch (the ``ragloom-core[hnsw]`` extra; it has no stubs).

:class:`HnswGraph` wraps a ``usearch.index.Index`` with the few typed calls
:mod:`ragloom.core.stores.hnsw` needs; ``usearch`` is imported on first use, and its
absence raises an :class:`~ragloom.core.errors.EmbeddingStoreError` naming the extra.

usearch trusts the files it restores: a damaged neighbour id or level makes it read out
of bounds (a segfault), a damaged count makes it allocate terabytes. So a saved graph is
opened as a :class:`GraphFile`: the file is mapped read-only and its head checked when
opened (O(1)); :meth:`GraphFile.check` then checks every node, vectorized with numpy
(O(nodes), at memory speed), and only then does :meth:`GraphFile.graph` hand usearch
the very mapping that passed. The layout (usearch 2,
``index_dense_gt::save_to_stream``, all little-endian)::

    rows u32, bytes_per_vector u32     the vectors, then rows * bytes_per_vector bytes
    64-byte head                       "usearch", version, metric, scalar, key and slot
                                       kinds (u8 each), present, deleted, dimensions (u64)
    size, connectivity, connectivity_base, max_level, entry_slot      (u64 each)
    levels                             i16 a node
    nodes                              key u64, level i16, then per level 0..level a
                                       u32 neighbour count and connectivity_base (level 0)
                                       or connectivity u32 neighbour slots
"""

from __future__ import annotations

import functools
import mmap
import os
import struct
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import sliding_window_view

from ragloom.core.errors import EmbeddingStoreError

__all__ = ["GraphFile", "HnswGraph", "native_dtype", "require_usearch"]

Keys = npt.NDArray[np.uint64]
Offsets = npt.NDArray[np.int64]
Words = npt.NDArray[np.uint32]

_HEAD = struct.Struct("<7s3H4B3Q?")  # usearch's 64-byte head, its first 42 bytes
_HEAD_BYTES = 64
_GRAPH = struct.Struct("<5Q")  # size, connectivity, connectivity_base, max_level, entry
_NODE_HEAD = 10  # key u64, level i16
_SCALAR_BYTES = {11: 4, 12: 2, 4: 2, 23: 1}  # f32, f16, bf16, i8: the dtypes ragloom builds
_METRIC_IP, _KEY_U64, _SLOT_U32 = ord("i"), 14, 15
_MAX_CONNECTIVITY = 1 << 12
_FREE_KEY = np.uint64(2**64 - 1)  # the key of a removed node
_HIGH = np.uint64(32)  # shift of a key's high word
_BLOCK_BYTES = 1 << 23  # neighbour lists gathered at a time: 8 MB of them


def require_usearch() -> Any:
    """The ``usearch.index.Index`` class, or the error saying which extra to install."""
    try:
        from usearch.index import Index  # type: ignore[import-untyped,unused-ignore]
    except ImportError as exc:
        raise EmbeddingStoreError(
            "index='hnsw' needs the usearch library, which is not installed: "
            "pip install 'ragloom-core[hnsw]'"
        ) from exc
    return Index


@functools.cache
def native_dtype() -> str:
    """The graph dtype ``hnsw_dtype="auto"`` builds: ``"bf16"`` when usearch computes
    bfloat16 distances with SIMD kernels on this CPU (its ``hardware_acceleration`` is
    not ``"serial"``), else ``"f16"``. bf16 is as small as f16 and walked ~1.5x faster
    where native (AVX-512 BF16), since its conversion is a shift (scripts/bench/bench_ann.py)."""
    probe = require_usearch()(ndim=8, metric="ip", dtype="bf16")
    return "f16" if str(probe.hardware_acceleration) == "serial" else "bf16"


class HnswGraph:
    """A usearch HNSW graph over unit vectors (inner product), keyed by uint64 keys; a
    view of a :class:`GraphFile`'s mapping (``viewed``) or held in memory."""

    def __init__(self, index: Any, mapping: mmap.mmap | None = None) -> None:
        self._index = index
        self._mapping = mapping  # what a view reads: usearch keeps no reference to it
        self._search_many = index._compiled.search_many
        self._expansion = int(index.expansion_search)

    @classmethod
    def new(
        cls,
        dimension: int,
        *,
        dtype: str,
        connectivity: int,
        expansion_add: int,
        expansion_search: int,
    ) -> HnswGraph:
        index_class = require_usearch()
        return cls(
            index_class(
                ndim=dimension,
                metric="ip",
                dtype=dtype,
                connectivity=connectivity,
                expansion_add=expansion_add,
                expansion_search=expansion_search,
            )
        )

    @property
    def viewed(self) -> bool:
        """Whether the graph is a read-only view of a saved file."""
        return self._mapping is not None

    def in_memory(self) -> HnswGraph:
        """This graph if it is in memory, else a copy of the view in memory (which can
        change); the copy reads the already checked mapping, not the file again."""
        if self._mapping is None:
            return self
        return HnswGraph(self._index.copy())

    def __len__(self) -> int:
        return len(self._index)

    @property
    def dimension(self) -> int:
        return int(self._index.ndim)

    @property
    def nbytes(self) -> int:
        """Memory the graph holds (vectors, links and reserved capacity)."""
        return int(self._index.memory_usage)

    def add(self, keys: Keys, vectors: npt.NDArray[np.float32]) -> None:
        """Insert ``vectors`` under ``keys`` on this thread. usearch's concurrent add
        (its default ``threads=0``) strands nodes no walk reaches (unum-cloud/USearch
        issue 735, in 2.26): two threads left up to 37 of 300 4-d rows unreachable in
        1 build of ~150 and 2-28 of 20k 16-d rows in each of 3; one thread none, and
        the same graph for the same rows."""
        self._index.add(keys, vectors, threads=1)

    def remove(self, keys: Keys) -> None:
        self._index.remove(keys)

    def search(self, vector: npt.NDArray[np.float32], count: int, expansion: int) -> Keys:
        """Keys of about the ``count`` nearest vectors, best first, walking with a beam of
        ``expansion``. Calls usearch's compiled search on this thread: its Python
        ``Index.search`` adds a batch wrapper and, with its default ``threads=0``, a
        thread pool, which cost as much as a short walk."""
        if expansion != self._expansion:
            self._index.expansion_search = self._expansion = expansion
        # Positional (count, exact, threads): pybind's keyword matching costs ~0.4 us.
        keys, _, found, _, _ = self._search_many(vector[None], count, False, 1)
        best: Keys = keys[0, : found[0]]
        return best

    def serialized(self) -> bytearray:
        """The graph in usearch's file format (what :class:`GraphFile` reads)."""
        data: bytearray = self._index.save()
        return data


class GraphFile:
    """A saved usearch file of ``dimension``, mapped read-only, whose head (kinds,
    dimension, counts, connectivity) is checked on opening: one ``mmap`` and a read of
    a page, whatever the graph's size. Raises ``ValueError`` (``OSError`` if unreadable).

    Nothing reads the nodes until :meth:`check`; :meth:`graph` hands usearch only a file
    that passed it, through the same mapping: a file a later save replaced (saves write
    new files and delete the old ones) cannot slip in, and this one stays readable."""

    def __init__(self, path: Path, dimension: int) -> None:
        with open(path, "rb") as file:
            self.size = os.fstat(file.fileno()).st_size
            if self.size < 8:
                raise ValueError("the graph file ends early")
            self._mapping = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        self._data = np.frombuffer(self._mapping, dtype=np.uint8)
        self._keys: Keys | None = None
        raw, size = self._mapping, self.size
        rows, width = struct.unpack_from("<2I", raw, 0)
        head = 8 + rows * width
        if head + _HEAD_BYTES + _GRAPH.size > size:
            raise ValueError(f"the graph file ends early ({rows} vectors of {width} bytes)")
        magic, major, _, _, metric, scalar, key, slot, present, deleted, dims, multi = (
            _HEAD.unpack_from(raw, head)
        )
        kinds = (metric, key, slot)
        if magic != b"usearch" or major != 2 or kinds != (_METRIC_IP, _KEY_U64, _SLOT_U32):
            raise ValueError("not a usearch 2 inner-product index with u64 keys and u32 slots")
        if (
            scalar not in _SCALAR_BYTES
            or dims != dimension
            or width != dims * _SCALAR_BYTES[scalar]
        ):
            raise ValueError(f"vectors of {dims} dimensions, {width} bytes, kind {scalar}")
        if multi or present + deleted != rows:
            raise ValueError(f"{present} + {deleted} nodes for {rows} vectors")
        nodes, connectivity, base, max_level, entry = _GRAPH.unpack_from(raw, head + _HEAD_BYTES)
        if nodes != rows or not 2 <= connectivity <= base <= _MAX_CONNECTIVITY:
            raise ValueError(f"{nodes} nodes, connectivity {connectivity}, base {base}")
        self._levels_at = head + _HEAD_BYTES + _GRAPH.size
        if self._levels_at + 2 * nodes > size:
            raise ValueError("the graph file ends early")
        self.nodes, self.present = nodes, present
        self._connectivity, self._base = connectivity, base
        self._max_level, self._entry = max_level, entry

    def check(self) -> Keys:
        """Raise ``ValueError`` unless every node is well formed: sizes that add up to
        the file's, a level in range and equal to the level table's, at most the
        capacity of neighbours on each level, every neighbour a node of the graph, as
        many keys as the head says. Returns the keys of the nodes not removed (checked
        once; later calls return them again)."""
        if self._keys is None:
            self._keys = self._check_nodes()
        return self._keys

    def graph(self, *, view: bool) -> HnswGraph:
        """The checked graph (:meth:`check` first): a view of the mapping, or a copy of
        it in memory. Raises ``ValueError`` if usearch refuses it."""
        self.check()
        index_class = require_usearch()
        try:
            index = index_class.restore(self._data, view=view)
        except (RuntimeError, ValueError, MemoryError) as exc:
            raise ValueError(f"usearch cannot read the graph ({exc})") from exc
        if index is None:
            raise ValueError("not a usearch index file")
        return HnswGraph(index, self._mapping if view else None)

    def _check_nodes(self) -> Keys:
        nodes, data = self.nodes, self._data
        nodes_at = self._levels_at + 2 * nodes
        if not nodes:
            if nodes_at != self.size:
                raise ValueError("data after an empty graph")
            return np.empty(0, dtype=np.uint64)
        levels = data[self._levels_at : nodes_at].view("<i2")
        max_level, entry = self._max_level, self._entry
        if not (entry < nodes and levels.min() >= 0 and levels.max() == max_level):
            raise ValueError(f"levels out of range (max level {max_level}, entry {entry})")
        if levels[entry] != max_level:
            raise ValueError(f"the entry node {entry} is not on the top level {max_level}")
        base_bytes, level_bytes = 4 + 4 * self._base, 4 + 4 * self._connectivity
        starts = levels.astype(np.int64)
        starts *= level_bytes
        starts += _NODE_HEAD + base_bytes  # each node's size, then where it starts:
        total = int(starts.sum())
        if nodes_at + total != self.size:
            raise ValueError(f"the nodes take {total} bytes, the file {self.size - nodes_at}")
        starts[1:] = np.cumsum(starts[:-1])
        starts[0] = 0
        starts += nodes_at
        keys: list[Keys] = []
        # Every node takes 2 bytes mod 4 (a 10-byte head, then 4-byte words), so the even
        # nodes all start at one alignment and the odd ones at another: each half reads
        # its words through one uint32 view, without a per-word alignment test.
        for half in (0, 1):
            at, level = starts[half::2], levels[half::2]
            if not at.size:
                continue
            words, key = _uint32s(data, int(at[0]) % 4), at >> 2  # each node's first word
            if not np.array_equal(words[key + 2] & 0xFFFF, level.view(np.uint16)):
                raise ValueError("a node's level differs from the level table")
            keys.append(words[key].astype(np.uint64) | words[key + 1].astype(np.uint64) << _HIGH)
            lists = at + _NODE_HEAD
            _check_lists(data, lists, self._base, nodes)
            upper = np.flatnonzero(level)
            if upper.size:  # one list per level >= 1 of each node above level 0
                count = level[upper].astype(np.int64)
                owner = np.repeat(upper, count)
                first = np.cumsum(count) - count
                rank = np.arange(owner.size) - np.repeat(first, count)  # 0 for level 1
                _check_lists(
                    data, lists[owner] + base_bytes + level_bytes * rank, self._connectivity, nodes
                )
        all_keys = np.concatenate(keys)
        live: Keys = all_keys[all_keys != _FREE_KEY]
        if live.size != self.present:
            raise ValueError(f"{live.size} nodes have keys, the head says {self.present}")
        return live


def _uint32s(data: npt.NDArray[np.uint8], shift: int) -> Words:
    """``data``'s bytes from ``shift`` on as little-endian uint32 words: the word of a
    byte offset ``at`` (``at % 4 == shift``) is ``at >> 2``."""
    words: Words = data[shift : shift + (data.size - shift) // 4 * 4].view("<u4")
    return words


def _words_at(data: npt.NDArray[np.uint8], at: Offsets, width: int) -> Words:
    """The ``width`` little-endian uint32 words at each byte offset of ``at`` (all the
    same mod 4), gathered as rows of a sliding window over one uint32 view of ``data``."""
    words = _uint32s(data, int(at[0]) % 4)
    rows: Words = sliding_window_view(words, width)[at >> 2]
    return rows


def _check_lists(data: npt.NDArray[np.uint8], at: Offsets, capacity: int, nodes: int) -> None:
    """Raise ``ValueError`` unless each neighbour list at ``at`` (a u32 count, then
    ``capacity`` u32 slots) holds at most ``capacity`` slots, all below ``nodes``. The
    slots past a list's count are only looked at when some slot is out of range."""
    step = max(1, _BLOCK_BYTES // (4 * capacity + 4))
    for first in range(0, at.size, step):
        block = _words_at(data, at[first : first + step], capacity + 1)
        counts, slots = block[:, 0], block[:, 1:]
        if int(counts.max()) > capacity:
            raise ValueError(f"a node lists {int(counts.max())} neighbours, at most {capacity} fit")
        if int(slots.max()) >= nodes:
            used = np.arange(capacity) < counts[:, None]
            if (slots[used] >= nodes).any():
                raise ValueError("a neighbour is not a node of the graph")
