"""The one module that imports usearch (the ``ragloom-core[hnsw]`` extra; it has no stubs).

:class:`HnswGraph` wraps a ``usearch.index.Index`` with the few typed calls
:mod:`ragloom.core.stores.hnsw` needs; ``usearch`` is imported on first use, and its
absence raises an :class:`~ragloom.core.errors.EmbeddingStoreError` naming the extra.

usearch trusts the files it restores: a damaged neighbour id or level makes it read out
of bounds (a segfault), a damaged count makes it allocate terabytes. So
:func:`check_graph_file` reads the file's structure first, vectorized with numpy, and
:meth:`HnswGraph.restore` hands usearch only a file that passed. The layout (usearch 2,
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

import os
import struct
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragloom.core.errors import EmbeddingStoreError

__all__ = ["HnswGraph", "check_graph_file", "require_usearch"]

Keys = npt.NDArray[np.uint64]

_HEAD = struct.Struct("<7s3H4B3Q?")  # usearch's 64-byte head, its first 42 bytes
_HEAD_BYTES = 64
_GRAPH = struct.Struct("<5Q")  # size, connectivity, connectivity_base, max_level, entry
_NODE_HEAD = 10  # key u64, level i16
_SCALAR_BYTES = {11: 4, 12: 2, 23: 1}  # f32, f16, i8: the dtypes ragloom builds
_METRIC_IP, _KEY_U64, _SLOT_U32 = ord("i"), 14, 15
_MAX_CONNECTIVITY = 1 << 12
_FREE_KEY = np.uint64(2**64 - 1)  # the key of a removed node
_BLOCK = 32_768  # neighbour lists checked at a time (bounds the index arrays)


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


class HnswGraph:
    """A usearch HNSW graph over unit vectors (inner product), keyed by uint64 keys."""

    def __init__(self, index: Any) -> None:
        self._index = index

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

    @classmethod
    def restore(
        cls, path: str | os.PathLike[str], *, view: bool, dimension: int
    ) -> tuple[HnswGraph, Keys]:
        """A graph saved by :meth:`serialized`, read into memory or memory-mapped (``view``),
        and the keys of its nodes, once :func:`check_graph_file` passed it (raises
        ``ValueError`` otherwise)."""
        index_class = require_usearch()
        keys = check_graph_file(Path(path), dimension)
        try:
            index = index_class.restore(os.fspath(path), view=view)
        except (RuntimeError, ValueError, MemoryError) as exc:
            raise ValueError(f"usearch cannot read the graph ({exc})") from exc
        if index is None:
            raise ValueError("not a usearch index file")
        return cls(index), keys

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
        self._index.add(keys, vectors)

    def remove(self, keys: Keys) -> None:
        self._index.remove(keys)

    def search(self, vector: npt.NDArray[np.float32], count: int, expansion: int) -> Keys:
        """Keys of about the ``count`` nearest vectors, best first."""
        if self._index.expansion_search != expansion:
            self._index.expansion_search = expansion
        keys: Keys = self._index.search(vector, count).keys
        return keys

    def serialized(self) -> bytearray:
        """The graph in usearch's file format (what :meth:`restore` reads)."""
        data: bytearray = self._index.save()
        return data


