"""InMemoryEmbeddingStore: an exact, thread-safe vector store in one numpy matrix.

Layout. The raw ``float32`` vectors live in one contiguous ``(capacity, dimension)``
matrix that doubles when full (amortized O(1) append), next to a ``float32`` column of
inverse norms, an ``alive`` flag per row, Python lists of ids and segment texts, and
a columnar :class:`~ragloom.core.stores.metadata_table.MetadataTable`. Rows are stored raw,
not pre-normalized: a match returns exactly the vector that was added, with one matrix
and 4 bytes a row, while the cosine costs one extra multiply over the scores
(``(M @ q̂) * inv_norm``), which is noise next to the matrix-vector product.

Search. One ``float32`` matrix-vector product over the live (and, with a filter,
matching) rows gives approximate cosines; ``np.partition`` finds the k-th best; every
row within the ``float32`` error bound of it is rescored exactly in ``float64`` (few
rows), so scores are reproducible, identical vectors tie exactly and ties keep
insertion order. Filters are evaluated as one vectorized mask over the metadata table.
A zero vector has cosine 0 with everything (score 0.5); other norms must lie within
[1e-30, 1e30], where that float32 error bound holds.

Quantized search. ``index="int8"`` or ``"binary"`` (or :class:`IndexOptions`) keeps
compact codes next to the matrix (:mod:`ragloom.core.stores.quantized`) that choose an
oversampled candidate set, which the same ``float64`` rescoring ranks: scores stay exact,
recall becomes approximate. ``index="hnsw"`` does the same with a usearch HNSW graph
(:mod:`ragloom.core.stores.hnsw`, the ``ragloom-core[hnsw]`` extra). Exact search stays
the default, and stays in use below ``exact_below`` eligible rows (20,000 by default)
and for selective filters.

Removal. Removed rows become tombstones (masked out of searches); when they exceed a
quarter of the rows the store compacts, preserving order, so removal is amortized
O(dimension) a row and searches never scan much dead data.

Persistence. ``save(path)`` writes a directory in an open, columnar format (the layout,
atomic replace, checksums of :mod:`ragloom.core.stores.persistence`; arrays of
:mod:`ragloom.core.stores._columnar`)::

    manifest.json            {"format", "version": 2, "dimension", "count",
                              "metadata_keys", "arrays": {name: dtype, shape, offset},
                              "files": {kind: {"name", "crc32"}}}
    vectors-<token>.npy      float32 (count, dimension), numpy .npy, memory-mappable
    rows-<token>.bin         the arrays of "arrays": inverse norms; ids and texts as
                             UTF-8 bytes + offsets; per metadata key its type codes,
                             payloads and dictionary (the store's own columns)

Loading parses no row at all: it reads both files (checking each checksum as it
reads), checks every array (vectorized) and adopts them. Version 1 directories (records
as JSON lines) still load. ``load(path, mmap=True)`` memory-maps both files instead
(see :meth:`InMemoryEmbeddingStore.load`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import threading
import tokenize
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragloom.core._gc import gc_paused
from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding
from ragloom.core.errors import EmbeddingStoreError
from ragloom.core.metadata import MetadataValue
from ragloom.core.stores._columnar import (
    Arrays,
    StringColumn,
    encode_strings,
    raw_bytes,
    read_arrays,
    write_arrays,
)
from ragloom.core.stores._rows import Positions, TombstonedRows
from ragloom.core.stores.arguments import get_ids
from ragloom.core.stores.base import (
    EmbeddingMatch,
    EmbeddingSearchRequest,
    EmbeddingSearchResult,
    EmbeddingStore,
    StoredEmbedding,
)
from ragloom.core.stores.filter_mask import filter_mask
from ragloom.core.stores.hnsw import new_search_index
from ragloom.core.stores.metadata_table import CodedColumn, MetadataColumn, MetadataTable
from ragloom.core.stores.metadata_types import check_held, column_kinds
from ragloom.core.stores.metadata_types import metadata_schema as metadata_schema_kinds
from ragloom.core.stores.persistence import (
    ByteSink,
    DataFiles,
    DirectoryFormat,
    Records,
    SavedDirectory,
    encode_metadata,
)
from ragloom.core.stores.quantized import IndexKind, IndexOptions, index_options
from ragloom.core.stores.scores import exact_cosines, exact_scores, relevance_score
from ragloom.core.stores.validation import (
    check_columns,
    embedding_dimension,
    generate_ids,
    metadata_columns,
    segment_columns,
    validate_ids,
)

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "JSON_VERSION",
    "Matrix",
    "InMemoryEmbeddingStore",
]

FORMAT_NAME = "ragloom.in-memory-embedding-store"
FORMAT_VERSION = 2
JSON_VERSION = 1  # the version of to_json documents (which version 2 did not change)

_FILES_V1 = {"vectors": ".npy", "records": ".jsonl"}
_FORMAT = DirectoryFormat(
    FORMAT_NAME,
    FORMAT_VERSION,
    {
        "vectors": ".npy",
        "rows": ".bin",
        "codes": ".npy",
        "graph": ".usearch",  # usearch's own file
        "faiss-graph": ".bin",  # ragloom's layout of a faiss graph (stores/_faiss.py)
    },
    error=EmbeddingStoreError,
    noun="in-memory embedding store",
    older={1: _FILES_V1},
    checksum="crc32",
    optional=("codes", "graph", "faiss-graph"),  # an index's saved state, if any
)
_JSON_FORMAT = DirectoryFormat(
    FORMAT_NAME, JSON_VERSION, _FILES_V1, error=EmbeddingStoreError, noun="JSON store"
)
_MIN_CAPACITY = 16
# A gathered matrix-vector product (copy the selected rows, then multiply) beats the
# full product followed by indexing when fewer than this share of the rows is selected.
_GATHER_BELOW = 1 / 3
_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False)
_STAGE_BLOCK_BYTES = 1 << 21  # about an L2 cache
# Vector norms the float32 search handles exactly enough (besides 0): far beyond any model's.
_MIN_NORM, _MAX_NORM = 1e-30, 1e30
_COMPACT_CHUNK = 4096
# Up to this many rescored rows (a search's usual dozen), one gather serves both the exact
# scores and the vectors of the matches, and the scores are ranked as Python floats;
# beyond (oversampled candidates, many exact ties) numpy rescores and ranks them.
_FEW = 64
_IN_ORDER = tuple(range(_FEW))
_NEGATE: Callable[[int], int] = int.__neg__

Matrix = npt.NDArray[np.float32]
_validate_ids = partial(validate_ids, error=EmbeddingStoreError, noun="embedding")


class InMemoryEmbeddingStore(TombstonedRows, EmbeddingStore):
    """An exact nearest-neighbour store held in process memory (see the module docstring).

    ``dimension`` fixes the vector dimension up front; otherwise the first added
    embedding sets it (and removing everything forgets it). ``add_all`` also accepts a
    2-D numpy array of vectors, the fast path for bulk loads. ``index`` chooses exact
    search (the default), a quantized index (``"int8"``, ``"binary"``) or ``"hnsw"`` (see
    the module docstring). ``metadata_schema`` (e.g. ``{"tenant": str}``) declares metadata key
    types; undeclared keys take the type of their first write, and a write with another
    type is refused (:mod:`~ragloom.core.stores.metadata_types`). All methods are safe to
    call from several threads (one re-entrant lock guards the state).
    """

    _id_error = EmbeddingStoreError
    _id_noun = "embedding"

    def __init__(
        self,
        dimension: int | None = None,
        *,
        index: IndexKind | IndexOptions = "exact",
        metadata_schema: Mapping[str, type] | None = None,
    ) -> None:
        if dimension is not None and (type(dimension) is not int or dimension < 1):
            raise EmbeddingStoreError(f"dimension must be a positive int, got {dimension!r}")
        self._lock = threading.RLock()
        self._fixed_dimension = dimension
        self._index_options = index_options(index)
        self._declared = metadata_schema_kinds(metadata_schema)
        self._reset()

    def _reset(self) -> None:
        """Empty every column (called with the lock held, or from ``__init__``)."""
        self._dimension: int | None = self._fixed_dimension
        self._matrix: Matrix = np.empty((0, self._dimension or 0), dtype=np.float32)
        self._inv_norms: npt.NDArray[np.float32] = np.empty(0, dtype=np.float32)
        self._alive: npt.NDArray[np.bool_] = np.empty(0, dtype=bool)
        self._size = 0  # rows in use, live and dead
        self._dead = 0
        self._ids: list[str] = []
        self._texts: list[str | None] = []
        # Ids and texts of a memory-mapped load, decoded row by row until the first change.
        self._lazy: tuple[Sequence[str], Sequence[str | None]] | None = None
        self._mapped_rows: Path | None = None  # the rows file they are decoded from
        self._metadata = MetadataTable()
        # id -> row of the live rows, built on first need (a lookup by id) and then kept up
        # to date; bulk loads into an empty store and adds with generated ids skip it.
        self._index: dict[str, int] | None = None
        self._quantized = new_search_index(self._index_options)

    # ------------------------------------------------------------------ properties

    @property
    def index_options(self) -> IndexOptions:
        """How this store searches (exact, int8, binary or hnsw; see the module docstring)."""
        return self._index_options

    @property
    def dimension(self) -> int | None:
        """The vector dimension, or ``None`` while it is not known yet."""
        return self._dimension

    def __len__(self) -> int:
        with self._lock:
            return self._size - self._dead

    def __repr__(self) -> str:
        return f"InMemoryEmbeddingStore(dimension={self._dimension}, size={len(self)})"

    # ------------------------------------------------------------------ adding

    def add_all(
        self,
        embeddings: Sequence[Embedding] | npt.NDArray[np.floating[Any]],
        segments: Sequence[TextSegment] | None = None,
        *,
        ids: Sequence[str] | None = None,
    ) -> list[str]:
        """Add a batch; existing ids are replaced in place. Validates all before changing.

        ``embeddings`` is a sequence of :class:`Embedding` or an ``(n, dimension)`` array.
        """
        count = len(embeddings)
        texts, columns = segment_columns(segments, count)
        return self._add(embeddings, count, texts, columns, ids)

    def add_columns(
        self,
        embeddings: Sequence[Embedding] | npt.NDArray[np.floating[Any]],
        texts: Sequence[str] | None = None,
        metadata: Mapping[str, Sequence[MetadataValue | None] | npt.NDArray[Any]] | None = None,
        *,
        ids: Sequence[str] | None = None,
    ) -> list[str]:
        """:meth:`add_all` of a batch given column by column: the bulk path, with no
        :class:`TextSegment` or metadata dict a row.

        Row ``i`` is the segment of ``texts[i]`` with the metadata ``{key: column[i]}`` of
        the ``metadata`` columns (one sequence of ``count`` values per key) not ``None`` at
        ``i``; a numpy array of bools or numbers is taken as a whole. The store ends up as
        after ``add_all(embeddings, segments, ids=ids)`` with those segments, and every row
        is validated the same way (vectorized): a bad row raises naming its position, key
        and value, and nothing is added. Without ``texts``, rows have no segment.
        """
        count = len(embeddings)
        text_list, columns = check_columns(texts, metadata, count)
        return self._add(embeddings, count, text_list, columns, ids)

    def _add(
        self,
        embeddings: Sequence[Embedding] | npt.NDArray[np.floating[Any]],
        count: int,
        texts: list[str | None],
        columns: dict[str, MetadataColumn],
        ids: Sequence[str] | None,
    ) -> list[str]:
        """Add checked texts and metadata columns with their embeddings and ids."""
        id_list = None if ids is None else _validate_ids(ids, count)
        if count == 0:
            return []
        kinds = column_kinds(columns, self._declared)
        with self._lock:
            check_held(kinds, self._metadata.key_kinds)
            dimension = embedding_dimension(embeddings)
            self._check_dimension(dimension)
            if id_list is not None and self._size:
                self._ensure_index()  # may compact, so before staging
            self._stage(embeddings, dimension)
            return self._commit(count, id_list, texts, columns)

    def _check_dimension(self, dimension: int) -> None:
        if self._dimension is not None and dimension != self._dimension:
            raise EmbeddingStoreError(
                f"embedding dimension {dimension} does not match the store's {self._dimension}"
            )

    def _stage(
        self, embeddings: Sequence[Embedding] | npt.NDArray[np.floating[Any]], dimension: int
    ) -> None:
        """Write the vectors and inverse norms into the spare rows after ``_size``.

        Spare rows are invisible, so a validation error here changes nothing.
        """
        count = len(embeddings)
        self._reserve(count, dimension)
        start = self._size
        staged = self._matrix[start : start + count]
        squares = np.empty(count, dtype=np.float32)
        vectors = None if isinstance(embeddings, np.ndarray) else [e.vector for e in embeddings]
        # Block by block, so that the norms read rows still in cache from the copy.
        block = max(1, _STAGE_BLOCK_BYTES // (4 * dimension))
        with np.errstate(over="ignore", invalid="ignore"):
            for first in range(0, count, block):
                last = min(first + block, count)
                if vectors is None:
                    np.copyto(staged[first:last], embeddings[first:last], casting="same_kind")
                else:
                    np.stack(vectors[first:last], out=staged[first:last])
                rows = staged[first:last]
                _row_squares(rows, squares[first:last])
        inv = self._inv_norms[start : start + count]
        _inverse_norms(staged, squares, out=inv)

    def _reserve(self, extra: int, dimension: int) -> None:
        """Grow the columns (doubling) so that ``extra`` more rows fit."""
        needed = self._size + extra
        capacity = self._matrix.shape[0]
        if self._matrix.shape[1] != dimension:
            capacity = 0  # the store is empty: allocate with the right width
        if needed <= capacity:
            return
        if capacity == 0:
            self._matrix = np.empty((0, dimension), dtype=np.float32)
        self._resize(max(needed, 2 * capacity, _MIN_CAPACITY))

    def _resize(self, capacity: int) -> None:
        """Reallocate the row columns with room for ``capacity`` rows (at least ``_size``)."""
        size = self._size
        matrix = np.empty((capacity, self._matrix.shape[1]), dtype=np.float32)
        inv_norms = np.empty(capacity, dtype=np.float32)
        alive = np.zeros(capacity, dtype=bool)
        matrix[:size] = self._matrix[:size]
        inv_norms[:size] = self._inv_norms[:size]
        alive[:size] = self._alive[:size]
        self._matrix, self._inv_norms, self._alive = matrix, inv_norms, alive

    def _commit(
        self,
        count: int,
        ids: list[str] | None,
        texts: list[str | None],
        columns: Mapping[str, MetadataColumn],
    ) -> list[str]:
        """Make ``count`` staged rows visible: append new ids, replace existing ones.

        ``columns`` empty means no metadata on any row (the cheap append).
        """
        self._own_rows()
        start = self._size
        replaced: dict[int, int] = {}  # position in the batch -> existing row
        if ids is None:
            ids = generate_ids(count)
        elif start:  # an empty store has nothing to replace
            index = self._ensure_index()
            replaced = {i: index[x] for i, x in enumerate(ids) if x in index}
        if not replaced:
            self._metadata.append_columns(columns, count)
            self._ids.extend(ids)
            self._texts.extend(texts)
            added = count
        else:
            new = [i for i in range(count) if i not in replaced]
            targets = np.fromiter(replaced.values(), dtype=np.intp, count=len(replaced))
            sources = start + np.fromiter(replaced.keys(), dtype=np.intp, count=len(replaced))
            self._metadata.append_columns(_take_columns(columns, new), len(new))
            for i, row in replaced.items():
                self._metadata.set_row(row, _column_row(columns, i))
                self._texts[row] = texts[i]
            self._matrix[targets] = self._matrix[sources]
            self._inv_norms[targets] = self._inv_norms[sources]
            if self._quantized is not None:
                self._quantized.replaced(targets)
            added = len(new)
            if new:
                moved = start + np.array(new, dtype=np.intp)
                self._matrix[start : start + added] = self._matrix[moved]
                self._inv_norms[start : start + added] = self._inv_norms[moved]
            self._ids.extend(ids[i] for i in new)
            self._texts.extend(texts[i] for i in new)
        self._alive[start : start + added] = True
        self._size = start + added
        if self._dimension is None:
            self._dimension = int(self._matrix.shape[1])
        if self._index is not None:
            self._index.update(zip(self._ids[start:], range(start, start + added), strict=True))
        return ids

    def _ensure_index(self) -> dict[str, int]:
        """The id -> row map of live rows, building it (after compacting) when missing."""
        self._own_rows()
        if self._index is None:
            if self._dead:
                self._compact()
            self._index = dict(zip(self._ids, range(self._size), strict=True))
        return self._index

    def _own_rows(self) -> None:
        """Decode the ids and texts of a memory-mapped load into lists (before a change)."""
        if self._lazy is not None:
            ids, texts = self._lazy
            with gc_paused(), self._decoding():
                self._ids, self._texts = list(ids), list(texts)
            self._lazy = None

    @contextlib.contextmanager
    def _decoding(self) -> Iterator[None]:
        """Report a string of a memory-mapped rows file that is not UTF-8 as a defect of
        that file (its checksum was not verified: ``load(mmap=True)`` decodes lazily)."""
        try:
            yield
        except UnicodeDecodeError as exc:
            raise self._corrupt_rows(exc) from exc

    def _corrupt_rows(self, exc: UnicodeDecodeError) -> EmbeddingStoreError:
        """The error naming the memory-mapped rows file a string failed to decode from."""
        return EmbeddingStoreError(
            f"{self._mapped_rows}: corrupt saved in-memory embedding store ({exc})"
        )

    # ------------------------------------------------------------------ searching

    def search(self, request: EmbeddingSearchRequest) -> EmbeddingSearchResult:
        """Exact top-k by cosine: matches best first, ties in insertion order."""
        if not isinstance(request, EmbeddingSearchRequest):
            raise EmbeddingStoreError(
                f"search takes an EmbeddingSearchRequest, got {type(request).__name__}"
            )
        query = request.query_embedding.vector
        with self._lock:
            self._check_dimension(query.shape[0])
            if self._size == self._dead:
                return EmbeddingSearchResult([])
            selected: Positions | None = None
            if request.filter is not None:
                mask = filter_mask(request.filter, self._metadata)
                if self._dead:
                    mask = mask & self._alive[: self._size]
                selected = mask.nonzero()[0]
            elif self._dead:
                selected = np.flatnonzero(self._alive[: self._size])
            return EmbeddingSearchResult(self._matches(*self._top_k(query, selected, request)))

    def _matches(
        self, rows: list[int], scores: list[float], vectors: Matrix
    ) -> list[EmbeddingMatch]:
        """The matches of ``rows`` with their ``scores`` and ``vectors`` (a private gathered
        copy: each match gets its own row of it), built in bulk: lists made by ``map`` (no
        Python step a match), one vectorized decode of the metadata (none when no match has
        a segment), the objects set up without their validating constructors (the store
        built each part)."""
        ids, texts = self._lazy or (self._ids, self._texts)
        try:
            found_ids = list(map(ids.__getitem__, rows))
            found_texts = list(map(texts.__getitem__, rows))
        except UnicodeDecodeError as exc:
            raise self._corrupt_rows(exc) from exc
        segments: list[TextSegment | None] = found_texts  # type: ignore[assignment]
        if found_texts.count(None) != len(rows):  # else every segment is None
            metadata = self._metadata._take(np.array(rows, dtype=np.intp))
            segment = TextSegment._trusted
            if None in found_texts:
                segments = [
                    None if text is None else segment(text, values)
                    for text, values in zip(found_texts, metadata, strict=True)
                ]
            else:
                segments = list(map(segment, found_texts, metadata))  # type: ignore[arg-type]
        return EmbeddingMatch._trusted_list(
            scores, found_ids, Embedding._trusted_rows(vectors), segments
        )

    def get(self, ids: Iterable[str], *, embeddings: bool = False) -> list[StoredEmbedding]:
        """The stored entries of ``ids`` in the order asked (unknown ids omitted, each id
        once), with their vectors as added when ``embeddings`` (each its own copy)."""
        wanted = get_ids(ids)
        with self._lock:
            if not wanted or self._size == self._dead:
                return []
            index = self._ensure_index()
            found = [(id, index[id]) for id in wanted if id in index]
            positions = np.fromiter((row for _, row in found), dtype=np.intp, count=len(found))
            vectors: list[Embedding | None] = [None] * len(found)
            if embeddings:
                vectors = list(Embedding._trusted_rows(self._matrix.take(positions, axis=0)))
            segment = TextSegment._trusted
            return [
                StoredEmbedding(id, None if text is None else segment(text, metadata), vector)
                for (id, _), text, metadata, vector in zip(
                    found,
                    [self._texts[row] for _, row in found],
                    self._metadata._take(positions),
                    vectors,
                    strict=True,
                )
            ]

    def _top_k(
        self, query: Matrix, selected: Positions | None, request: EmbeddingSearchRequest
    ) -> tuple[list[int], list[float], Matrix]:
        """Rows, exact scores and vectors (a private copy) of the best matches among
        ``selected`` (None: all rows), best first."""
        size = self._size
        eligible = size if selected is None else int(selected.size)
        if eligible == 0:
            return [], [], self._matrix[:0].copy()
        k = min(request.max_results, eligible)
        query64 = query.astype(np.float64)
        query_norm = math.sqrt(float(query64 @ query64))
        if query_norm == 0.0:  # cosine 0 with everything: all tie, insertion order wins
            first = np.arange(k, dtype=np.intp) if selected is None else selected[:k]
            found = first if request.min_score <= 0.5 else first[:0]
            return found.tolist(), [0.5] * found.size, self._matrix.take(found, axis=0)
        unit = (query64 / query_norm).astype(np.float32)
        if self._quantized is not None:
            rows = self._quantized.candidates(
                self._matrix, self._inv_norms, size, unit, selected, k
            )
            if rows is not None:
                return self._rescored(rows, query64, query_norm, k, request.min_score)
        if selected is None:
            approx = self._matrix[:size] @ unit
            approx *= self._inv_norms[:size]
        elif selected.size < _GATHER_BELOW * size:  # take: ~15% faster than [selected]
            approx = self._matrix.take(selected, axis=0) @ unit
            approx *= self._inv_norms.take(selected)
        else:
            approx = self._matrix[:size] @ unit
            approx *= self._inv_norms[:size]
            approx = approx[selected]
        # Every cosine that can reach the top k or min_score within float32 error.
        tolerance = (2 * query.shape[0] + 16) * 2.0**-24
        threshold = 2.0 * request.min_score - 1.0
        if k < eligible:
            kth = approx.copy()
            kth.partition(eligible - k)  # np.partition, without its wrapper's overhead
            threshold = max(threshold, float(kth[eligible - k]))
        candidates = (approx >= threshold - tolerance).nonzero()[0]
        rows = candidates if selected is None else selected[candidates]
        return self._rescored(rows, query64, query_norm, k, request.min_score)

    def _rescored(
        self,
        rows: Positions,
        query64: npt.NDArray[np.float64],
        query_norm: float,
        k: int,
        min_score: float,
    ) -> tuple[list[int], list[float], Matrix]:
        """The best ``k`` of ``rows`` by exact relevance score (the query's norm > 0), best
        first, ties in insertion order, without those scoring below ``min_score``: their
        rows, scores and vectors. A few rows are gathered once, for the scores and the
        vectors alike, and ranked as Python floats: fewer numpy calls, each of which costs
        most right after a graph walk has evicted the caches.

        Ranked by score, not cosine: cosines one ulp apart can round to one score (say
        ``[3, 3, 3]`` and ``[1, 1, 1]`` against ``[0, 0, 1]``), and equal scores are a tie.
        """
        if rows.size > _FEW:
            scores = relevance_score(
                exact_cosines(self._matrix, query64, rows, query_norm=query_norm)
            )
            order = np.lexsort((rows, -scores))[:k]
            if min_score > 0.0:  # every score is >= 0
                order = order[scores[order] >= min_score]
            found = rows[order]
            return found.tolist(), scores[order].tolist(), self._matrix.take(found, axis=0)
        picked = self._matrix.take(rows, axis=0)
        listed = rows.tolist()
        # Highest score first, then lowest row (rows are distinct: the position breaks no tie).
        best = sorted(
            zip(
                exact_scores(picked, query64, query_norm),
                map(_NEGATE, listed),
                range(len(listed)),
                strict=True,
            ),
            reverse=True,
        )
        del best[k:]
        if min_score > 0.0:
            best = [entry for entry in best if entry[0] >= min_score]
        if not best:
            return [], [], picked[:0]
        found_scores, _, where = zip(*best, strict=True)
        vectors = (
            picked[: len(where)]
            if where == _IN_ORDER[: len(where)]  # the walk's order was the exact one
            else picked.take(where, axis=0)
        )
        return list(map(listed.__getitem__, where)), list(found_scores), vectors

    # ------------------------------------------------------------------ removing

    def _kill(self, rows: Positions) -> None:
        """Tombstone ``rows`` (already out of the index); compact when dead rows pile up."""
        if rows.size == 0:
            return
        self._own_rows()
        self._alive[rows] = False
        self._dead += int(rows.size)
        self._metadata.blank(rows)  # removed rows take no part in filters or type checks
        if self._dead == self._size:
            self._reset()
        elif 4 * self._dead > self._size:
            self._compact()

    def _compact(self) -> None:
        """Drop tombstoned rows, keeping order; the index is rebuilt lazily afterwards."""
        self._own_rows()
        size = self._size
        alive = self._alive[:size]
        keep = np.flatnonzero(alive)
        if self._quantized is not None:  # first: a saved graph opened now may be damaged
            self._quantized.compacted(keep)
        # Chunks move rows down; keep[i] >= i, so a chunk never overwrites rows still to move.
        for start in range(0, keep.size, _COMPACT_CHUNK):
            chunk = keep[start : start + _COMPACT_CHUNK]
            self._matrix[start : start + chunk.size] = self._matrix[chunk]
            self._inv_norms[start : start + chunk.size] = self._inv_norms[chunk]
        self._metadata.delete(np.flatnonzero(~alive))
        kept = keep.tolist()
        self._ids = [self._ids[row] for row in kept]
        self._texts = [self._texts[row] for row in kept]
        self._alive[: keep.size] = True
        self._alive[keep.size : size] = False
        self._size = int(keep.size)
        self._dead = 0
        self._index = None
        if self._matrix.shape[0] > max(4 * self._size, _MIN_CAPACITY):  # give memory back
            self._resize(max(2 * self._size, _MIN_CAPACITY))

    # ------------------------------------------------------------------ persistence

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the store to the directory ``path`` atomically (see the module docstring).

        ``path`` is created if missing; an existing directory must be empty or hold a
        saved store. Older data files are deleted after the new manifest is in place.
        """

        def write(files: DataFiles) -> dict[str, Any]:
            with self._lock:
                if self._dead:
                    self._compact()
                self._own_rows()
                size = self._size
                files.write("vectors", partial(_write_npy, self._matrix[:size]))
                keys, arrays = self._metadata.to_arrays()
                layout: dict[str, Any] = {}
                files.write("rows", lambda f: layout.update(self._write_rows(f, arrays)))
                return {
                    "dimension": self._dimension,
                    "count": size,
                    "metadata_keys": keys,
                    "arrays": layout,
                    "index": self._write_index(files, size),
                }

        _FORMAT.save(path, write)

    def _write_index(self, files: DataFiles, size: int) -> dict[str, Any]:
        """The index's options and saved state for the manifest (its files written)."""
        header: dict[str, Any] = {"options": dataclasses.asdict(self._index_options)}
        if self._quantized is not None:
            state, arrays = self._quantized.state(self._matrix, self._inv_norms, size)
            for kind, array in arrays.items():
                raw = partial(_write_npy, array) if kind == "codes" else _write_bytes(array)
                files.write(kind, raw)
            if state:
                header["state"] = state
        return header

    def _restore_index(self, saved: SavedDirectory, mmap: bool) -> None:
        """Adopt the index state a save kept, if any (after ``_adopt``). Every index keeps
        its codes (or graph keys) first; a defect of the state names the index's last file."""
        index = saved.manifest.get("index")
        state = index.get("state") if isinstance(index, Mapping) else None
        if not state or self._quantized is None or self._dimension is None:
            return
        kinds = self._quantized.saved_files
        for kind in kinds:
            if kind not in saved.files:
                raise EmbeddingStoreError(f"{saved.manifest_path}: names no valid {kind} file")
        codes_path = saved.files["codes"]
        with _FORMAT.reading(codes_path):
            codes = _load_npy(codes_path, mmap=mmap)
            if codes.shape[:1] != (self._size,):
                raise ValueError(f"{codes.shape[:1]} rows of codes for {self._size} rows")
        with _FORMAT.reading(saved.files[kinds[-1]]):
            self._quantized.restore(state, codes, self._dimension, files=saved.files, mmap=mmap)

    def _write_rows(self, file: ByteSink, metadata: Arrays) -> dict[str, Any]:
        """The arrays of the rows file (the store is compacted); returns their layout."""
        size = self._size
        arrays = {
            "inv_norms": self._inv_norms[:size],
            **encode_strings(self._ids, "ids"),
            **encode_strings(self._texts, "texts"),
            **metadata,
        }
        return write_arrays(file, arrays)

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], *, mmap: bool = False, verify: bool = False
    ) -> InMemoryEmbeddingStore:
        """Read a store written by :meth:`save`; any defect raises naming the file at fault.

        ``mmap=True`` memory-maps the saved files instead of reading them: the store opens
        in milliseconds whatever its size (nothing is read but the manifest, each file's
        first 4 KiB and what a search touches), and the operating system pages vectors in as
        searches need them and out again under memory pressure. What it still checks: each
        file's size and header checksum (recorded by the save), the structure of every array,
        and that of the HNSW graph at its first use (the first search that walks it, or a
        change), so a damaged file raises naming it instead of crashing. What it gives
        up, unless ``verify=True``: the checksums of the data itself (that reads every file
        once, about 9 ms for 100k x 384 from the page cache), so damage inside the vectors,
        ids, texts or codes can go unnoticed; nor are the vectors checked for NaN or
        infinity, nor ids for duplicates. Writes work and never touch the saved files:
        changed pages become private copies (copy-on-write), and the first ``add`` copies
        the whole matrix into memory, as a plain ``load`` would. Saving to the same
        directory again is safe (the mapped files stay readable until the store is dropped).
        A plain load always verifies every checksum (``verify`` changes nothing).
        """
        if not mmap:
            unverified: tuple[str, ...] = ("vectors", "rows")  # verified as they are read
        else:
            unverified = () if verify else ("vectors", "rows", "codes", "graph", "faiss-graph")
        saved = _FORMAT.open(path, unverified=unverified)
        dimension, count = _dimension_and_count(saved.manifest, saved.manifest_path)
        if saved.version == 1:
            return cls._load_v1(saved, dimension, count)
        with _FORMAT.reading(saved.files["vectors"]):
            if mmap and count:
                vectors = _load_npy(saved.files["vectors"], mmap=True)
                inv_norms = None
                _check_vectors(vectors, count, dimension, saved.files["vectors"])
                vectors = np.asarray(vectors)
            else:
                vectors, inv_norms = _read_vectors(saved, count, dimension or 0)
        rows_path = saved.files["rows"]
        with _FORMAT.reading(rows_path):
            if mmap and count:
                buffer = np.asarray(np.memmap(rows_path, dtype=np.uint8, mode="c"))
            else:
                buffer = np.fromfile(rows_path, dtype=np.uint8)
                saved.verify("rows", buffer.data)
            arrays = read_arrays(buffer, saved.manifest.get("arrays"))
            store = cls(dimension, index=_saved_index_options(saved))
            store._adopt(vectors, inv_norms, arrays, saved.manifest.get("metadata_keys"), mmap)
            store._mapped_rows = rows_path if mmap and count else None
        store._restore_index(saved, mmap)
        return store

    def _adopt(
        self,
        vectors: Matrix,
        inv_norms: npt.NDArray[np.float32] | None,
        arrays: Arrays,
        keys: object,
        mmap: bool,
    ) -> None:
        """Take loaded columns as the store's own (checked; ``inv_norms`` None: saved ones)."""
        count = int(vectors.shape[0])
        saved_norms = arrays.get("inv_norms")
        if saved_norms is None or saved_norms.dtype != np.float32 or saved_norms.shape != (count,):
            raise ValueError("the inverse norms are missing or of the wrong shape")
        ids = StringColumn(arrays, "ids", count)
        texts = StringColumn(arrays, "texts", count)
        metadata = MetadataTable.from_arrays(count, keys, arrays)
        if mmap:
            offsets = arrays["ids.offsets"]
            if arrays["ids.null"].any() or (offsets[1:] == offsets[:-1]).any():
                raise ValueError("an id is missing or empty")
            self._lazy = (ids, texts)  # type: ignore[assignment]  # ids are never None
        else:
            with gc_paused():
                id_list, self._texts = ids.to_list(), texts.to_list()
            try:
                self._ids = _validate_ids(id_list, count)  # type: ignore[arg-type]
            except EmbeddingStoreError as exc:  # reported as a defect of the rows file
                raise ValueError(str(exc)) from exc
        self._matrix = vectors
        self._inv_norms = saved_norms if inv_norms is None else inv_norms
        self._alive = np.ones(count, dtype=bool)
        self._size = count
        self._metadata = metadata
        if count:
            self._dimension = int(vectors.shape[1])

    @classmethod
    def _load_v1(
        cls, saved: SavedDirectory, dimension: int | None, count: int
    ) -> InMemoryEmbeddingStore:
        """A version 1 directory: vectors and JSON lines of records."""
        for kind in ("vectors", "records"):
            _FORMAT._verify(saved.files[kind], *saved.checksums[kind])
        vectors_path = saved.files["vectors"]
        with _FORMAT.reading(vectors_path):
            vectors = np.load(vectors_path, mmap_mode="r", allow_pickle=False)  # copied once
        _check_vectors(vectors, count, dimension, vectors_path)
        records_path = saved.files["records"]
        with gc_paused():
            records = _FORMAT.read_records(records_path)
        return cls._from_records(vectors, records, dimension, str(records_path))

    def to_json(self) -> str:
        """The whole store as one JSON document (the spec's ``serializeToJson``).

        Meant for small stores and interchange: JSON numbers are slow to write and read
        (about 40 s and 800 MB for 100k x 384); :meth:`save` is the fast format.
        """
        with self._lock:
            self._own_rows()
            live = np.flatnonzero(self._alive[: self._size])
            entries = [
                {
                    "id": self._ids[row],
                    "embedding": vector,
                    "text": self._texts[row],
                    "metadata": encode_metadata(values),
                }
                for row, vector, values in zip(
                    live.tolist(),
                    self._matrix[live].tolist(),
                    self._metadata.take(live),
                    strict=True,
                )
            ]
            document = {
                "format": FORMAT_NAME,
                "version": JSON_VERSION,
                "dimension": self._dimension,
                "count": len(entries),
                "entries": entries,
            }
        return _JSON.encode(document)

    @classmethod
    def from_json(cls, text: str | bytes) -> InMemoryEmbeddingStore:
        """A store from :meth:`to_json` output (the spec's ``fromJson``)."""
        try:
            document = json.loads(text)
        except ValueError as exc:
            raise EmbeddingStoreError(f"JSON input: not valid JSON ({exc})") from exc
        _JSON_FORMAT.check(document, "JSON input")
        dimension, count = _dimension_and_count(document, "JSON input")
        entries = document.get("entries")
        if not isinstance(entries, list) or len(entries) != count:
            raise EmbeddingStoreError(f"JSON input: expected a list of {count} entries")
        try:
            vectors = np.array([entry["embedding"] for entry in entries], dtype=np.float32).reshape(
                count, dimension or 0
            )
        except (TypeError, ValueError, KeyError) as exc:
            raise EmbeddingStoreError(f"JSON input: malformed embeddings ({exc})") from exc
        with gc_paused():
            records = _FORMAT.decode_records(entries, "JSON input")
        return cls._from_records(vectors, records, dimension, "JSON input")

    @classmethod
    def _from_records(
        cls,
        vectors: Matrix,
        records: Records,
        dimension: int | None,
        source: str,
    ) -> InMemoryEmbeddingStore:
        """Build a new store from decoded vectors and records, validating everything."""
        ids, texts, metadata = records
        if len(ids) != vectors.shape[0]:
            raise EmbeddingStoreError(
                f"{source}: {len(ids)} records for {vectors.shape[0]} vectors"
            )
        try:
            _validate_ids(ids, len(ids))
        except EmbeddingStoreError as exc:
            raise EmbeddingStoreError(f"{source}: {exc}") from exc
        store = cls(dimension)
        if ids:
            try:
                store._stage(vectors, vectors.shape[1])
            except EmbeddingStoreError as exc:
                raise EmbeddingStoreError(f"{source}: {exc}") from exc
            store._commit(len(ids), ids, texts, metadata_columns(metadata))
        return store

    # ------------------------------------------------------------------ merging

    @classmethod
    def merge(cls, *stores: InMemoryEmbeddingStore) -> InMemoryEmbeddingStore:
        """A new store holding the entries of ``stores``; a later store's id wins.

        The stores' dimensions must agree (empty stores are ignored), and so must the types
        of their metadata keys (``MetadataTypeError`` otherwise).
        """
        merged = cls()
        for store in stores:
            if not isinstance(store, InMemoryEmbeddingStore):
                raise EmbeddingStoreError(
                    f"merge takes InMemoryEmbeddingStore objects, got {type(store).__name__}"
                )
            with store._lock:
                store._own_rows()
                rows = np.flatnonzero(store._alive[: store._size])
                if rows.size == 0:
                    continue
                merged._check_dimension(int(store._matrix.shape[1]))
                vectors = store._matrix[rows]
                kept = rows.tolist()
                ids = [store._ids[row] for row in kept]
                texts = [store._texts[row] for row in kept]
                metadata = [dict(store._metadata.row(row)) for row in kept]
            columns = metadata_columns(metadata)
            check_held(column_kinds(columns), merged._metadata.key_kinds)
            if merged._size:
                merged._ensure_index()
            merged._stage(vectors, vectors.shape[1])
            merged._commit(len(ids), ids, texts, columns)
        return merged


