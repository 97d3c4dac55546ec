"""Postings in CSR layout: per term, the rows holding it and how often, built and merged
with whole-array numpy operations (no Python loop per document or per posting).

A :class:`Postings` block covers a contiguous range of rows; the postings of term ``t`` are
``rows[indptr[t]:indptr[t + 1]]`` (ascending) with frequencies ``tfs[...]`` at the same
positions. Terms at or past ``len(indptr) - 1`` (added to the vocabulary later) have none.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "Ints",
    "Rows",
    "Freqs",
    "Mask",
    "Postings",
    "build",
    "merge",
    "compact",
    "empty",
]

Ints = npt.NDArray[np.int64]
Rows = npt.NDArray[np.int32]
Freqs = npt.NDArray[np.float32]
Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class Postings:
    """One CSR block: ``indptr`` (int64, terms + 1), ``rows`` (int32), ``tfs`` (float32)."""

    indptr: Ints
    rows: Rows
    tfs: Freqs

    @property
    def term_count(self) -> int:
        """How many term ids this block has slots for."""
        return len(self.indptr) - 1

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays."""
        return int(self.indptr.nbytes + self.rows.nbytes + self.tfs.nbytes)

    def __len__(self) -> int:
        return len(self.rows)

    def counts(self, term_count: int) -> Ints:
        """Postings per term, padded with zeros to ``term_count`` terms."""
        counts = np.zeros(term_count, dtype=np.int64)
        counts[: self.term_count] = np.diff(self.indptr)
        return counts

    def terms(self) -> Ints:
        """The term of every posting (expanded from ``indptr``)."""
        return np.repeat(np.arange(self.term_count, dtype=np.int64), np.diff(self.indptr))


def build(
    term_ids: Ints, token_counts: Ints, first_row: int, term_count: int
) -> tuple[Postings, Ints]:
    """Postings of a batch of documents given the term id of every token, document after
    document (``-1`` for dropped tokens), and the token count of every document; also each
    document's length in kept terms.

    Term frequencies come from one sort of ``term * documents + document`` keys.
    """
    documents = len(token_counts)
    owner = np.repeat(np.arange(documents, dtype=np.int64), token_counts)
    kept = term_ids >= 0
    owner = owner[kept]
    keys = term_ids[kept] * documents + owner
    keys.sort()
    if keys.size:
        starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        unique = keys[starts]
        tfs = np.diff(np.append(starts, keys.size)).astype(np.float32)
    else:
        unique = keys
        tfs = np.zeros(0, dtype=np.float32)
    terms = unique // documents if documents else unique
    rows = (unique - terms * documents + first_row).astype(np.int32)
    indptr = np.zeros(term_count + 1, dtype=np.int64)
    np.cumsum(np.bincount(terms, minlength=term_count), out=indptr[1:])
    return Postings(indptr, rows, tfs), np.bincount(owner, minlength=documents)


def merge(older: Postings, newer: Postings) -> Postings:
    """One block holding both, for blocks whose rows do not interleave (``older`` first).

    Each posting moves to its final position directly: term ``t``'s postings from ``older``
    then from ``newer`` -- O(postings), no sort.
    """
    term_count = max(older.term_count, newer.term_count)
    old_counts, new_counts = older.counts(term_count), newer.counts(term_count)
    indptr = np.zeros(term_count + 1, dtype=np.int64)
    np.cumsum(old_counts + new_counts, out=indptr[1:])
    rows = np.empty(len(older) + len(newer), dtype=np.int32)
    tfs = np.empty(len(rows), dtype=np.float32)
    for block, counts, shift in (
        (older, old_counts, indptr[:-1]),
        (newer, new_counts, indptr[:-1] + old_counts),
    ):
        own = np.zeros(term_count, dtype=np.int64)
        own[: block.term_count] = block.indptr[:-1]
        positions = np.arange(len(block), dtype=np.int64) + np.repeat(shift - own, counts)
        rows[positions] = block.rows
        tfs[positions] = block.tfs
    return Postings(indptr, rows, tfs)


def compact(block: Postings, alive: Mask, term_map: Ints, term_count: int) -> Postings:
    """``block`` without the postings of dead rows, rows renumbered densely (order kept),
    and term ids renamed through ``term_map`` (old id -> new id, monotone, -1 = gone)."""
    keep = alive[block.rows]
    new_rows = (np.cumsum(alive, dtype=np.int64) - 1)[block.rows[keep]].astype(np.int32)
    terms = term_map[block.terms()[keep]]
    indptr = np.zeros(term_count + 1, dtype=np.int64)
    np.cumsum(np.bincount(terms, minlength=term_count), out=indptr[1:])
    return Postings(indptr, new_rows, block.tfs[keep])


def empty(term_count: int = 0) -> Postings:
    """A block without postings."""
    return Postings(
        np.zeros(term_count + 1, dtype=np.int64),
        np.zeros(0, dtype=np.int32),
        np.zeros(0, dtype=np.float32),
    )
