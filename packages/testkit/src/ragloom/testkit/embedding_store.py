"""EmbeddingStoreSuite: the contract every EmbeddingStore must pass unchanged.

Subclass it in your integration's tests and provide one fixture, ``store``, returning a
fresh, empty store (it may request the suite's ``dimension`` fixture, 4, for stores
that need the vector size up front)::

    class TestMyStore(EmbeddingStoreSuite):
        @pytest.fixture
        def store(self, dimension):
            return MyStore(dimension=dimension)

A backend that cannot honour a rule declares it, e.g.
``preserves_insertion_order_on_ties = Deviation("why")``; the suite then runs the
capability's weaker test (see each :class:`Capability` below and the README).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding
from ragloom.core.errors import EmbeddingStoreError, InvalidFilterError, MetadataTypeError
from ragloom.core.filters import Filter, metadata_key
from ragloom.core.stores.base import (
    EmbeddingMatch,
    EmbeddingSearchRequest,
    EmbeddingSearchResult,
    EmbeddingStore,
    StoredEmbedding,
)
from ragloom.testkit.suite import Capability, ConformanceSuite, if_fails

__all__ = ["DIMENSION", "EmbeddingStoreSuite", "EmbeddingStoreSuiteBase"]

DIMENSION = 4
_ALL = 1000  # max_results that returns every entry the suites add
_TOLERANCE = 1e-5  # stores may compute scores in float32


def embedding(*values: float) -> Embedding:
    """An embedding from its components."""
    return Embedding(values)


def search(
    store: EmbeddingStore,
    query: Embedding,
    max_results: int = _ALL,
    min_score: float = 0.0,
) -> list[EmbeddingMatch]:
    """The matches of a plain search."""
    result = store.search(EmbeddingSearchRequest(query, max_results, min_score))
    assert isinstance(result, EmbeddingSearchResult)
    return result.matches


def entries(store: EmbeddingStore, dimension: int) -> dict[str, EmbeddingMatch]:
    """Every entry of ``store`` by id (a search with ``min_score`` 0 returns them all)."""
    matches = search(store, Embedding(np.ones(dimension)))
    by_id = {match.embedding_id: match for match in matches}
    assert len(by_id) == len(matches), "a search returned the same id twice"
    return by_id


def got(entries: Sequence[StoredEmbedding]) -> list[str]:
    """The ids of what ``get`` gave back, in its order (each must be a StoredEmbedding)."""
    for entry in entries:
        assert isinstance(entry, StoredEmbedding), f"get returned {type(entry).__name__}"
    return [entry.embedding_id for entry in entries]


def relevance(vectors: npt.ArrayLike, query: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Reference relevance scores ``(cos + 1) / 2`` of ``vectors`` for ``query``, in float64."""
    a = np.asarray(vectors, dtype=np.float64)
    q = np.asarray(query, dtype=np.float64)
    cosines = a @ q / (np.linalg.norm(a, axis=1) * np.linalg.norm(q))
    scores: npt.NDArray[np.float64] = (np.clip(cosines, -1.0, 1.0) + 1.0) / 2.0
    return scores


def assert_top_matches(
    matches: Sequence[EmbeddingMatch],
    ids: Sequence[str],
    scores: npt.NDArray[np.float64],
    max_results: int,
    min_score: float = 0.0,
) -> None:
    """``matches`` are the best ``max_results`` of ``ids`` by reference ``scores``.

    Scores may differ from the reference by float32 rounding, so entries whose scores
    are that close may trade places; nothing better than a returned entry is left out.
    """
    reference = dict(zip(ids, scores.tolist(), strict=True))
    eligible = sorted((s for s in reference.values() if s >= min_score - _TOLERANCE), reverse=True)
    got = [match.score for match in matches]
    assert got == sorted(got, reverse=True), f"scores not descending: {got}"
    assert len({m.embedding_id for m in matches}) == len(matches), "duplicate ids in matches"
    strictly_eligible = sum(s >= min_score + _TOLERANCE for s in reference.values())
    assert min(max_results, strictly_eligible) <= len(matches) <= min(max_results, len(eligible))
    for match in matches:
        assert match.embedding_id in reference, f"unknown id {match.embedding_id!r}"
        assert match.score == pytest.approx(reference[match.embedding_id], abs=_TOLERANCE)
        assert match.score >= min_score
    if matches:
        returned = {match.embedding_id for match in matches}
        worst = min(reference[i] for i in returned)
        for other, score in reference.items():
            if other not in returned and len(matches) == max_results:
                assert score <= worst + _TOLERANCE, f"{other!r} ({score}) beats a returned match"


