"""The one module that imports usearch (the ``ragloom-core[hnsw]`` extra; it has no stubs).

:class:`HnswGraph` wraps a ``usearch.index.Index`` with the few typed calls
:mod:`ragloom.core.stores.hnsw` needs; ``usearch`` is imported on first use, and its
absence raises an :class:`~ragloom.core.errors.EmbeddingStoreError` naming the extra.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import numpy.typing as npt

from ragloom.core.errors import EmbeddingStoreError

__all__ = ["HnswGraph", "require_usearch"]

Keys = npt.NDArray[np.uint64]


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
    def restore(cls, path: str | os.PathLike[str], *, view: bool) -> HnswGraph:
        """A graph saved by :meth:`save`, read into memory or memory-mapped (``view``)."""
        index_class = require_usearch()
        index = index_class.restore(os.fspath(path), view=view)
        if index is None:
            raise ValueError("not a usearch index file")
        return cls(index)

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
