"""Quantized search indexes for :class:`~ragloom.core.stores.in_memory.InMemoryEmbeddingStore`.

A quantized index only *chooses candidates*: it scans compact codes of the unit vectors,
keeps the best ``max(oversample * k, min_candidates)`` rows (plus rows tied with the last
one) and hands them to the store, which rescores them exactly in ``float64`` as in exact
search. Scores are therefore always exact; only recall can suffer, when a true top-k row
is not among the candidates.

- ``"int8"``: each dimension of ``u - mean`` (``u`` the unit vector) is scaled by its own
  factor (the 99.9th percentile of ``|u - mean|`` over a sample, so that outliers clip
  instead of wasting resolution) and rounded to int8: 1 byte a dimension, 4x less memory
  than the float32 matrix. The scan converts blocks of codes to float32 in cache.
- ``"binary"``: one sign bit of ``u - mean`` a dimension, packed into uint64 words
  (32x less memory); the scan is XOR + popcount (Hamming distance), and the cut-off is
  found with a histogram of the distances instead of a partition.

Centering on the mean matters for real text embeddings, whose dimensions have non-zero
means: without it most sign bits agree for every row. Since ``q . (u - mean)`` differs
from ``q . u`` by a constant, the int8 ranking estimates the cosine ranking.

Codes are kept in step lazily: appends are encoded at the next quantized search,
replaced rows are re-encoded, compaction moves codes with the rows, and removed rows are
masked like in exact search. The mean and scales are learned from a sample of up to
16,384 rows at the first quantized search and learned again (re-encoding everything) when
the store has doubled since, until the sample is full-sized four times over.

:class:`IndexOptions` also configures the HNSW index (``kind="hnsw"``), which lives in
:mod:`ragloom.core.stores.hnsw` and chooses candidates the same way.

When the index does not pay, search stays exact: below ``exact_below`` eligible rows (live
and passing the filter; so a selective filter falls back to exact search on the filtered
rows), and when the candidates would cover every eligible row.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ragloom.core.errors import EmbeddingStoreError

__all__ = ["IndexKind", "IndexOptions", "QuantizedIndex", "index_options", "new_index"]

IndexKind = Literal["exact", "int8", "binary", "hnsw"]
HnswDtype = Literal["auto", "f16", "bf16", "i8", "f32"]
HnswEngine = Literal["usearch", "faiss"]
Positions = npt.NDArray[np.intp]
Matrix = npt.NDArray[np.float32]

_KINDS = ("exact", "int8", "binary", "hnsw")
_HNSW_DTYPES = ("auto", "f16", "bf16", "i8", "f32")
_HNSW_ENGINES = ("usearch", "faiss")
# Defaults measured on clustered 384-d data (scripts/bench/bench_ann.py): recall@10 >= 0.95.
_DEFAULTS: dict[str, tuple[float, int]] = {
    "int8": (4.0, 64),
    "binary": (20.0, 400),
    "hnsw": (1.0, 0),  # the beam (expansion) sets the recall; rescoring only orders
}
# An int8 graph misorders near neighbours (recall@10 0.91 at most with 10 candidates on
# 100k text rows); rescoring twice as many lifts it to 0.95 at beam 32, 0.99 at beam 96.
_HNSW_I8_OVERSAMPLE = 2.0
_EXACT_BELOW = 20_000
_TRAIN_SAMPLE = 16_384
_CLIP_QUANTILE = 0.999
_ENCODE_BLOCK = 8192
_INT8_BLOCK = 1024  # int8 rows converted to float32 at a time: about an L2 cache
_HAMMING_BLOCK = 16_384
_GATHER_BELOW = 1 / 3  # as in exact search: gather the selected rows below this share
_COMPACT_CHUNK = 4096
STATE_VERSION = 1  # of what a save keeps of an index (see QuantizedIndex.state)


@dataclass(frozen=True, slots=True)
class IndexOptions:
    """How :class:`InMemoryEmbeddingStore` searches: ``kind`` and its trade-offs.

    ``oversample`` and ``min_candidates`` set how many rows are rescored exactly
    (``max(oversample * max_results, min_candidates)``; defaults per kind: int8 4x and 64,
    binary 20x and 400, hnsw 1x and 0: the graph's own ranking is already close, so it
    returns ``max_results`` rows); ``exact_below`` is the number of eligible rows
    under which search stays exact (default 20,000, where exact search takes about a
    millisecond).

    HNSW only (:mod:`ragloom.core.stores.hnsw`): ``connectivity`` (links a node, 16),
    ``expansion`` (the search beam, 64; raised to the candidate count when smaller), the
    recall/speed knob: lower is faster, higher finds more of the true top k (recall@10
    about 0.95 at 32-40, 0.99 at 64-96 on 100k text embeddings; docs/indexes.md),
    ``expansion_add`` (the beam while building, 128) and ``hnsw_dtype``, how the graph
    stores its copy of the unit vectors: ``"auto"`` (default) is ``"bf16"`` where usearch
    has SIMD kernels for it, else ``"f16"`` (both half the float32 matrix; bf16 walks
    ~1.5x faster and builds ~1.4x faster on CPUs with AVX-512 BF16); ``"i8"`` a quarter
    (its coarse distances misorder neighbours, so 2x ``max_results`` candidates are
    rescored by default); ``"f32"`` the full copy. ``hnsw_engine``: the library that
    holds and walks the graph, ``"usearch"`` (default, the ``[hnsw]`` extra) or
    ``"faiss"`` (the ``[faiss]`` extra: a faiss ``IndexHNSWSQ``, whose walk makes a
    search 1.3-1.4x faster than on usearch at 100k text rows; ``"auto"`` is ``"f16"``
    there, ``"i8"`` is not offered; docs/indexes.md).
    """

    kind: IndexKind = "exact"
    oversample: float | None = None
    min_candidates: int | None = None
    exact_below: int = _EXACT_BELOW
    connectivity: int = 16
    expansion: int = 64
    expansion_add: int = 128
    hnsw_dtype: HnswDtype = "auto"
    hnsw_engine: HnswEngine = "usearch"

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise EmbeddingStoreError(
                f"index kind must be one of {', '.join(_KINDS)}, got {self.kind!r}"
            )
        oversample = self.oversample
        if oversample is not None and (
            isinstance(oversample, bool)
            or not isinstance(oversample, int | float)
            or not oversample >= 1
            or not math.isfinite(oversample)
        ):
            raise EmbeddingStoreError(
                f"oversample must be a finite number >= 1, got {oversample!r}"
            )
        for name in ("min_candidates", "exact_below"):
            value = getattr(self, name)
            if value is not None and (type(value) is not int or value < 0):
                raise EmbeddingStoreError(f"{name} must be an int >= 0, got {value!r}")
        for name in ("connectivity", "expansion", "expansion_add"):
            value = getattr(self, name)
            if type(value) is not int or value < 2:
                raise EmbeddingStoreError(f"{name} must be an int >= 2, got {value!r}")
        if self.hnsw_dtype not in _HNSW_DTYPES:
            raise EmbeddingStoreError(
                f"hnsw_dtype must be one of {', '.join(_HNSW_DTYPES)}, got {self.hnsw_dtype!r}"
            )
        if self.hnsw_engine not in _HNSW_ENGINES:
            raise EmbeddingStoreError(
                f"hnsw_engine must be one of {', '.join(_HNSW_ENGINES)}, got {self.hnsw_engine!r}"
            )
        if self.hnsw_engine == "faiss" and self.hnsw_dtype == "i8":
            raise EmbeddingStoreError("hnsw_dtype 'i8' is not offered by hnsw_engine 'faiss'")

    def candidate_count(self, k: int) -> int:
        """Rows rescored exactly for a top-``k`` search."""
        oversample, minimum = _DEFAULTS.get(self.kind, (1.0, 0))
        if self.kind == "hnsw" and self.hnsw_dtype == "i8":
            oversample = _HNSW_I8_OVERSAMPLE
        if self.oversample is not None:
            oversample = self.oversample
        if self.min_candidates is not None:
            minimum = self.min_candidates
        return max(math.ceil(oversample * k), minimum, k)

    def indexed_count(self, eligible: int, k: int) -> int | None:
        """:meth:`candidate_count` when the index pays for ``eligible`` rows, else None
        (exact search: below ``exact_below``, or candidates covering every eligible row)."""
        wanted = self.candidate_count(k)
        if eligible < self.exact_below or wanted >= eligible:
            return None
        return wanted


def index_options(index: IndexKind | IndexOptions) -> IndexOptions:
    """``index`` as :class:`IndexOptions` (a kind name takes the defaults)."""
    if isinstance(index, IndexOptions):
        return index
    if not isinstance(index, str):
        raise EmbeddingStoreError(
            f"index must be a kind name or IndexOptions, got {type(index).__name__}"
        )
    return IndexOptions(index)  # the kind is validated in __post_init__


def new_index(options: IndexOptions) -> QuantizedIndex | None:
    """The quantized index for ``options``, or ``None`` (exact search or HNSW, see
    :func:`ragloom.core.stores.hnsw.new_search_index`)."""
    if options.kind == "int8":
        return Int8Index(options)
    if options.kind == "binary":
        return BinaryIndex(options)
    return None


class QuantizedIndex:
    """Codes of the store's unit rows, in the store's row order (called with its lock held).

    Subclasses define the code layout (``_width``, ``_dtype``), ``_encode`` and ``_top``.
    """

    _dtype: Any

    def __init__(self, options: IndexOptions) -> None:
        self.options = options
        self._codes: npt.NDArray[Any] = np.empty((0, 0), dtype=self._dtype)
        self._synced = 0  # rows [0, _synced) are encoded
        self._dirty: set[int] = set()  # encoded rows rewritten since (replaced entries)
        self._mean: Matrix | None = None
        self._trained_on = 0

    @property
    def nbytes(self) -> int:
        """Bytes held by the codes (the searchable index)."""
        return int(self._codes.nbytes)

    # ------------------------------------------------------------------ keeping in step

    def replaced(self, rows: Positions) -> None:
        """Rows of the store were overwritten in place."""
        self._dirty.update(int(row) for row in rows.tolist() if row < self._synced)

    def compacted(self, keep: Positions) -> None:
        """The store kept ``keep`` (sorted) and moved them down to ``0..keep.size``."""
        kept = keep[: int(np.searchsorted(keep, self._synced))]
        for start in range(0, kept.size, _COMPACT_CHUNK):
            chunk = kept[start : start + _COMPACT_CHUNK]
            self._codes[start : start + chunk.size] = self._codes[chunk]
        if self._dirty:
            dirty = np.fromiter(self._dirty, dtype=np.intp, count=len(self._dirty))
            where = np.searchsorted(keep, dirty)
            found = where < keep.size
            found[found] = keep[where[found]] == dirty[found]
            self._dirty = set(where[found].tolist())
        self._synced = int(kept.size)

    def sync(self, matrix: Matrix, inv_norms: npt.NDArray[np.float32], size: int) -> None:
        """Encode the rows added or replaced since the last search (training if due)."""
        if self._mean is None or (
            size >= 2 * self._trained_on and self._trained_on < 4 * _TRAIN_SAMPLE
        ):
            self._train(matrix, inv_norms, size)
        if self._codes.shape[0] < size:
            grown = np.empty((max(size, 2 * self._codes.shape[0]), self._width), self._dtype)
            grown[: self._synced] = self._codes[: self._synced]
            self._codes = grown
        if self._dirty:
            rows = np.fromiter(sorted(self._dirty), dtype=np.intp, count=len(self._dirty))
            self._codes[rows] = self._encode(unit_rows(matrix, inv_norms, rows))
            self._dirty.clear()
        for start in range(self._synced, size, _ENCODE_BLOCK):
            stop = min(start + _ENCODE_BLOCK, size)
            self._codes[start:stop] = self._encode(unit_rows(matrix, inv_norms, slice(start, stop)))
        self._synced = size

    def _train(self, matrix: Matrix, inv_norms: npt.NDArray[np.float32], size: int) -> None:
        """Learn the centering (and scales) from a seeded sample; everything is re-encoded."""
        rng = np.random.default_rng(size)
        count = min(size, _TRAIN_SAMPLE)
        rows = np.sort(rng.choice(size, count, replace=False)) if count < size else slice(0, size)
        sample = unit_rows(matrix, inv_norms, rows).astype(np.float64)
        self._mean = sample.mean(axis=0).astype(np.float32)
        self._fit(sample - self._mean)
        self._trained_on = size
        self._width = self._code_width(matrix.shape[1])
        self._codes = np.empty((0, self._width), self._dtype)
        self._synced = 0
        self._dirty.clear()

    def _fit(self, centered: npt.NDArray[np.float64]) -> None:
        """Learn the kind's parameters from centered unit vectors (none by default)."""

    # ------------------------------------------------------------------ persistence

    def state(
        self, matrix: Matrix, inv_norms: npt.NDArray[np.float32], size: int
    ) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]]:
        """What a save keeps (nothing if never trained): the manifest's header (version,
        centering, scales) and the codes of every row, brought up to date first."""
        if self._mean is None:
            return {}, {}
        self.sync(matrix, inv_norms, size)
        header = {"version": STATE_VERSION, "trained_on": self._trained_on}
        header |= {name: getattr(self, f"_{name}").tolist() for name in self._learned}
        return header, {"codes": self._codes[:size]}

    saved_files: tuple[str, ...] = ("codes",)
    """The files :meth:`state` writes besides the manifest (the codes)."""

    def restore(
        self,
        header: Mapping[str, Any],
        codes: npt.NDArray[Any],
        dimension: int,
        *,
        files: Mapping[str, Path],
        mmap: bool,
    ) -> None:
        """Adopt a saved :meth:`state` (``codes`` may be memory-mapped, copy-on-write; the
        codes are all there is, so ``files`` and ``mmap`` are not needed)."""
        if header.get("version") != STATE_VERSION:
            raise ValueError(f"index state version {header.get('version')!r} is not supported")
        trained_on = header.get("trained_on")
        if type(trained_on) is not int or trained_on < 1:
            raise ValueError(f"invalid trained_on {trained_on!r}")
        learned = {}
        for name in self._learned:
            value = np.asarray(header.get(name), dtype=np.float32)
            if value.shape != (dimension,) or not np.isfinite(value).all():
                raise ValueError(f"index {name} is not {dimension} finite numbers")
            learned[name] = value
        width = self._code_width(dimension)
        if codes.dtype != self._dtype or codes.ndim != 2 or codes.shape[1] != width:
            raise ValueError(f"expected {np.dtype(self._dtype)} codes of width {width}")
        for name, value in learned.items():
            setattr(self, f"_{name}", value)
        self._trained_on, self._width = trained_on, width
        self._codes, self._synced = codes, int(codes.shape[0])
        self._dirty.clear()

    _learned: tuple[str, ...] = ("mean",)

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
        eligible = size if selected is None else int(selected.size)
        wanted = self.options.indexed_count(eligible, k)
        if wanted is None:
            return None
        self.sync(matrix, inv_norms, size)
        if selected is None:
            return self._top(self._scores_of(unit, None, size), wanted)
        if selected.size < _GATHER_BELOW * size:
            scores = self._scores_of(unit, selected, 0)
        else:
            scores = self._scores_of(unit, None, size)[selected]
        return selected[self._top(scores, wanted)]

    # ------------------------------------------------------------------ per kind

    _width: int

    def _code_width(self, dimension: int) -> int:
        raise NotImplementedError

    def _encode(self, units: Matrix) -> npt.NDArray[Any]:
        raise NotImplementedError

    def _scores_of(self, unit: Matrix, rows: Positions | None, size: int) -> npt.NDArray[Any]:
        """Approximate scores of ``rows`` (None: rows ``0..size``) for the unit query."""
        raise NotImplementedError

    def _top(self, scores: npt.NDArray[Any], wanted: int) -> Positions:
        """Positions of the ``wanted`` best ``scores``, with every row tied with the last."""
        raise NotImplementedError