# ---------------------------------------------------------------------- columns


def _take_columns(
    columns: Mapping[str, MetadataColumn], rows: list[int]
) -> dict[str, MetadataColumn]:
    """The values of ``rows`` (positions in the batch) of every column."""
    taken: dict[str, MetadataColumn] = {}
    for key, values in columns.items():
        if isinstance(values, np.ndarray):
            taken[key] = values[np.asarray(rows, dtype=np.intp)]
        elif isinstance(values, CodedColumn):
            taken[key] = values.take(rows)
        else:
            taken[key] = [values[i] for i in rows]
    return taken


def _column_row(columns: Mapping[str, MetadataColumn], i: int) -> dict[str, MetadataValue]:
    """The metadata of row ``i`` of a batch given column by column."""
    row: dict[str, MetadataValue] = {}
    for key, values in columns.items():
        value = values[i]
        if isinstance(value, np.generic):  # a cell of an array column
            value = value.item()
        if value is not None:
            row[key] = value
    return row


# ---------------------------------------------------------------------- norms


def _inverse_norms(
    rows: Matrix, squares: npt.NDArray[np.float32], out: npt.NDArray[np.float32]
) -> None:
    """``out[i] = 1 / ||rows[i]||`` (0 for a zero row) from the float32 ``squares`` of the
    rows; raises for a row with NaN, infinity or a norm outside [_MIN_NORM, _MAX_NORM]."""
    norms = np.sqrt(squares.astype(np.float64))
    # float32 squares under- or overflow outside this range: redo those rows in float64.
    odd = np.flatnonzero(~((squares >= 1e-30) & (squares <= 1e30)))
    if odd.size:
        exact = rows[odd].astype(np.float64)
        norms[odd] = np.sqrt((exact * exact).sum(axis=1))
        usable = (norms[odd] == 0) | ((norms[odd] >= _MIN_NORM) & (norms[odd] <= _MAX_NORM))
        if not usable.all():
            position = int(odd[np.flatnonzero(~usable)[0]])
            norm = float(norms[position])
            raise EmbeddingStoreError(
                f"embedding at index {position} contains NaN or infinity"
                if not math.isfinite(norm)
                else f"embedding at index {position} has norm {norm:.3g}, outside "
                f"[{_MIN_NORM:g}, {_MAX_NORM:g}] (the zero vector is allowed)"
            )
    out[:] = 0.0
    np.divide(1.0, norms, out=out, where=norms > 0, casting="same_kind")


