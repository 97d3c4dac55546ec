"""kit.remote_store's loop and helpers, and kit.metadata_codec's one alphabet, on their own
(the stores built on them run the testkit suites: store-milvus, store-qdrant and the
worked example of docs/contributing.md)."""

from __future__ import annotations

import math
import uuid

import numpy as np
import pytest

from ragloom.core.errors import EmbeddingStoreError
from ragloom.core.filter_values import NUMBER
from ragloom.core.kit.metadata_codec import (
    EXACT_LETTERS,
    EXACT_LETTERS_OF,
    KIND_LETTERS,
    decode_metadata,
    encode_metadata,
    exact_letter,
)
from ragloom.core.kit.remote_store import Candidates, RemoteEmbeddingStore, renamed_option
from ragloom.core.kit.steps import Steps, run_steps


def _nearest(
    store: RemoteEmbeddingStore, vectors: np.ndarray, scores: list[float], k: int
) -> tuple[list[int], list[int]]:
    """The rows ``_nearest`` keeps and the limits it asked for, against a server whose
    (approximate) scores are ``scores``, in that order."""
    asked: list[int] = []

    def fetch(limit: int) -> Steps[Candidates]:
        asked.append(limit)
        rows = list(range(min(limit, len(scores))))
        yield from ()
        return Candidates(rows, vectors[rows], scores[rows[-1]])

    query = np.array([1.0, 0.0], dtype=np.float32)
    rows, _ = run_steps(store._nearest(query, k, 0.0, fetch), lambda step: None)
    return rows, asked


def test_nearest_asks_for_more_until_no_unseen_entry_can_tie_the_kth() -> None:
    store = RemoteEmbeddingStore("c")
    count = 100
    vectors = np.tile(np.array([[1.0, 0.0]], dtype=np.float32), (count, 1))
    # Every entry is an exact tie (cosine 1): the server's last score never falls below it.
    rows, asked = _nearest(store, vectors, [1.0] * count, k=3)
    assert asked == [13, 52, 208]
    assert len(rows) == count
    # A clear gap after the first 10: the first answer (13 candidates) settles it.
    vectors[10:] = [0.0, 1.0]
    rows, asked = _nearest(store, vectors, [1.0] * 10 + [0.0] * (count - 10), k=3)
    assert asked == [13]
    assert len(rows) == 13


def test_nearest_stops_at_the_servers_limit() -> None:
    class Capped(RemoteEmbeddingStore):
        _ann_limit = 20

    vectors = np.tile(np.array([[1.0, 0.0]], dtype=np.float32), (100, 1))
    rows, asked = _nearest(Capped("c"), vectors, [1.0] * 100, k=3)
    assert asked == [13, 20]
    assert len(rows) == 20


def test_ranked_orders_ties_by_insertion_and_cuts_at_min_score() -> None:
    cosines = np.array([0.0, 1.0, 1.0, 0.5])
    ranked = list(RemoteEmbeddingStore._ranked(cosines, [4, 9, 2, 1], k=4, min_score=0.8))
    assert ranked == [(2, 1.0), (1, 1.0)]


def test_next_seqs_increase_across_calls() -> None:
    store = RemoteEmbeddingStore("c")
    first, second = store._next_seqs(3), store._next_seqs(2)
    assert list(first) == list(range(first.start, first.start + 3))
    assert second.start > first[-1]


def test_renamed_option_warns_and_refuses_both() -> None:
    assert renamed_option("new", "collection", None, "collection_name") == "new"
    with pytest.warns(DeprecationWarning, match="collection_name is deprecated; use collection"):
        assert renamed_option(None, "collection", "old", "collection_name") == "old"
    with (
        pytest.raises(EmbeddingStoreError, match="not both"),
        pytest.warns(DeprecationWarning, match="collection_name is deprecated"),
    ):
        renamed_option("new", "collection", "old", "collection_name")


def test_one_alphabet_no_letter_means_two_things() -> None:
    assert KIND_LETTERS["number"] == "n"
    assert "n" not in EXACT_LETTERS
    assert sorted(EXACT_LETTERS) == sorted(set().union(*EXACT_LETTERS_OF.values()))
    values = [True, 7, 2.5, math.inf, -math.inf, math.nan, "s", uuid.UUID(int=1)]
    letters = [exact_letter(value) for value in values]
    assert letters == ["b", "i", "f", "p", "m", "x", "s", "u"]
    assert set(EXACT_LETTERS_OF[NUMBER]) == {"i", "f", "p", "m", "x"}


def test_the_codec_keeps_types() -> None:
    metadata = {"u": uuid.UUID(int=5), "f": 2.0, "i": 2, "inf": -math.inf, "s": "x"}
    decoded = decode_metadata(encode_metadata(metadata))
    assert decoded == metadata
    assert [type(v) for v in decoded.values()] == [type(v) for v in metadata.values()]
