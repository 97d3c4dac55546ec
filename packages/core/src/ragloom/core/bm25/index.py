"""BM25Index: an in-memory Okapi BM25 full-text index over text segments, numpy only.

Layout. Rows hold the segments (ids, texts, a columnar
:class:`~ragloom.core.stores.metadata_table.MetadataTable`, term counts, an ``alive`` flag). The
inverted index is a short list of CSR :class:`~ragloom.core.bm25.postings.Postings` blocks
over consecutive row ranges: every ``add_all`` builds one block for its batch with one sort,
and blocks are merged (by position arithmetic, no sort) whenever a block grows to half the
size of the one before it, so there are O(log n) blocks and each posting is merged
O(log n) times. Tokenization (the analyzer's ``tokenize``) is the only per-document Python
step; ``normalize`` runs once per distinct surface token, whose term id is cached.

Search. The postings of the query terms are gathered from each block into flat arrays and
scored at once (see :mod:`ragloom.core.bm25.scoring`); per-document sums are one
``np.bincount`` (dense, when many rows match) or ``np.unique`` + ``np.bincount``
(sparse). A metadata filter is one vectorized ``Filter.mask`` over the table, exactly as in
the in-memory embedding store. The top k come from ``np.partition``; ties keep insertion
order. Only segments containing at least one query term are returned. Corpus statistics
(N, average length, document frequencies) cover the live segments; a filter restricts the
results, not the statistics.

Removal and replacement. Removed rows are tombstones (document frequencies discount them);
once they exceed a quarter of the rows the index compacts: rows, postings and the
vocabulary are rebuilt without them, keeping order. Adding an existing id replaces it.

Persistence. ``save(path)`` writes a directory in the layout of
:mod:`ragloom.core.stores.persistence` (atomic replace, checksums, typed metadata)::

    manifest.json             {"format", "version", "parameters", "analyzer", "count", "files"}
    postings-<token>.npz      indptr, rows, tfs, lengths (numpy, no pickles)
    vocabulary-<token>.json   the terms, in term-id order
    records-<token>.jsonl     one {"id", "text", "metadata"} object a line, row order

``load`` verifies everything before it builds the index, so a corrupt directory raises
:class:`BM25IndexError` and yields nothing.
"""

from __future__ import annotations

import io
import json
import math
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import chain
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from ragloom.core.bm25 import postings as csr
from ragloom.core.bm25.analyzer import Analyzer, StandardAnalyzer, analyze
from ragloom.core.bm25.scoring import BM25Parameters, BM25Variant, robertson_idf
from ragloom.core.document import TextSegment
from ragloom.core.errors import BM25IndexError, InvalidArgumentTypeError
from ragloom.core.filters import Filter
from ragloom.core.metadata import Metadata, MetadataValue
from ragloom.core.stores._rows import Positions, TombstonedRows
from ragloom.core.stores.filter_mask import filter_mask
from ragloom.core.stores.metadata_table import MetadataTable
from ragloom.core.stores.persistence import (
    DataFiles,
    DirectoryFormat,
    SavedDirectory,
    write_records,
)
from ragloom.core.stores.validation import (
    check_segment,
    check_segment_text,
    generate_ids,
    validate_ids,
)

__all__ = ["BM25Index", "BM25IndexError", "BM25Match"]

FORMAT_NAME = "ragloom.bm25-index"
FORMAT_VERSION = 1

_MIN_CAPACITY = 16
# Sum scores with a bincount over all rows when the query's postings reach this share of the
# rows; below it, np.unique over the matched rows is cheaper than touching every row.
_DENSE_SHARE = 1 / 16

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]


_validate_ids = partial(validate_ids, error=BM25IndexError, noun="segment")
_FORMAT = DirectoryFormat(
    FORMAT_NAME,
    FORMAT_VERSION,
    {"postings": ".npz", "vocabulary": ".json", "records": ".jsonl"},
    error=BM25IndexError,
    noun="BM25 index",
)


@dataclass(frozen=True, slots=True)
class BM25Match:
    """One search hit: the segment's id, its BM25 score and the segment."""

    id: str
    score: float
    segment: TextSegment


