"""EmbeddingStoreFilterSuite: metadata filtering semantics, identical on every store.

A truth table covers every filter operation x {matching, non-matching, missing key} x
{str, int, float, bool, UUID}, then mixed int/float, nested and/or/not, removal by
filter and type mismatches (which must raise ``InvalidFilterError``, never be silently
false). Expected results are written out here by hand; each one is also checked against
``Filter.test``, the reference semantics in core. Subclass with one ``store`` fixture, as
for :class:`~ragloom.testkit.EmbeddingStoreSuite`; the capabilities below may be declared
off with a :class:`~ragloom.testkit.Deviation`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding
from ragloom.core.errors import EmbeddingStoreError, InvalidFilterError
from ragloom.core.filters import Filter, and_, metadata_key, not_, or_
from ragloom.core.stores.base import EmbeddingSearchRequest, EmbeddingStore
from ragloom.testkit.embedding_store import (
    DIMENSION,
    EmbeddingStoreSuiteBase,
    assert_top_matches,
    entries,
    random_vectors,
    relevance,
)
from ragloom.testkit.suite import Capability, if_fails

__all__ = ["EmbeddingStoreFilterSuite", "FilterCase"]

_KEY = "k"
_MISSING: Mapping[str, Any] = {"other": "x"}  # the filtered key is absent
_U1 = uuid.UUID("11111111-1111-4111-8111-111111111111")
_U2 = uuid.UUID("22222222-2222-4222-8222-222222222222")
_U3 = uuid.UUID("33333333-3333-4333-8333-333333333333")


@dataclass(frozen=True)
class FilterCase:
    """A filter, the metadata of the entries to store, and which of them must match."""

    name: str
    filter: Filter
    rows: Sequence[tuple[Mapping[str, Any], bool]]


def _row(value: Any) -> Mapping[str, Any]:
    return {_KEY: value}


def _truth_table() -> list[FilterCase]:
    """Every operation x type x {match, non-match, missing}, including range boundaries."""
    # (low, middle, high) per type; bool and UUID have no order, so no high value.
    values: dict[str, tuple[Any, Any, Any]] = {
        "str": ("apple", "banana", "cherry"),
        "int": (-1, 2, 30),
        "float": (1.5, 2.25, 3.75),
        "bool": (False, True, None),
        "uuid": (_U1, _U2, _U3),
    }
    cases: list[FilterCase] = []
    key = metadata_key(_KEY)
    for kind, (low, mid, high) in values.items():
        ordered = kind in ("str", "int", "float")
        members = [mid, high] if kind in ("str", "int", "float", "uuid") else [mid]
        table: list[tuple[str, Filter, list[tuple[Any, bool]], bool]] = [
            ("is_equal_to", key.is_equal_to(mid), [(mid, True), (low, False)], False),
            ("is_not_equal_to", key.is_not_equal_to(mid), [(low, True), (mid, False)], True),
            ("is_in", key.is_in(members), [(mid, True), (low, False)], False),
            ("is_not_in", key.is_not_in(members), [(low, True), (mid, False)], True),
        ]
        if ordered:
            table += [
                (
                    "is_greater_than",
                    key.is_greater_than(mid),
                    [(high, True), (mid, False), (low, False)],
                    False,
                ),
                (
                    "is_greater_than_or_equal_to",
                    key.is_greater_than_or_equal_to(mid),
                    [(high, True), (mid, True), (low, False)],
                    False,
                ),
                (
                    "is_less_than",
                    key.is_less_than(mid),
                    [(low, True), (mid, False), (high, False)],
                    False,
                ),
                (
                    "is_less_than_or_equal_to",
                    key.is_less_than_or_equal_to(mid),
                    [(low, True), (mid, True), (high, False)],
                    False,
                ),
            ]
        if kind == "str":
            table.append(
                (
                    "contains_string",
                    key.contains_string("nan"),
                    [("banana", True), ("BANANA", False), ("apple", False)],
                    False,
                )
            )
        for operation, condition, stored, missing_matches in table:
            rows = [(_row(value), expected) for value, expected in stored]
            rows.append((_MISSING, missing_matches))
            cases.append(FilterCase(f"{operation}-{kind}", condition, rows))
    return cases


def _mixed_number_cases() -> list[FilterCase]:
    """int and float compare by numeric value."""
    key = metadata_key(_KEY)
    return [
        FilterCase("int-equals-float", key.is_equal_to(2.0), [(_row(2), True), (_row(3), False)]),
        FilterCase("float-equals-int", key.is_equal_to(2), [(_row(2.0), True), (_row(2.5), False)]),
        FilterCase(
            "int-greater-than-float", key.is_greater_than(1.5), [(_row(2), True), (_row(1), False)]
        ),
        FilterCase(
            "float-less-than-int", key.is_less_than(3), [(_row(2.5), True), (_row(3.0), False)]
        ),
        FilterCase(
            "in-mixed-numbers",
            key.is_in([3.0, 4.5]),
            [(_row(3), True), (_row(4.5), True), (_row(2), False), (_MISSING, False)],
        ),
        FilterCase(
            "not-in-mixed-numbers",
            key.is_not_in([2]),
            [(_row(2.0), False), (_row(5), True), (_MISSING, True)],
        ),
        FilterCase(
            "mixed-column",
            key.is_greater_than_or_equal_to(2),
            [
                (_row(1), False),
                (_row(2), True),
                (_row(1.5), False),
                (_row(2.0), True),
                (_row(2.5), True),
                (_MISSING, False),
            ],
        ),
        FilterCase(
            "uuid-matches-its-canonical-str",
            key.is_equal_to(_U2),
            [(_row(str(_U2)), True), (_row(str(_U1)), False)],
        ),
    ]


# Rows for the nested cases: lang (str), year (int), draft (bool), some keys missing.
_DOCS: list[Mapping[str, Any]] = [
    {"lang": "en", "year": 2020, "draft": False},
    {"lang": "de", "year": 2021, "draft": True},
    {"lang": "en", "year": 2022},
    {"lang": "fr", "year": 2019, "draft": False},
    {"year": 2023},
    {},
]


def _nested_cases() -> list[tuple[str, Filter, list[int]]]:
    """Combinations of and/or/not over ``_DOCS`` with the indices that match."""
    lang, year, draft = metadata_key("lang"), metadata_key("year"), metadata_key("draft")
    return [
        ("and", lang.is_equal_to("en") & year.is_greater_than_or_equal_to(2021), [2]),
        ("or", lang.is_equal_to("de") | year.is_less_than(2020), [1, 3]),
        ("not-with-missing-key", ~lang.is_equal_to("en"), [1, 3, 4, 5]),
        ("not-and", ~draft.is_equal_to(True) & year.is_greater_than(2019), [0, 2, 4]),
        (
            "and-not-or",
            lang.is_in(["en", "de"]) & ~(year.is_equal_to(2020) | draft.is_equal_to(True)),
            [2],
        ),
        (
            "named-and",
            and_(lang.is_not_equal_to("en"), year.is_less_than_or_equal_to(2021)),
            [1, 3],
        ),
        (
            "named-or-not",
            or_(lang.contains_string("e"), not_(year.is_less_than_or_equal_to(2022))),
            [0, 1, 2, 4, 5],  # not(missing <= 2022) is not(false): true
        ),
        ("double-not", ~~year.is_greater_than(2020), [1, 2, 4]),
        (
            "three-level",
            (lang.is_equal_to("en") | lang.is_equal_to("fr"))
            & ~(draft.is_equal_to(False) & year.is_less_than(2020)),
            [0, 2],
        ),
    ]


def _mismatch_cases() -> list[tuple[str, Mapping[str, Any], Filter]]:
    """Stored values and filters of incompatible types: applying must raise."""
    key = metadata_key(_KEY)
    return [
        ("str-vs-int", _row("abc"), key.is_greater_than(2)),
        ("int-vs-str", _row(5), key.is_equal_to("5")),
        ("bool-vs-int", _row(True), key.is_equal_to(1)),
        ("int-vs-bool", _row(1), key.is_equal_to(True)),
        ("int-contains", _row(5), key.contains_string("5")),
        ("uuid-vs-str", _row(_U1), key.is_equal_to(str(_U1))),
        ("float-in-str-values", _row(2.5), key.is_in(["2.5"])),
        ("str-not-in-numbers", _row("x"), key.is_not_in([1, 2])),
    ]


_CASES = _truth_table() + _mixed_number_cases()
# Cases (truth-table, nested and mismatch) whose filter uses contains_string.
_CONTAINS_STRING_CASES = frozenset({"contains_string-str", "named-or-not", "int-contains"})


class EmbeddingStoreFilterSuite(EmbeddingStoreSuiteBase, standard=True):
    """Metadata filters in search and removal, on the integration's ``store``."""

    supports_contains_string = Capability(
        "a filter using contains_string raises InvalidFilterError in search and removal "
        "and changes nothing (never returns wrong matches)"
    )
    raises_on_filter_type_mismatch = Capability(
        "an entry whose value has the wrong type for the filter is simply not matched: "
        "neither found nor removed"
    )

    @staticmethod
    def _fill(store: EmbeddingStore, rows: Sequence[Mapping[str, Any]]) -> list[str]:
        vectors = random_vectors(len(rows), DIMENSION, seed=len(rows))
        segments = [TextSegment(f"entry {i}", dict(row)) for i, row in enumerate(rows)]
        return store.add_all([Embedding(v) for v in vectors], segments)

    @staticmethod
    def _matching(store: EmbeddingStore, condition: Filter) -> set[str]:
        request = EmbeddingSearchRequest(
            Embedding(np.ones(DIMENSION)), max_results=1000, filter=condition
        )
        return {match.embedding_id for match in store.search(request).matches}

    def _assert_rejected(self, store: EmbeddingStore, condition: Filter, ids: list[str]) -> None:
        """Searching and removing with ``condition`` raise InvalidFilterError, change nothing."""
        with pytest.raises(InvalidFilterError):
            self._matching(store, condition)
        removal_errors = (
            (InvalidFilterError,)
            if self.removes_by_filter
            else (
                InvalidFilterError,
                EmbeddingStoreError,
            )
        )
        with pytest.raises(removal_errors):
            store.remove_all(filter=condition)
        assert set(entries(store, DIMENSION)) == set(ids)

    def _unsupported(self, case_name: str) -> bool:
        """Whether the case's filter uses a feature the store declares off."""
        return case_name in _CONTAINS_STRING_CASES and not self.supports_contains_string

    @pytest.mark.parametrize("case", _CASES, ids=[case.name for case in _CASES])
    @if_fails(
        "compare the case with Filter.test: missing keys, int vs float, UUID as str, range bounds"
    )
    def test_filter_truth_table(self, store: EmbeddingStore, case: FilterCase) -> None:
        for metadata, expected in case.rows:
            assert case.filter.test(metadata) is expected, f"reference semantics of {metadata}"
        ids = self._fill(store, [metadata for metadata, _ in case.rows])
        if self._unsupported(case.name):
            self._assert_rejected(store, case.filter, ids)
            return
        expected_ids = {i for i, (_, match) in zip(ids, case.rows, strict=True) if match}
        assert self._matching(store, case.filter) == expected_ids

    @pytest.mark.parametrize(
        ("name", "condition", "expected"), _nested_cases(), ids=[c[0] for c in _nested_cases()]
    )
    @if_fails(
        "check the translation of and/or/not, especially not() over rows where the key is missing"
    )
    def test_nested_filters(
        self, store: EmbeddingStore, name: str, condition: Filter, expected: list[int]
    ) -> None:
        assert [i for i, doc in enumerate(_DOCS) if condition.test(doc)] == expected
        ids = self._fill(store, _DOCS)
        if self._unsupported(name):
            self._assert_rejected(store, condition, ids)
            return
        assert self._matching(store, condition) == {ids[i] for i in expected}

    @if_fails("filter in the query itself, not after LIMIT/top_k (post-filtering loses matches)")
    def test_filter_applies_before_max_results_and_min_score(self, store: EmbeddingStore) -> None:
        vectors = random_vectors(40, DIMENSION, seed=11)
        segments = [TextSegment(f"e{i}", {"tenant": "ab"[i % 2]}) for i in range(40)]
        ids = store.add_all([Embedding(v) for v in vectors], segments)
        query = random_vectors(1, DIMENSION, seed=12)[0]
        tenant_a = list(range(0, 40, 2))
        for max_results, min_score in [(1, 0.0), (5, 0.0), (20, 0.6)]:
            request = EmbeddingSearchRequest(
                Embedding(query),
                max_results=max_results,
                min_score=min_score,
                filter=metadata_key("tenant").is_equal_to("a"),
            )
            assert_top_matches(
                store.search(request).matches,
                [ids[i] for i in tenant_a],
                relevance(vectors[tenant_a], query),
                max_results,
                min_score,
            )

    @if_fails("a filter matching no entry (or an absent key) must return no matches, not fail")
    def test_filter_matching_nothing_finds_nothing(self, store: EmbeddingStore) -> None:
        self._fill(store, _DOCS)
        assert self._matching(store, metadata_key("lang").is_equal_to("xx")) == set()
        assert self._matching(store, metadata_key("absent").is_equal_to(1)) == set()

    @if_fails("entries without a segment have no metadata: no key matches, is_not_equal_to does")
    def test_filter_on_entries_without_segments(self, store: EmbeddingStore) -> None:
        ids = store.add_all([Embedding(v) for v in random_vectors(3, DIMENSION, seed=13)])
        assert self._matching(store, metadata_key("k").is_equal_to(1)) == set()
        assert self._matching(store, metadata_key("k").is_not_equal_to(1)) == set(ids)

    @pytest.mark.parametrize(
        ("condition", "removed"),
        [
            (
                metadata_key("lang").is_equal_to("en") | metadata_key("draft").is_equal_to(True),
                {0, 1, 2},
            ),
            (metadata_key("lang").is_not_equal_to("en"), {1, 3, 4, 5}),
            (metadata_key("year").is_in([2019, 2023]), {3, 4}),
            (metadata_key("year").is_greater_than(3000), set()),
        ],
        ids=["or", "missing-key-matches-not-equal", "in", "nothing"],
    )
    @if_fails("remove_all(filter=...) must use the same filter translation as search")
    def test_remove_all_by_filter_semantics(
        self, store: EmbeddingStore, condition: Filter, removed: set[int]
    ) -> None:
        ids = self._fill(store, _DOCS)
        self._remove_by_filter(store, condition)
        gone = removed if self.removes_by_filter else set()
        remaining = {ids[i] for i in range(len(_DOCS)) if i not in gone}
        assert set(entries(store, DIMENSION)) == remaining

    @pytest.mark.parametrize(
        ("name", "stored", "condition"), _mismatch_cases(), ids=[c[0] for c in _mismatch_cases()]
    )
    @if_fails("stored values of the wrong type for the filter must raise InvalidFilterError")
    def test_type_mismatch_raises(
        self, store: EmbeddingStore, name: str, stored: Mapping[str, Any], condition: Filter
    ) -> None:
        with pytest.raises(InvalidFilterError):
            condition.test(stored)
        ids = self._fill(store, [stored, {"k2": 1}])
        if self.raises_on_filter_type_mismatch or self._unsupported(name):
            self._assert_rejected(store, condition, ids)
            return
        assert ids[0] not in self._matching(store, condition)
        self._remove_by_filter(store, condition)
        assert ids[0] in entries(store, DIMENSION)

    @if_fails(
        "removed entries must not be type-checked or matched (clear their metadata on removal)"
    )
    def test_removed_entries_take_no_part_in_type_checks(self, store: EmbeddingStore) -> None:
        store.remove(self._fill(store, [{"k": "x"}])[0])  # gone: "k" may hold ints now
        ids = self._fill(store, [{"k": i} for i in range(9)])
        assert self._matching(store, metadata_key("k").is_greater_than(0)) == set(ids[1:])

    @pytest.mark.parametrize("value", [True, _U1])
    @if_fails("this is core's Filter builder, not your store: check the ragloom-core version")
    def test_ordering_on_bool_or_uuid_is_rejected_when_built(self, value: object) -> None:
        with pytest.raises(InvalidFilterError):
            metadata_key(_KEY).is_greater_than(value)  # type: ignore[arg-type]

    @if_fails("this is core's Filter builder, not your store: check the ragloom-core version")
    def test_in_needs_values_of_one_type(self) -> None:
        with pytest.raises(InvalidFilterError):
            metadata_key(_KEY).is_in([])
        with pytest.raises(InvalidFilterError):
            metadata_key(_KEY).is_in(["a", 1])