def _row_squares(rows: Matrix, out: npt.NDArray[np.float32]) -> None:
    """``out[i] = rows[i] @ rows[i]`` in float32 (``np.vecdot``, about twice as fast as
    ``einsum`` here; numpy < 2.0 has only the latter)."""
    if _VECDOT is not None:
        _VECDOT(rows, rows, out=out)
    else:
        np.einsum("ij,ij->i", rows, rows, out=out)


_VECDOT: Any = getattr(np, "vecdot", None)


# ---------------------------------------------------------------------- files


def _write_npy(matrix: Matrix, file: ByteSink) -> None:
    """``np.save`` of a C-contiguous matrix, its bytes written as they are (no copy)."""
    np.lib.format.write_array_header_1_0(file, np.lib.format.header_data_from_array_1_0(matrix))
    file.write(raw_bytes(matrix))


_NPY_HEADER_ERRORS = (
    ValueError,
    TypeError,
    KeyError,
    SyntaxError,
    tokenize.TokenError,
    RecursionError,
    MemoryError,
)
# What numpy's .npy header parser (ast.literal_eval on the header text) raises on damage.


def _load_npy(path: Path, *, mmap: bool) -> npt.NDArray[Any]:
    """A ``.npy`` file, read or memory-mapped (copy-on-write), once its header parses and
    the shape it declares is exactly what the file holds: a damaged header never makes
    numpy allocate or map beyond the file (raises ``ValueError``, ``OSError``)."""
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        try:
            major, _ = np.lib.format.read_magic(file)
            if major == 1:
                shape, fortran_order, dtype = np.lib.format.read_array_header_1_0(file)
            elif major == 2:
                shape, fortran_order, dtype = np.lib.format.read_array_header_2_0(file)
            else:
                raise ValueError(f".npy version {major} is not supported")
        except _NPY_HEADER_ERRORS as exc:
            raise ValueError(f"unreadable .npy header ({exc!r})") from exc
        offset = file.tell()
    if fortran_order or dtype.hasobject:
        raise ValueError(f"unsupported array layout ({dtype}, fortran_order={fortran_order})")
    nbytes = dtype.itemsize * math.prod(shape)  # Python ints: no overflow
    if offset + nbytes != size:
        raise ValueError(
            f"the header declares {dtype} {shape} ({nbytes} bytes), the file holds "
            f"{size - offset} bytes of data"
        )
    if not nbytes:
        return np.empty(shape, dtype=dtype)
    if mmap:
        return np.asarray(np.memmap(path, dtype=dtype, mode="c", offset=offset, shape=shape))
    return np.fromfile(path, dtype=dtype, offset=offset).reshape(shape)