class Int8Index(QuantizedIndex):
    """int8 codes of ``(u - mean) / scale``, one scale a dimension."""

    _dtype = np.int8
    _learned = ("mean", "scale")

    def _code_width(self, dimension: int) -> int:
        return dimension

    def _fit(self, centered: npt.NDArray[np.float64]) -> None:
        scale = np.quantile(np.abs(centered), _CLIP_QUANTILE, axis=0) / 127.0
        scale[~(scale > 0)] = 1.0  # constant dimensions: any scale encodes them as 0
        self._scale = scale.astype(np.float32)

    def _encode(self, units: Matrix) -> npt.NDArray[np.int8]:
        assert self._mean is not None
        scaled = (units - self._mean) / self._scale
        np.rint(scaled, out=scaled)
        np.clip(scaled, -127, 127, out=scaled)
        return scaled.astype(np.int8)

    def _scores_of(self, unit: Matrix, rows: Positions | None, size: int) -> npt.NDArray[Any]:
        """``(unit * scale) . code`` a row: the cosine up to a constant, in float32."""
        weights = (unit * self._scale).astype(np.float32)
        count = size if rows is None else int(rows.size)
        scores = np.empty(count, dtype=np.float32)
        block = np.empty((min(_INT8_BLOCK, count), self._width), dtype=np.float32)
        for start in range(0, count, _INT8_BLOCK):
            stop = min(start + _INT8_BLOCK, count)
            codes = self._codes[start:stop] if rows is None else self._codes[rows[start:stop]]
            buffer = block[: stop - start]
            np.copyto(buffer, codes, casting="unsafe")
            np.matmul(buffer, weights, out=scores[start:stop])
        return scores

    def _top(self, scores: npt.NDArray[Any], wanted: int) -> Positions:
        if wanted >= scores.size:
            return np.arange(scores.size, dtype=np.intp)
        cut = float(np.partition(scores, scores.size - wanted)[scores.size - wanted])
        return np.flatnonzero(scores >= cut)