class _TermIds(dict[str, int]):
    """Surface token -> term id (-1 for dropped tokens), filled on a miss by normalizing
    the token and interning its term, so each distinct token is normalized once."""

    __slots__ = ("analyzer", "vocabulary")

    def __init__(self, analyzer: Analyzer, vocabulary: dict[str, int]) -> None:
        super().__init__()
        self.analyzer = analyzer
        self.vocabulary = vocabulary

    def __missing__(self, token: str) -> int:
        term = self.analyzer.normalize(token)
        term_id = -1 if term is None else self.vocabulary.setdefault(term, len(self.vocabulary))
        self[token] = term_id
        return term_id

    def peek(self, token: str) -> int | None:
        """The term id of ``token`` without interning a new term (``None``: unknown)."""
        term_id = self.get(token)
        if term_id is not None:
            return term_id
        term = self.analyzer.normalize(token)
        return None if term is None else self.vocabulary.get(term)


@dataclass(frozen=True, slots=True)
class _Stats:
    """Corpus statistics of the live rows and the scores derived from them, dropped on
    every change. ``idf`` and ``impacts`` are filled lazily, one query term at a time."""

    count: int
    factor: Floats  # BM25Parameters.document_factor per row
    mean_idf: float  # okapi's idf floor needs the mean idf over the vocabulary
    idf: Floats  # per term; NaN until the term's impacts are computed
    impacts: list[Floats]  # per block, per posting: idf * term_scale * gain