def check_graph_file(path: Path, dimension: int) -> Keys:
    """Raise ``ValueError`` unless ``path`` is a well-formed usearch file of ``dimension``
    (layout in the module docstring): sizes that add up to the file's, known kinds, a
    level and neighbour count in range for every node, every neighbour a node of the
    graph. Returns the keys of the nodes not removed. Reads the file through a map,
    holding O(nodes) memory."""
    size = path.stat().st_size
    if size < 8:
        raise ValueError("the graph file ends early")
    data = np.memmap(path, dtype=np.uint8, mode="r")
    raw = data.data
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
    if scalar not in _SCALAR_BYTES or dims != dimension or width != dims * _SCALAR_BYTES[scalar]:
        raise ValueError(f"vectors of {dims} dimensions, {width} bytes, kind {scalar}")
    if multi or present + deleted != rows:
        raise ValueError(f"{present} + {deleted} nodes for {rows} vectors")
    nodes, connectivity, base, max_level, entry = _GRAPH.unpack_from(raw, head + _HEAD_BYTES)
    if nodes != rows or not 2 <= connectivity <= base <= _MAX_CONNECTIVITY:
        raise ValueError(f"{nodes} nodes, connectivity {connectivity}, base {base}")
    levels_at = head + _HEAD_BYTES + _GRAPH.size
    nodes_at = levels_at + 2 * nodes
    if nodes_at > size:
        raise ValueError("the graph file ends early")
    if not nodes:
        if nodes_at != size:
            raise ValueError("data after an empty graph")
        return np.empty(0, dtype=np.uint64)
    levels = data[levels_at:nodes_at].view("<i2").astype(np.int64)
    if not (entry < nodes and levels.min() >= 0 and levels.max() == max_level == levels[entry]):
        raise ValueError(f"levels out of range (max level {max_level}, entry {entry})")
    base_bytes, level_bytes = 4 + 4 * base, 4 + 4 * connectivity
    ends = np.cumsum(_NODE_HEAD + base_bytes + level_bytes * levels)
    if nodes_at + int(ends[-1]) != size:
        raise ValueError(f"the nodes take {int(ends[-1])} bytes, the file has {size - nodes_at}")
    starts = nodes_at + np.concatenate(([0], ends[:-1]))
    words = _Words(data)
    if not np.array_equal(words.int16(starts + 8), levels):
        raise ValueError("a node's level differs from the level table")
    _check_neighbours(words, starts + _NODE_HEAD, base, nodes)
    upper = np.repeat(np.arange(nodes), levels)  # one entry per (node, level >= 1)
    if upper.size:
        first = np.concatenate(([0], np.cumsum(levels)[:-1]))
        level = np.arange(upper.size) - first[upper]  # 0 for level 1
        at = starts[upper] + _NODE_HEAD + base_bytes + level_bytes * level
        _check_neighbours(words, at, connectivity, nodes)
    keys = words.uint64(starts)
    live: Keys = keys[keys != _FREE_KEY]
    if live.size != present:
        raise ValueError(f"{live.size} nodes have keys, the head says {present}")
    return live


def _check_neighbours(words: _Words, at: npt.NDArray[np.int64], capacity: int, nodes: int) -> None:
    """Raise unless each neighbour list at ``at`` holds at most ``capacity`` slots, all
    below ``nodes`` (checked a block of lists at a time)."""
    columns = np.arange(1, capacity + 1, dtype=np.int64)
    for first in range(0, at.size, _BLOCK):
        block = at[first : first + _BLOCK]
        counts = words.uint32(block)
        if counts.size and int(counts.max()) > capacity:
            raise ValueError(f"a node lists {int(counts.max())} neighbours, at most {capacity} fit")
        slots = words.uint32(block[:, None] + 4 * columns)
        used = columns <= counts[:, None]
        if (slots[used] >= nodes).any():
            raise ValueError("a neighbour is not a node of the graph")


class _Words:
    """Unaligned little-endian integers at byte positions of a file's bytes, gathered
    vectorized: one uint32 (or int16) view of the bytes for each alignment."""

    def __init__(self, data: npt.NDArray[np.uint8]) -> None:
        size = data.size
        self._u32 = [data[s : s + (size - s) // 4 * 4].view("<u4") for s in range(4)]
        self._i16 = [data[s : s + (size - s) // 2 * 2].view("<i2") for s in range(2)]

    def uint32(self, at: npt.NDArray[np.int64]) -> npt.NDArray[np.uint32]:
        out = np.empty(at.shape, dtype=np.uint32)
        shift = at % 4
        for s, view in enumerate(self._u32):
            where = shift == s
            out[where] = view[(at[where] - s) // 4]
        return out

    def int16(self, at: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        out = np.empty(at.shape, dtype=np.int64)
        shift = at % 2
        for s, view in enumerate(self._i16):
            where = shift == s
            out[where] = view[(at[where] - s) // 2]
        return out

    def uint64(self, at: npt.NDArray[np.int64]) -> Keys:
        low = self.uint32(at).astype(np.uint64)
        high = self.uint32(at + 4).astype(np.uint64)
        keys: Keys = low | (high << np.uint64(32))
        return keys