def _write_bytes(data: npt.NDArray[np.uint8]) -> Callable[[ByteSink], None]:
    """A file filler writing ``data``'s bytes as they are."""

    def fill(file: ByteSink) -> None:
        file.write(raw_bytes(data))

    return fill


def _saved_index_options(saved: SavedDirectory) -> IndexOptions:
    """The index options a save recorded (exact search for saves from before indexes)."""
    index = saved.manifest.get("index")
    if index is None:
        return IndexOptions()
    options = index.get("options") if isinstance(index, Mapping) else None
    try:
        if not isinstance(options, Mapping):
            raise EmbeddingStoreError("not an object")
        return IndexOptions(**options)
    except (EmbeddingStoreError, TypeError) as exc:
        raise EmbeddingStoreError(
            f"{saved.manifest_path}: invalid index options {options!r} ({exc})"
        ) from exc


def _check_vectors(
    vectors: npt.NDArray[Any], count: int, dimension: int | None, path: object
) -> None:
    if (
        vectors.dtype != np.float32
        or vectors.shape != (count, dimension or 0)
        or not vectors.flags.c_contiguous
    ):
        raise EmbeddingStoreError(
            f"{path}: expected float32 vectors of shape ({count}, {dimension}), "
            f"found {vectors.dtype} {vectors.shape}"
        )