class BM25Index(TombstonedRows):
    """An in-memory BM25 index of text segments (see the module docstring).

    ``analyzer`` defaults to :class:`StandardAnalyzer`; ``k1``, ``b``, ``variant``
    (``"lucene"``, ``"okapi"``, ``"bm25l"``, ``"bm25+"``), ``delta`` and ``epsilon`` are the
    scoring parameters of :class:`~ragloom.core.bm25.scoring.BM25Parameters`. All methods
    are thread-safe (one re-entrant lock).
    """

    _id_error = BM25IndexError
    _id_noun = "segment"

    def __init__(
        self,
        analyzer: Analyzer | None = None,
        *,
        k1: float = 1.5,
        b: float = 0.75,
        variant: BM25Variant = "lucene",
        delta: float | None = None,
        epsilon: float = 0.25,
    ) -> None:
        self.analyzer: Analyzer = analyzer if analyzer is not None else StandardAnalyzer()
        if not isinstance(self.analyzer, Analyzer):
            raise InvalidArgumentTypeError(
                f"analyzer must have tokenize() and normalize(), got {type(analyzer).__name__}"
            )
        self.parameters = BM25Parameters(k1, b, variant, delta, epsilon)
        self._lock = threading.RLock()
        self._reset()

    def _reset(self) -> None:
        """Forget everything (called with the lock held, or from ``__init__``)."""
        self._vocabulary: dict[str, int] = {}
        self._term_ids = _TermIds(self.analyzer, self._vocabulary)
        self._blocks: list[csr.Postings] = []
        self._ids: list[str] = []
        self._texts: list[str] = []
        self._metadata = MetadataTable()
        self._lengths: Ints = np.zeros(0, dtype=np.int64)
        self._alive: npt.NDArray[np.bool_] = np.zeros(0, dtype=bool)
        self._size = 0  # rows in use, live and dead
        self._dead = 0
        self._index: dict[str, int] | None = None  # id -> live row, built on first need
        self._stats: _Stats | None = None

    def __len__(self) -> int:
        with self._lock:
            return self._size - self._dead

    def __contains__(self, id: object) -> bool:
        with self._lock:
            return isinstance(id, str) and id in self._ensure_index()

    def __repr__(self) -> str:
        return f"BM25Index(size={len(self)}, terms={len(self._vocabulary)}, {self.parameters})"

    @property
    def nbytes(self) -> int:
        """Memory held by the numpy arrays (postings, lengths, flags); texts not included."""
        with self._lock:
            arrays = sum(block.nbytes for block in self._blocks)
            return int(arrays + self._lengths.nbytes + self._alive.nbytes)

    # ------------------------------------------------------------------ adding

    def add(self, segment: TextSegment | str, *, id: str | None = None) -> str:
        """Index one segment (or bare text), under ``id`` when given; returns its id."""
        return self.add_all([segment], ids=None if id is None else [id])[0]

    def add_all(
        self, segments: Sequence[TextSegment | str], *, ids: Sequence[str] | None = None
    ) -> list[str]:
        """Index a batch; an existing id is replaced. Validates everything before changing."""
        if isinstance(segments, str | TextSegment):
            raise BM25IndexError("add_all takes a sequence of segments; use add for one")
        texts, metadata = _split_segments(segments)
        id_list = generate_ids(len(texts)) if ids is None else _validate_ids(ids, len(texts))
        if not texts:
            return []
        tokens = [self.analyzer.tokenize(text) for text in texts]
        with self._lock:
            self._commit(tokens, texts, metadata, id_list, replace=ids is not None)
        return id_list

    def _commit(
        self,
        tokens: list[list[str]],
        texts: list[str],
        metadata: list[dict[str, MetadataValue]],
        ids: list[str],
        *,
        replace: bool,
    ) -> None:
        count = len(texts)
        token_counts = np.fromiter(map(len, tokens), dtype=np.int64, count=count)
        # One C-level pass over all tokens (a list then an array beats np.fromiter here).
        term_ids = np.array(
            list(map(self._term_ids.__getitem__, chain.from_iterable(tokens))), dtype=np.int64
        )
        start = self._size
        block, lengths = csr.build(term_ids, token_counts, start, len(self._vocabulary))
        self._metadata.append(metadata)  # the last step that can fail on bad input
        if replace and self._size:
            index = self._ensure_index()
            self._tombstone([row for row in map(index.pop, ids, [None] * count) if row is not None])
        self._reserve(count)
        self._lengths[start : start + count] = lengths
        self._alive[start : start + count] = True
        self._ids.extend(ids)
        self._texts.extend(texts)
        self._size = start + count
        if self._index is not None:
            self._index.update(zip(ids, range(start, start + count), strict=True))
        self._blocks.append(block)
        while len(self._blocks) > 1 and 2 * len(self._blocks[-1]) >= len(self._blocks[-2]):
            newer = self._blocks.pop()
            self._blocks[-1] = csr.merge(self._blocks[-1], newer)
        self._stats = None
        if 4 * self._dead > self._size:
            self.compact()

    def _reserve(self, extra: int) -> None:
        needed = self._size + extra
        capacity = len(self._alive)
        if needed <= capacity:
            return
        capacity = max(needed, 2 * capacity, _MIN_CAPACITY)
        lengths = np.zeros(capacity, dtype=np.int64)
        alive = np.zeros(capacity, dtype=bool)
        lengths[: self._size] = self._lengths[: self._size]
        alive[: self._size] = self._alive[: self._size]
        self._lengths, self._alive = lengths, alive

    def _ensure_index(self) -> dict[str, int]:
        if self._index is None:
            alive = np.flatnonzero(self._alive[: self._size]).tolist()
            self._index = {self._ids[row]: row for row in alive}
        return self._index

    # ------------------------------------------------------------------ searching

    def search(
        self,
        query: str | Mapping[str, float],
        *,
        max_results: int = 10,
        min_score: float | None = None,
        filter: Filter | None = None,
    ) -> list[BM25Match]:
        """The best ``max_results`` segments holding a query term, best first.

        ``query`` is a text (analyzed like the documents; a term given twice counts twice)
        or a mapping of index terms, as :meth:`terms` gives them, to weights > 0 (each
        term's BM25 contribution is multiplied by its weight; for expanded queries such
        as pseudo-relevance feedback). ``min_score`` drops weaker matches; ``filter``
        restricts the candidates by metadata.
        """
        tokens: list[str] = []
        weighted: dict[str, float] | None = None
        if isinstance(query, str):
            tokens = self.analyzer.tokenize(query)
        elif isinstance(query, Mapping):
            weighted = _check_weights(query)
        else:
            raise BM25IndexError(
                f"query must be a str or a mapping of terms to weights, got {type(query).__name__}"
            )
        if type(max_results) is not int or max_results < 1:
            raise BM25IndexError(f"max_results must be a positive int, got {max_results!r}")
        if filter is not None and not isinstance(filter, Filter):
            raise BM25IndexError(f"filter must be a ragloom Filter, got {type(filter).__name__}")
        with self._lock:
            if weighted is None:
                found = [self._term_ids.peek(token) for token in tokens]
                terms, query_tf = _distinct([t for t in found if t is not None and t >= 0])
            else:
                known = [(self._vocabulary.get(term), w) for term, w in weighted.items()]
                pairs = [(term, w) for term, w in known if term is not None]
                terms = [term for term, _ in pairs]
                query_tf = np.array([w for _, w in pairs], dtype=np.float64)
            rows, scores = self._top_k(terms, query_tf, max_results, min_score, filter)
            return [
                BM25Match(self._ids[row], score, self._segment(row))
                for row, score in zip(rows.tolist(), scores.tolist(), strict=True)
            ]

    def terms(self, text: str) -> list[str]:
        """The index terms of ``text`` under this index's analyzer, in order."""
        return analyze(self.analyzer, text)

    def _top_k(
        self,
        terms: list[int],
        query_tf: Floats,
        k: int,
        min_score: float | None,
        filter: Filter | None,
    ) -> tuple[Ints, Floats]:
        """The best ``k`` rows for distinct ``terms`` weighted by ``query_tf``, and scores."""
        nothing = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        if not terms or self._size == self._dead:
            return nothing
        stats = self._current_stats()
        rows, contributions, counts = self._gather(stats, terms)
        if rows.size == 0:
            return nothing
        ends = np.cumsum(counts).tolist()
        for repeat, start, end in zip(query_tf.tolist(), [0, *ends[:-1]], ends, strict=True):
            if repeat != 1:  # a term given twice counts twice; weights scale likewise
                contributions[start:end] *= repeat
        weights = query_tf * stats.idf[terms]
        base = self.parameters.tfc_absent() * float(weights.sum())  # every document gets it
        floor = -math.inf if min_score is None else min_score - base
        if rows.size >= _DENSE_SHARE * self._size and bool(np.all(weights[counts > 0] > 0)):
            # Every posting adds > 0, so exactly the matched rows have a sum > 0.
            sums = np.bincount(rows, weights=contributions, minlength=self._size)
            if filter is not None:
                sums *= filter_mask(filter, self._metadata)
            floor = max(floor, math.ulp(0.0))
            # The k-th best score among the rows of one term's postings bounds the k-th best
            # overall from below: a cheap cut before selecting among the few rows above it.
            enough = np.flatnonzero(counts >= k)
            if enough.size:
                term = int(enough[np.argmin(counts[enough])])
                start = int(counts[:term].sum())
                probe = sums[rows[start : start + int(counts[term])]]
                floor = max(floor, float(np.partition(probe, probe.size - k)[probe.size - k]))
            candidates = np.flatnonzero(sums >= floor)
            scores: Floats = sums[candidates].astype(np.float64, copy=False)
        else:
            candidates, owner = np.unique(rows, return_inverse=True)
            scores = np.bincount(owner, weights=contributions, minlength=candidates.size).astype(
                np.float64, copy=False
            )
            if filter is not None:
                keep = filter_mask(filter, self._metadata)[candidates]
                candidates, scores = candidates[keep], scores[keep]
            keep = scores >= floor
            candidates, scores = candidates[keep], scores[keep]
        if k < candidates.size:
            kth = float(np.partition(scores, candidates.size - k)[candidates.size - k])
            keep = scores >= kth
            candidates, scores = candidates[keep], scores[keep]
        order = np.lexsort((candidates, -scores))[:k]
        return candidates[order].astype(np.int64), scores[order] + base

    def _gather(
        self, stats: _Stats, terms: list[int]
    ) -> tuple[npt.NDArray[np.int32], Floats, Ints]:
        """Rows and score contributions of the live postings of ``terms`` (term after term),
        and how many there are per term."""
        self._compute_impacts(stats, [t for t in terms if math.isnan(stats.idf[t])])
        row_parts, impact_parts = [], []
        counts = np.zeros(len(terms), dtype=np.int64)
        for i, term in enumerate(terms):
            for block, impacts in zip(self._blocks, stats.impacts, strict=True):
                if term < block.term_count:
                    start, end = block.indptr[term], block.indptr[term + 1]
                    if end > start:
                        row_parts.append(block.rows[start:end])
                        impact_parts.append(impacts[start:end])
                        counts[i] += end - start
        if not row_parts:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float64), counts
        rows, contributions = np.concatenate(row_parts), np.concatenate(impact_parts)
        if self._dead:
            live = self._alive[rows]
            owner = np.repeat(np.arange(len(terms)), counts)
            counts = np.bincount(owner[live], minlength=len(terms)).astype(np.int64)
            rows, contributions = rows[live], contributions[live]
        return rows, contributions, counts

    def _compute_impacts(self, stats: _Stats, terms: list[int]) -> None:
        """Fill ``stats.idf`` and the impacts of every posting of ``terms``."""
        params = self.parameters
        scale = params.term_scale()
        for term in terms:
            slices = [
                (block, impacts, int(block.indptr[term]), int(block.indptr[term + 1]))
                for block, impacts in zip(self._blocks, stats.impacts, strict=True)
                if term < block.term_count
            ]
            df = sum(
                int(np.count_nonzero(self._alive[block.rows[start:end]]))
                if self._dead
                else end - start
                for block, _, start, end in slices
            )
            idf = (
                float(params.idf(np.array([float(df)]), stats.count, stats.mean_idf)[0])
                if df
                else 0.0
            )
            for block, impacts, start, end in slices:
                rows = block.rows[start:end]
                gains = params.gains(block.tfs[start:end], stats.factor[rows])
                np.multiply(gains, idf * scale, out=impacts[start:end])
            stats.idf[term] = idf

    def _current_stats(self) -> _Stats:
        if self._stats is None or len(self._stats.idf) != len(self._vocabulary):
            size = self._size
            alive = self._alive[:size]
            count = size - self._dead
            total = int(self._lengths[:size][alive].sum())
            average = total / count
            params = self.parameters
            if average > 0:
                length_norm: Floats = (
                    1 - params.b + params.b * self._lengths[:size].astype(np.float64) / average
                )
            else:  # every segment is empty: no postings, nothing is ever scored
                length_norm = np.ones(size, dtype=np.float64)
            mean_idf = 0.0
            if params.variant == "okapi":
                df = self._document_frequencies()
                present = df[df > 0].astype(np.float64)
                if present.size:
                    mean_idf = float(robertson_idf(present, count).mean())
            self._stats = _Stats(
                count,
                params.document_factor(length_norm),
                mean_idf,
                np.full(len(self._vocabulary), np.nan),
                [np.empty(len(block), dtype=np.float64) for block in self._blocks],
            )
        return self._stats

    def _document_frequencies(self) -> Ints:
        """Live document frequency of every term."""
        term_count = len(self._vocabulary)
        df = np.zeros(term_count, dtype=np.int64)
        for block in self._blocks:
            if self._dead:
                live = self._alive[block.rows]
                df += np.bincount(block.terms()[live], minlength=term_count)
            else:
                df += block.counts(term_count)
        return df

    def _segment(self, row: int) -> TextSegment:
        return TextSegment(self._texts[row], Metadata._trusted(dict(self._metadata.row(row))))

    # ------------------------------------------------------------------ removing

    def _tombstone(self, rows: Positions | list[int]) -> None:
        """Mark ``rows`` (already out of the id index) removed."""
        self._alive[rows] = False
        self._dead += len(rows)
        self._metadata.blank(rows)  # removed rows take no part in filters or type checks
        self._stats = None

    def _kill(self, rows: Positions) -> None:
        """Tombstone ``rows``; compact when dead rows pile up, reset when none is left."""
        if len(rows) == 0:
            return
        self._tombstone(rows)
        if self._dead == self._size:
            self._reset()
        elif 4 * self._dead > self._size:
            self.compact()

    def compact(self) -> None:
        """Drop removed rows from rows, postings and vocabulary now, keeping order."""
        with self._lock:
            if len(self._blocks) > 1:
                merged = self._blocks[0]
                for block in self._blocks[1:]:
                    merged = csr.merge(merged, block)
                self._blocks = [merged]
                self._stats = None
            if not self._dead:
                return
            size = self._size
            alive = self._alive[:size]
            df = self._document_frequencies()
            used = df > 0
            term_map = np.where(used, np.cumsum(used) - 1, -1)
            term_count = int(used.sum())
            self._blocks = [
                csr.compact(block, alive, term_map, term_count) for block in self._blocks
            ]
            new_ids = term_map.tolist()
            terms = list(self._vocabulary)
            self._vocabulary.clear()
            self._vocabulary.update(
                (terms[old], new) for old, new in enumerate(new_ids) if new >= 0
            )
            # A dropped token stays -1; a token whose term vanished is forgotten.
            surface = [
                (token, -1 if old < 0 else new_ids[old])
                for token, old in self._term_ids.items()
                if old < 0 or new_ids[old] >= 0
            ]
            self._term_ids.clear()
            self._term_ids.update(surface)
            self._metadata.delete(np.flatnonzero(~alive))
            keep = np.flatnonzero(alive)
            kept = keep.tolist()
            self._ids = [self._ids[row] for row in kept]
            self._texts = [self._texts[row] for row in kept]
            self._lengths[: keep.size] = self._lengths[keep]
            self._alive[: keep.size] = True
            self._alive[keep.size : size] = False
            self._size = int(keep.size)
            self._dead = 0
            self._index = None
            self._stats = None

    # ------------------------------------------------------------------ persistence

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the index to the directory ``path`` atomically (see the module docstring).

        ``path`` is created if missing; an existing directory must be empty or hold a saved
        index. Older data files are deleted once the new manifest is in place.
        """
        analyzer_config = _analyzer_config(self.analyzer)

        def write(files: DataFiles) -> dict[str, Any]:
            with self._lock:
                self.compact()
                block = self._blocks[0] if self._blocks else csr.empty(len(self._vocabulary))
                size = self._size
                arrays: dict[str, npt.NDArray[Any]] = {
                    "indptr": block.indptr,
                    "rows": block.rows,
                    "tfs": block.tfs,
                    "lengths": self._lengths[:size],
                }
                vocabulary = json.dumps(list(self._vocabulary), ensure_ascii=False).encode()
                files.write("postings", lambda f: f.write(_npz_bytes(arrays)))
                files.write("vocabulary", lambda f: f.write(vocabulary))
                files.write(
                    "records", lambda f: write_records(f, self._ids, self._texts, self._metadata)
                )
                return {
                    "parameters": self.parameters.to_dict(),
                    "analyzer": analyzer_config,
                    "count": size,
                    "terms": len(self._vocabulary),
                }

        _FORMAT.save(path, write)

    @classmethod
    def load(cls, path: str | os.PathLike[str], analyzer: Analyzer | None = None) -> BM25Index:
        """Read an index written by :meth:`save`; any defect raises naming the file at fault.

        A :class:`StandardAnalyzer` is rebuilt from the manifest; an index saved with another
        analyzer needs that analyzer passed again.
        """
        saved = _FORMAT.open(path)
        manifest, files = saved.manifest, saved.files
        with _FORMAT.reading(saved.manifest_path):
            parameters = BM25Parameters(**manifest["parameters"])
            count, term_count = manifest["count"], manifest["terms"]
            analyzer_config = manifest["analyzer"]
            if analyzer is None:
                if analyzer_config is None:
                    raise BM25IndexError(
                        f"{saved.manifest_path}: saved with a custom analyzer; pass it to load()"
                    )
                analyzer = StandardAnalyzer.from_config(analyzer_config)
        with (
            _FORMAT.reading(files["postings"]),
            np.load(files["postings"], allow_pickle=False) as data,
        ):
            arrays = {name: data[name] for name in ("indptr", "rows", "tfs", "lengths")}
        with _FORMAT.reading(files["vocabulary"]):
            terms = json.loads(files["vocabulary"].read_bytes())
        ids, texts, metadata = _FORMAT.read_records(files["records"])
        _check_loaded(arrays, terms, ids, texts, count, term_count, saved)
        index = cls(
            analyzer,
            k1=parameters.k1,
            b=parameters.b,
            variant=parameters.variant,
            delta=parameters.delta,
            epsilon=parameters.epsilon,
        )
        index._vocabulary.update(zip(terms, range(len(terms)), strict=True))
        index._metadata.append(metadata)
        index._reserve(count)
        index._lengths[:count] = arrays["lengths"]
        index._alive[:count] = True
        index._ids, index._size = ids, count
        index._texts = cast(list[str], texts)  # all str: checked by _check_loaded
        if count:
            index._blocks = [csr.Postings(arrays["indptr"], arrays["rows"], arrays["tfs"])]
        return index


# ---------------------------------------------------------------------- helpers


def _npz_bytes(arrays: Mapping[str, npt.NDArray[Any]]) -> bytes:
    """``arrays`` as an uncompressed ``.npz`` file (which needs a seekable file to write)."""
    buffer = io.BytesIO()
    np.savez(buffer, allow_pickle=False, **arrays)
    return buffer.getvalue()


def _check_weights(query: Mapping[str, float]) -> dict[str, float]:
    """The term weights of a weighted query, checked: str terms, finite numbers > 0."""
    weights: dict[str, float] = {}
    for term, weight in query.items():
        if not isinstance(term, str):
            raise BM25IndexError(f"query terms must be str, got {type(term).__name__}")
        if isinstance(weight, bool) or not isinstance(weight, int | float):
            raise BM25IndexError(f"the weight of {term!r} must be a number, got {weight!r}")
        if not (math.isfinite(weight) and weight > 0):
            raise BM25IndexError(f"the weight of {term!r} must be finite and > 0, got {weight!r}")
        weights[term] = float(weight)
    return weights


def _distinct(term_ids: list[int]) -> tuple[list[int], Floats]:
    """The distinct ids in order of first appearance, and how often each occurs."""
    counts: dict[int, int] = {}
    for term in term_ids:
        counts[term] = counts.get(term, 0) + 1
    return list(counts), np.fromiter(counts.values(), dtype=np.float64, count=len(counts))


def _split_segments(
    segments: Sequence[TextSegment | str],
) -> tuple[list[str], list[dict[str, MetadataValue]]]:
    texts: list[str] = []
    metadata: list[dict[str, MetadataValue]] = []
    for position, segment in enumerate(segments):
        if isinstance(segment, TextSegment):
            check_segment(segment, position, error=BM25IndexError)
            texts.append(segment.text)
            metadata.append(segment.metadata.to_dict())
        elif isinstance(segment, str):
            check_segment_text(segment, f"text of segment {position}", error=BM25IndexError)
            texts.append(segment)
            metadata.append({})
        else:
            raise BM25IndexError(
                f"segment at index {position} is a {type(segment).__name__}, "
                "not a TextSegment or str"
            )
    return texts, metadata


def _analyzer_config(analyzer: Analyzer) -> dict[str, Any] | None:
    return analyzer.config() if isinstance(analyzer, StandardAnalyzer) else None


def _check_loaded(
    arrays: Mapping[str, npt.NDArray[Any]],
    terms: object,
    ids: list[Any],
    texts: list[Any],
    count: object,
    term_count: object,
    saved: SavedDirectory,
) -> None:
    """Raise :class:`BM25IndexError`, naming the file at fault, unless the loaded parts form
    a consistent index."""

    def fail(kind: str, reason: str) -> BM25IndexError:
        source = saved.files.get(kind, saved.manifest_path)
        return BM25IndexError(f"{source}: corrupt saved BM25 index ({reason})")

    if type(count) is not int or type(term_count) is not int or count < 0 or term_count < 0:
        raise fail("manifest", "invalid count")
    if not isinstance(terms, list) or len(terms) != term_count or len(set(terms)) != term_count:
        raise fail("vocabulary", "the vocabulary does not list distinct terms")
    if not all(isinstance(term, str) for term in terms):
        raise fail("vocabulary", "a vocabulary entry is not a string")
    if len(ids) != count or len(texts) != count or not all(isinstance(t, str) for t in texts):
        raise fail("records", f"expected {count} records with texts")
    try:
        _validate_ids(ids, count)
    except BM25IndexError as exc:
        raise fail("records", str(exc)) from exc
    indptr, rows, tfs, lengths = (arrays[k] for k in ("indptr", "rows", "tfs", "lengths"))
    expected = (
        ("indptr", np.int64),
        ("rows", np.int32),
        ("tfs", np.float32),
        ("lengths", np.int64),
    )
    for name, dtype in expected:
        if arrays[name].dtype != dtype or arrays[name].ndim != 1:
            raise fail("postings", f"{name} is not a 1-d {np.dtype(dtype)} array")
    if len(indptr) != term_count + 1 or len(lengths) != count or len(rows) != len(tfs):
        raise fail("postings", "array sizes disagree")
    if indptr[0] != 0 or indptr[-1] != len(rows) or np.any(np.diff(indptr) < 0):
        raise fail("postings", "indptr is not a valid offset array")
    if rows.size and (rows.min() < 0 or rows.max() >= count or tfs.min() < 1):
        raise fail("postings", "a posting is out of range")
    block = csr.Postings(indptr, rows, tfs)
    terms_of = block.terms()
    if np.any((np.diff(rows) <= 0) & (np.diff(terms_of) == 0)):
        raise fail("postings", "postings of a term are not in row order")
    if not np.array_equal(np.bincount(rows, weights=tfs, minlength=count), lengths):
        raise fail("postings", "segment lengths do not match the postings")