def random_vectors(count: int, dimension: int, seed: int) -> npt.NDArray[np.float32]:
    """Seeded random vectors with components in [-1, 1)."""
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.0, 1.0, size=(count, dimension)).astype(np.float32)


class EmbeddingStoreSuiteBase(ConformanceSuite, standard=True):
    """Fixtures shared by the store suites: the integration's ``store`` and ``dimension``."""

    integration_fixtures = frozenset({"store"})

    preserves_insertion_order_on_ties = Capability(
        "equally scored matches are the right set, in any order"
    )
    removes_by_filter = Capability(
        "remove_all(filter=...) raises EmbeddingStoreError (or InvalidFilterError) "
        "and removes nothing"
    )

    @pytest.fixture
    def store(self) -> EmbeddingStore:
        """Provided by the integration: a fresh, empty store."""
        raise NotImplementedError(
            f"{type(self).__name__} must define a `store` fixture returning a fresh, empty "
            "EmbeddingStore (it may take the `dimension` fixture)"
        )

    @pytest.fixture
    def dimension(self) -> int:
        """The dimension of every vector the suites use."""
        return DIMENSION

    def _remove_by_filter(self, store: EmbeddingStore, condition: Filter) -> None:
        """``remove_all(filter=condition)``, which must raise instead without removes_by_filter."""
        if self.removes_by_filter:
            store.remove_all(filter=condition)
            return
        with pytest.raises((EmbeddingStoreError, InvalidFilterError)):
            store.remove_all(filter=condition)