def _read_vectors(
    saved: SavedDirectory, count: int, dimension: int
) -> tuple[Matrix, npt.NDArray[np.float32]]:
    """The vectors file read into a new matrix, checksummed and normed block by block
    (each block is still in cache for the checksum and the norms), and the inverse norms."""
    path = saved.files["vectors"]
    with open(path, "rb") as file:
        major, _ = np.lib.format.read_magic(file)
        read_header = {
            1: np.lib.format.read_array_header_1_0,
            2: np.lib.format.read_array_header_2_0,
        }.get(major)
        if read_header is None:
            raise ValueError(f".npy version {major} is not supported")
        shape, fortran_order, dtype = read_header(file)
        if shape != (count, dimension) or fortran_order or dtype != np.dtype("<f4"):
            raise EmbeddingStoreError(
                f"{path}: expected float32 vectors of shape ({count}, {dimension}), "
                f"found {dtype} {shape}"
            )
        header = file.tell()
        file.seek(0)
        matrix = np.empty((count, dimension), dtype=np.float32)
        checksum = saved.checksum("vectors")
        checksum.update(file.read(header))
        squares = np.empty(count, dtype=np.float32)
        raw = raw_bytes(matrix)
        block = max(1, _STAGE_BLOCK_BYTES // (4 * max(dimension, 1)))
        with np.errstate(over="ignore", invalid="ignore"):
            for first in range(0, count, block):
                last = min(first + block, count)
                chunk = raw[first * 4 * dimension : last * 4 * dimension]
                if file.readinto(chunk) != len(chunk):
                    raise ValueError("the file ends early")
                checksum.update(chunk)
                _row_squares(matrix[first:last], squares[first:last])
        if file.read(1):
            raise ValueError("data after the vectors")
        checksum.check()
    inv_norms = np.empty(count, dtype=np.float32)
    try:
        _inverse_norms(matrix, squares, out=inv_norms)
    except EmbeddingStoreError as exc:
        raise EmbeddingStoreError(f"{path}: {exc}") from exc
    return matrix, inv_norms


def _dimension_and_count(document: Mapping[str, Any], source: object) -> tuple[int | None, int]:
    """Validate the dimension and count of a manifest or JSON document."""
    dimension, count = document.get("dimension"), document.get("count")
    if type(count) is not int or count < 0:
        raise EmbeddingStoreError(f"{source}: invalid count {count!r}")
    if dimension is not None and (type(dimension) is not int or dimension < 1):
        raise EmbeddingStoreError(f"{source}: invalid dimension {dimension!r}")
    if dimension is None and count:
        raise EmbeddingStoreError(f"{source}: {count} entries but no dimension")
    return dimension, count