class BinaryIndex(QuantizedIndex):
    """Sign bits of ``u - mean`` packed into uint64 words; Hamming distance scans."""

    _dtype = np.uint64

    def _code_width(self, dimension: int) -> int:
        return -(-dimension // 64)

    def _encode(self, units: Matrix) -> npt.NDArray[np.uint64]:
        assert self._mean is not None
        bits = np.packbits(units > self._mean, axis=1)
        padded = np.zeros((units.shape[0], self._width * 8), dtype=np.uint8)
        padded[:, : bits.shape[1]] = bits
        return padded.view(np.uint64)

    def _scores_of(self, unit: Matrix, rows: Positions | None, size: int) -> npt.NDArray[Any]:
        """Hamming distances (uint16) between the query's code and each row's."""
        query = self._encode(unit.reshape(1, -1))
        count = size if rows is None else int(rows.size)
        distances = np.empty(count, dtype=np.uint16)
        for start in range(0, count, _HAMMING_BLOCK):
            stop = min(start + _HAMMING_BLOCK, count)
            codes = self._codes[start:stop] if rows is None else self._codes[rows[start:stop]]
            counts = _popcount(np.bitwise_xor(codes, query))
            # Column by column: numpy reduces a short inner axis slowly.
            out = distances[start:stop]
            np.copyto(out, counts[:, 0])
            for word in range(1, self._width):
                out += counts[:, word]
        return distances

    def _top(self, scores: npt.NDArray[Any], wanted: int) -> Positions:
        distances = scores
        counts = np.cumsum(np.bincount(distances, minlength=64 * self._width + 1))
        cut = int(np.searchsorted(counts, wanted))  # smallest distance with >= wanted rows
        return np.flatnonzero(distances <= cut)


def unit_rows(
    matrix: Matrix, inv_norms: npt.NDArray[np.float32], rows: Positions | slice
) -> Matrix:
    """The unit vectors of ``rows`` (zero rows stay zero), in float32."""
    return np.asarray(matrix[rows] * inv_norms[rows][:, None], dtype=np.float32)


def _popcount_table(values: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint8]:
    """Bits set in each byte, summed per uint64 (numpy < 2.0 has no ``bitwise_count``)."""
    as_bytes = values.view(np.uint8).reshape(*values.shape, 8)
    counts: npt.NDArray[np.uint8] = _BYTE_BITS[as_bytes].sum(axis=-1, dtype=np.uint8)
    return counts


_BYTE_BITS = (
    np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).sum(axis=1).astype(np.uint8)
)
_popcount: Any = getattr(np, "bitwise_count", _popcount_table)