class EmbeddingStoreSuite(EmbeddingStoreSuiteBase, standard=True):
    """Adding, ids, replacing, search order and scores, min_score, max_results, removal."""

    validates_dimension = Capability(
        "a wrong-dimension vector or query raises some exception (the backend's own type "
        "is accepted); a rejected batch may be partly written"
    )

    # ------------------------------------------------------------------ adding and ids

    @if_fails("add() without an id must return str(uuid.uuid4()), not a backend-native id")
    def test_add_generates_a_uuid4_string_id(self, store: EmbeddingStore) -> None:
        embedding_id = store.add(embedding(1, 0, 0, 0))
        assert isinstance(embedding_id, str)
        assert str(uuid.UUID(embedding_id)) == embedding_id
        assert uuid.UUID(embedding_id).version == 4

    @if_fails("add(id=...) must store under exactly that id and return it")
    def test_add_with_id_uses_that_id(self, store: EmbeddingStore, dimension: int) -> None:
        assert store.add(embedding(1, 0, 0, 0), id="my-id") == "my-id"
        assert list(entries(store, dimension)) == ["my-id"]

    @if_fails("add_all() must return one new id per embedding, in input order")
    def test_add_all_returns_distinct_ids_in_input_order(self, store: EmbeddingStore) -> None:
        vectors = [embedding(1, 0, 0, 0), embedding(0, 1, 0, 0), embedding(0, 0, 1, 0)]
        ids = store.add_all(vectors)
        assert len(ids) == 3
        assert len(set(ids)) == 3
        for vector, embedding_id in zip(vectors, ids, strict=True):
            assert search(store, vector, 1)[0].embedding_id == embedding_id

    @if_fails("add_all(ids=...) must store under those ids and return them unchanged")
    def test_add_all_with_ids_returns_those_ids(self, store: EmbeddingStore) -> None:
        ids = store.add_all([embedding(1, 0, 0, 0), embedding(0, 1, 0, 0)], ids=["a", "b"])
        assert ids == ["a", "b"]
        assert search(store, embedding(0, 1, 0, 0), 1)[0].embedding_id == "b"

    @if_fails("add_all([]) must be a no-op returning [] (no backend call that fails on empty)")
    def test_add_all_of_nothing_returns_no_ids(self, store: EmbeddingStore, dimension: int) -> None:
        assert list(store.add_all([])) == []
        assert entries(store, dimension) == {}

    @if_fails(
        "metadata must keep its type on the way back (int not float, bool not int, UUID not str)"
    )
    def test_segment_text_and_typed_metadata_round_trip(self, store: EmbeddingStore) -> None:
        value = uuid.UUID("8f5b8ac4-1c4e-4d7e-9a55-0c8f2a4b6d10")
        metadata = {"s": "text", "i": 42, "f": 2.5, "b": True, "u": value, "neg": -7}
        segment = TextSegment("The quick brown fox.", metadata)
        store.add(embedding(1, 0, 0, 0), segment)
        match = search(store, embedding(1, 0, 0, 0), 1)[0]
        assert match.embedded == segment
        assert match.embedded is not None
        for key, expected in metadata.items():
            actual = match.embedded.metadata[key]
            assert type(actual) is type(expected), f"{key}: {type(actual).__name__}"
            assert actual == expected

    @if_fails(
        "an entry added without a segment must come back with embedded=None, not an empty segment"
    )
    def test_embedding_without_segment_has_no_embedded(self, store: EmbeddingStore) -> None:
        store.add(embedding(1, 0, 0, 0))
        assert search(store, embedding(1, 0, 0, 0), 1)[0].embedded is None

    @if_fails(
        "matches must carry the stored vector (fetch it with the search; do not return the query)"
    )
    def test_match_carries_the_stored_embedding(self, store: EmbeddingStore) -> None:
        stored = embedding(0.25, -0.5, 0.125, 1.0)
        store.add(stored)
        match = search(store, embedding(1, 0, 0, 0), 1)[0]
        assert isinstance(match.embedding, Embedding)
        np.testing.assert_allclose(match.embedding.vector, stored.vector, rtol=1e-6)

    @if_fails("adding an existing id must upsert (vector and segment), not duplicate or fail")
    def test_adding_an_existing_id_replaces_the_entry(
        self, store: EmbeddingStore, dimension: int
    ) -> None:
        store.add(embedding(1, 0, 0, 0), TextSegment("old", {"v": 1}), id="x")
        store.add(embedding(0, 1, 0, 0), TextSegment("new", {"v": 2}), id="x")
        found = entries(store, dimension)
        assert list(found) == ["x"]
        assert found["x"].embedded == TextSegment("new", {"v": 2})
        np.testing.assert_allclose(found["x"].embedding.vector, [0, 1, 0, 0])

    @if_fails("add_all with known and new ids must upsert the known ones and insert the new ones")
    def test_add_all_replaces_existing_ids_and_adds_new_ones(
        self, store: EmbeddingStore, dimension: int
    ) -> None:
        store.add_all(
            [embedding(1, 0, 0, 0), embedding(0, 1, 0, 0)],
            [TextSegment("a1"), TextSegment("b1")],
            ids=["a", "b"],
        )
        store.add_all(
            [embedding(0, 0, 1, 0), embedding(0, 0, 0, 1)],
            [TextSegment("b2"), TextSegment("c2")],
            ids=["b", "c"],
        )
        found = entries(store, dimension)
        assert sorted(found) == ["a", "b", "c"]
        assert {i: m.embedded.text for i, m in found.items() if m.embedded} == {
            "a": "a1",
            "b": "b2",
            "c": "c2",
        }
        assert search(store, embedding(0, 0, 1, 0), 1)[0].embedding_id == "b"

    @if_fails("remove() must delete the row for good (no tombstone blocking the id)")
    def test_a_removed_id_can_be_added_again(self, store: EmbeddingStore, dimension: int) -> None:
        store.add(embedding(1, 0, 0, 0), id="x")
        store.remove("x")
        store.add(embedding(0, 1, 0, 0), id="x")
        found = entries(store, dimension)
        assert list(found) == ["x"]
        np.testing.assert_allclose(found["x"].embedding.vector, [0, 1, 0, 0])

    # ------------------------------------------------------------------ searching

    @if_fails("search on an empty store must return no matches, not fail (e.g. on a missing table)")
    def test_search_in_an_empty_store_finds_nothing(self, store: EmbeddingStore) -> None:
        assert search(store, embedding(1, 0, 0, 0)) == []

    @if_fails("score must be (cosine + 1) / 2; convert the backend's distance or similarity")
    def test_scores_are_relevance_from_cosine_similarity(self, store: EmbeddingStore) -> None:
        ids = store.add_all(
            [
                embedding(2, 0, 0, 0),  # same direction: cos 1
                embedding(1, 1, 0, 0),  # 45 degrees: cos 0.7071
                embedding(0, 3, 0, 0),  # orthogonal: cos 0
                embedding(-1, 0, 0, 0),  # opposite: cos -1
            ]
        )
        matches = search(store, embedding(1, 0, 0, 0))
        assert [m.embedding_id for m in matches] == ids
        expected = [1.0, (2**-0.5 + 1) / 2, 0.5, 0.0]
        assert [m.score for m in matches] == pytest.approx(expected, abs=_TOLERANCE)

    @if_fails("matches must be sorted best first; check the ORDER BY direction of the distance")
    def test_matches_are_sorted_by_score_descending(self, store: EmbeddingStore) -> None:
        vectors = random_vectors(60, DIMENSION, seed=1)
        ids = store.add_all([Embedding(v) for v in vectors])
        query = random_vectors(1, DIMENSION, seed=2)[0]
        matches = search(store, Embedding(query), 60)
        assert_top_matches(matches, ids, relevance(vectors, query), 60)

    @if_fails(
        "results must equal an exact k-NN scan: check index recall (ef_search, probes), min_score"
    )
    def test_search_equals_brute_force_on_many_entries(self, store: EmbeddingStore) -> None:
        vectors = random_vectors(300, DIMENSION, seed=3)
        ids = store.add_all([Embedding(v) for v in vectors])
        for seed, max_results, min_score in [(4, 1, 0.0), (5, 10, 0.0), (6, 25, 0.7)]:
            query = random_vectors(1, DIMENSION, seed=seed)[0]
            matches = search(store, Embedding(query), max_results, min_score)
            assert_top_matches(matches, ids, relevance(vectors, query), max_results, min_score)

    @if_fails(
        "equal scores must come back in insertion order: order by score, then an insertion sequence"
    )
    def test_ties_keep_insertion_order(self, store: EmbeddingStore) -> None:
        same = embedding(0.3, 0.4, 0.5, 0.6)
        first = store.add_all([same, embedding(-1, 0, 0, 0), same])
        second = store.add(same)
        third = store.add_all([same, same])
        matches = search(store, embedding(0.1, 0.2, 0.3, 0.4), 10)
        tied = [first[0], first[2], second, *third]
        found = [m.embedding_id for m in matches]
        if self.preserves_insertion_order_on_ties:
            assert found == [*tied, first[1]]
        else:
            assert sorted(found[:5]) == sorted(tied)
            assert found[5:] == [first[1]]
        assert len({m.score for m in matches[:5]}) == 1

    @if_fails("max_results must cap the number of matches (LIMIT / top_k), after scoring")
    def test_max_results_limits_the_matches(self, store: EmbeddingStore) -> None:
        ids = store.add_all([embedding(1, i, 0, 0) for i in range(10)])
        matches = search(store, embedding(1, 0, 0, 0), max_results=3)
        assert [m.embedding_id for m in matches] == ids[:3]

    @if_fails("pass the request's max_results through; its default is 3")
    def test_default_max_results_is_three(self, store: EmbeddingStore) -> None:
        store.add_all([embedding(1, i, 0, 0) for i in range(10)])
        request = EmbeddingSearchRequest(embedding(1, 0, 0, 0))
        assert len(store.search(request).matches) == 3

    @if_fails("min_score must keep matches scoring exactly min_score (>=, after score conversion)")
    def test_min_score_is_inclusive(self, store: EmbeddingStore) -> None:
        ids = store.add_all(
            [
                embedding(1, 0, 0, 0),  # score 1
                embedding(1, 1, 0, 0),  # 0.85
                embedding(0, 1, 0, 0),  # exactly 0.5
                embedding(-1, 0, 0, 0),  # 0
            ]
        )
        query = embedding(1, 0, 0, 0)
        assert [m.embedding_id for m in search(store, query, min_score=0.5)] == ids[:3]
        assert [m.embedding_id for m in search(store, query, min_score=0.8)] == ids[:2]
        assert [m.embedding_id for m in search(store, query, min_score=0.0)] == ids

    @if_fails(
        "a query of the wrong dimension must raise EmbeddingStoreError (wrap the backend's error)"
    )
    def test_query_of_the_wrong_dimension_is_rejected(self, store: EmbeddingStore) -> None:
        store.add(embedding(1, 0, 0, 0))
        with pytest.raises(EmbeddingStoreError if self.validates_dimension else Exception):
            search(store, embedding(1, 0, 0))

    # ------------------------------------------------------------------ removing

    @if_fails("remove(id) must delete exactly that entry")
    def test_remove_by_id(self, store: EmbeddingStore, dimension: int) -> None:
        ids = store.add_all([embedding(1, 0, 0, 0), embedding(0, 1, 0, 0)])
        store.remove(ids[0])
        assert list(entries(store, dimension)) == [ids[1]]

    @if_fails("removing unknown ids must be a silent no-op, not an error")
    def test_removing_an_unknown_id_changes_nothing(
        self, store: EmbeddingStore, dimension: int
    ) -> None:
        ids = store.add_all([embedding(1, 0, 0, 0)])
        store.remove("no-such-id")
        store.remove_all(["no-such-id", "another"])
        assert list(entries(store, dimension)) == ids

    @if_fails("remove_all(ids) must delete those ids and ignore unknown ones")
    def test_remove_all_by_ids(self, store: EmbeddingStore, dimension: int) -> None:
        ids = store.add_all([embedding(1, i, 0, 0) for i in range(5)])
        store.remove_all([ids[1], ids[3], "unknown"])
        assert set(entries(store, dimension)) == {ids[0], ids[2], ids[4]}

    @if_fails('remove_all([]) must delete nothing (an empty id list does not mean "all")')
    def test_remove_all_with_no_ids_removes_nothing(
        self, store: EmbeddingStore, dimension: int
    ) -> None:
        ids = store.add_all([embedding(1, 0, 0, 0), embedding(0, 1, 0, 0)])
        store.remove_all([])
        assert sorted(entries(store, dimension)) == sorted(ids)

    @if_fails("remove_all(filter=...) must delete exactly the entries the filter matches")
    def test_remove_all_by_filter(self, store: EmbeddingStore, dimension: int) -> None:
        ids = store.add_all(
            [embedding(1, 0, 0, 0), embedding(0, 1, 0, 0), embedding(0, 0, 1, 0)],
            [TextSegment("a", {"k": "x"}), TextSegment("b", {"k": "y"}), TextSegment("c")],
        )
        self._remove_by_filter(store, metadata_key("k").is_equal_to("x"))
        kept = ids[1:] if self.removes_by_filter else ids
        assert sorted(entries(store, dimension)) == sorted(kept)

    @if_fails("remove_all() must delete every entry and leave the store usable")
    def test_remove_all_without_arguments_empties_the_store(
        self, store: EmbeddingStore, dimension: int
    ) -> None:
        store.add_all([embedding(1, i, 0, 0) for i in range(5)])
        store.remove_all()
        assert entries(store, dimension) == {}
        new_id = store.add(embedding(0, 0, 0, 1))
        assert list(entries(store, dimension)) == [new_id]

    @if_fails("remove_all(ids, filter=...) must raise EmbeddingStoreError before deleting anything")
    def test_remove_all_with_ids_and_filter_is_rejected(
        self, store: EmbeddingStore, dimension: int
    ) -> None:
        ids = store.add_all([embedding(1, 0, 0, 0)], [TextSegment("a", {"k": 1})])
        with pytest.raises(EmbeddingStoreError):
            store.remove_all(ids, filter=metadata_key("k").is_equal_to(1))
        assert list(entries(store, dimension)) == ids

    @if_fails("removed entries must not appear in searches (check index refresh or soft deletes)")
    def test_removed_entries_are_not_found(self, store: EmbeddingStore) -> None:
        vectors = random_vectors(40, DIMENSION, seed=7)
        ids = store.add_all([Embedding(v) for v in vectors])
        removed = set(ids[::3])
        store.remove_all(sorted(removed))
        kept = [i for i, embedding_id in enumerate(ids) if embedding_id not in removed]
        query = random_vectors(1, DIMENSION, seed=8)[0]
        matches = search(store, Embedding(query), 10)
        assert_top_matches(
            matches, [ids[i] for i in kept], relevance(vectors[kept], query), max_results=10
        )

    @if_fails(
        "remove_all(some_filter) (positional, as the Java API reads) must remove by that filter "
        "(core's stores.arguments.removal_target), and a second filter= must be refused"
    )
    def test_remove_all_takes_a_positional_filter(
        self, store: EmbeddingStore, dimension: int
    ) -> None:
        ids = store.add_all(
            [embedding(1, 0, 0, 0), embedding(0, 1, 0, 0), embedding(0, 0, 1, 0)],
            [TextSegment("a", {"k": "x"}), TextSegment("b", {"k": "y"}), TextSegment("c")],
        )
        condition: object = metadata_key("k").is_equal_to("x")
        twice = metadata_key("k").is_equal_to("y")
        refused = (EmbeddingStoreError, InvalidFilterError)
        with pytest.raises(EmbeddingStoreError if self.removes_by_filter else refused):
            store.remove_all(condition, filter=twice)  # type: ignore[arg-type]
        assert sorted(entries(store, dimension)) == sorted(ids)
        if self.removes_by_filter:
            store.remove_all(condition)  # type: ignore[arg-type]
        else:
            with pytest.raises(refused):
                store.remove_all(condition)  # type: ignore[arg-type]
        kept = ids[1:] if self.removes_by_filter else ids
        assert sorted(entries(store, dimension)) == sorted(kept)

    # ------------------------------------------------------------------ getting by id

    @if_fails("get(ids) must give StoredEmbedding entries in the order the ids were asked")
    def test_get_gives_the_entries_in_the_order_asked(self, store: EmbeddingStore) -> None:
        segments = [TextSegment(f"text {name}", {"name": name}) for name in "abc"]
        vectors = [embedding(1, 0, 0, 0), embedding(0, 1, 0, 0), embedding(0, 0, 1, 0)]
        store.add_all(vectors, segments, ids=["a", "b", "c"])
        found = store.get(["c", "a", "b"])
        assert got(found) == ["c", "a", "b"]
        assert [entry.embedded for entry in found] == [segments[2], segments[0], segments[1]]
        assert all(entry.embedding is None for entry in found), "vectors without embeddings=True"
        assert got(store.get(iter(["b"]))) == ["b"]  # any iterable of ids

    @if_fails("get must omit unknown ids and give an id asked twice once, at its first place")
    def test_get_omits_unknown_ids_and_gives_a_repeated_id_once(
        self, store: EmbeddingStore
    ) -> None:
        assert store.get(["a"]) == []  # nothing stored yet
        store.add_all([embedding(1, 0, 0, 0), embedding(0, 1, 0, 0)], ids=["a", "b"])
        assert got(store.get(["x", "b", "y", "a", "b", "a"])) == ["b", "a"]
        assert store.get([]) == []
        assert store.get(["x", "y"]) == []

    @if_fails(
        "get(ids, embeddings=True) must give each vector exactly as added (the float32 values "
        "given to add_all, not normalized or rounded through float16/strings)"
    )
    def test_get_with_embeddings_gives_the_float32_values_as_added(
        self, store: EmbeddingStore, dimension: int
    ) -> None:
        rng = np.random.default_rng(5)
        scales = np.array([1e-3, 1.0, 7.0, 1e3], dtype=np.float32)[:, None]
        vectors = (rng.normal(size=(4, dimension)) * scales).astype(np.float32)
        ids = store.add_all([Embedding(v) for v in vectors], ids=["w", "x", "y", "z"])
        found = store.get(["z", "x", "w", "y"], embeddings=True)
        assert got(found) == ["z", "x", "w", "y"]
        for entry in found:
            assert entry.embedding is not None, f"{entry.embedding_id}: no vector"
            vector = np.asarray(entry.embedding.vector)
            assert vector.dtype == np.float32
            np.testing.assert_array_equal(vector, vectors[ids.index(entry.embedding_id)])
            assert entry.embedded is None

    @if_fails("get must give embedded=None for an entry stored without a segment")
    def test_get_of_an_entry_without_segment(self, store: EmbeddingStore) -> None:
        store.add(embedding(1, 0, 0, 0), TextSegment("with text"), id="with")
        store.add(embedding(0, 1, 0, 0), id="without")
        found = store.get(["without", "with"], embeddings=True)
        assert got(found) == ["without", "with"]
        assert found[0].embedded is None
        assert found[1].embedded == TextSegment("with text")

    @if_fails("get must give the entry as last written: a replaced id's new data, no removed id")
    def test_get_after_a_replace_and_a_remove(self, store: EmbeddingStore) -> None:
        store.add_all(
            [embedding(1, 0, 0, 0), embedding(0, 1, 0, 0), embedding(0, 0, 1, 0)],
            [TextSegment("old a", {"v": 1}), TextSegment("b"), TextSegment("c")],
            ids=["a", "b", "c"],
        )
        store.add(embedding(0, 0, 0, 2), TextSegment("new a", {"v": 2}), id="a")
        store.remove("b")
        found = store.get(["a", "b", "c"], embeddings=True)
        assert got(found) == ["a", "c"]
        assert found[0].embedded == TextSegment("new a", {"v": 2})
        assert found[0].embedding is not None
        np.testing.assert_array_equal(found[0].embedding.vector, [0, 0, 0, 2])
        store.remove_all()
        assert store.get(["a", "c"]) == []

    @if_fails(
        "get must give metadata back with its type (int not float, bool not int, UUID not str)"
    )
    def test_get_gives_metadata_of_every_type_back(self, store: EmbeddingStore) -> None:
        value = uuid.UUID("8f5b8ac4-1c4e-4d7e-9a55-0c8f2a4b6d10")
        metadata = {
            "s": "text ünï 文",
            "i": 42,
            "f": 2.5,
            "b": True,
            "u": value,
            "neg": -7,
            "empty": "",
        }
        segment = TextSegment("The quick brown fox.", metadata)
        store.add(embedding(1, 0, 0, 0), segment, id="m")
        (entry,) = store.get(["m"])
        assert entry.embedded == segment
        assert entry.embedded is not None
        for key, expected in metadata.items():
            actual = entry.embedded.metadata[key]
            assert type(actual) is type(expected), f"{key}: {type(actual).__name__}"
            assert actual == expected

    @pytest.mark.parametrize("bad_id", ["", 42, None, b"bytes"])
    @if_fails("get must validate ids as add_all does: EmbeddingStoreError naming the bad id")
    def test_get_rejects_bad_ids(self, store: EmbeddingStore, bad_id: object) -> None:
        store.add(embedding(1, 0, 0, 0), id="a")
        with pytest.raises(EmbeddingStoreError, match=re.escape(repr(bad_id))):
            store.get(["a", bad_id])  # type: ignore[list-item]
        with pytest.raises(EmbeddingStoreError):
            store.get("a")  # one str is not a collection of ids

    # ------------------------------------------------------------------ bad input

    @if_fails(
        "a wrong-dimension vector must raise EmbeddingStoreError before any write of its batch"
    )
    def test_wrong_dimension_is_rejected_and_changes_nothing(
        self, store: EmbeddingStore, dimension: int
    ) -> None:
        ids = store.add_all([embedding(1, 0, 0, 0)], ids=["a"])
        error = EmbeddingStoreError if self.validates_dimension else Exception
        with pytest.raises(error):
            store.add(embedding(1, 0, 0))
        with pytest.raises(error):  # a batch with one bad vector: none added
            store.add_all([embedding(0, 1, 0, 0), embedding(1, 0)], ids=["a", "b"])
        if self.validates_dimension:
            found = entries(store, dimension)
            assert list(found) == ids
            np.testing.assert_allclose(found["a"].embedding.vector, [1, 0, 0, 0])

    @pytest.mark.parametrize("bad_id", ["", 42, None, b"bytes"])
    @if_fails("ids must be non-empty str, validated before any write of the batch")
    def test_invalid_ids_are_rejected_and_change_nothing(
        self, store: EmbeddingStore, dimension: int, bad_id: object
    ) -> None:
        store.add(embedding(1, 0, 0, 0), id="a")
        with pytest.raises(EmbeddingStoreError):
            store.add_all(
                [embedding(0, 1, 0, 0), embedding(0, 0, 1, 0)],
                ids=["a", bad_id],  # type: ignore[list-item]
            )
        assert list(entries(store, dimension)) == ["a"]

    @if_fails("duplicate ids in one add_all must raise EmbeddingStoreError before any write")
    def test_duplicate_ids_in_one_call_are_rejected(
        self, store: EmbeddingStore, dimension: int
    ) -> None:
        with pytest.raises(EmbeddingStoreError):
            store.add_all([embedding(1, 0, 0, 0), embedding(0, 1, 0, 0)], ids=["a", "a"])
        assert entries(store, dimension) == {}

    @if_fails("add_all with mismatched embeddings/segments/ids counts must raise before any write")
    def test_mismatched_counts_are_rejected_and_change_nothing(
        self, store: EmbeddingStore, dimension: int
    ) -> None:
        two = [embedding(1, 0, 0, 0), embedding(0, 1, 0, 0)]
        with pytest.raises(EmbeddingStoreError):
            store.add_all(two, ids=["a"])
        with pytest.raises(EmbeddingStoreError):
            store.add_all(two, [TextSegment("only one")])
        assert entries(store, dimension) == {}

    @if_fails(
        "a metadata key keeps one type per store: refuse a write of another type with "
        "MetadataTypeError before any write of its batch (core's stores.metadata_types: "
        "batch_kinds, then ask the backend which kinds it holds for those keys)"
    )
    def test_a_mistyped_metadata_write_is_refused(
        self, store: EmbeddingStore, dimension: int
    ) -> None:
        def segment(**metadata: object) -> TextSegment:
            return TextSegment("entry", metadata)

        store.add_all([embedding(1, 0, 0, 0)], [segment(tenant="a", n=1)], ids=["a"])
        with pytest.raises(MetadataTypeError, match=r"segment 1: .*'tenant'.*str.*int"):
            store.add_all(
                [embedding(0, 1, 0, 0), embedding(0, 0, 1, 0)],
                [segment(tenant="b"), segment(tenant=7)],
                ids=["b", "c"],
            )
        with pytest.raises(MetadataTypeError, match="'fresh'"):  # a batch against itself
            store.add_all(
                [embedding(0, 1, 0, 0), embedding(0, 0, 1, 0)],
                [segment(fresh="x"), segment(fresh=True)],
                ids=["d", "e"],
            )
        with pytest.raises(MetadataTypeError, match="'tenant'"):  # a UUID is not a str
            store.add(embedding(0, 0, 1, 0), segment(tenant=uuid.UUID(int=1)))
        store.add_all([embedding(0, 0, 0, 1)], [segment(tenant="f", n=2.5)], ids=["f"])  # numbers
        assert set(entries(store, dimension)) == {"a", "f"}
        request = EmbeddingSearchRequest(
            embedding(1, 0, 0, 0), _ALL, filter=metadata_key("tenant").is_equal_to("a")
        )
        assert [match.embedding_id for match in store.search(request).matches] == ["a"]
        store.remove_all()  # no entry holds the keys any more: any type may be written
        store.add_all([embedding(1, 0, 0, 0)], [segment(tenant=7)], ids=["g"])
        assert list(entries(store, dimension)) == ["g"]
