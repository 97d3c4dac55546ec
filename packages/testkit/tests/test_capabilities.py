"""Declared capabilities: a weak store passes the weaker tests only when it declares them."""

from __future__ import annotations

import textwrap

import pytest

# Loaded before pytester's in-process runs, which unload modules they import (numpy can't
# be loaded twice in one process).
import ragloom.testkit  # noqa: F401

pytest_plugins = ["pytester"]

# An in-memory store that cannot honour four rules: it returns ties newest first, rejects
# contains_string, silently skips rows whose values mismatch the filter's type, and has no
# removal by filter.
_WEAK_STORE = """
import pytest
from ragloom.core.errors import EmbeddingStoreError, InvalidFilterError
from ragloom.core.filters import Filter
from ragloom.core.stores import InMemoryEmbeddingStore
from ragloom.core.stores.base import EmbeddingSearchRequest, EmbeddingSearchResult
from ragloom.testkit import Deviation, EmbeddingStoreFilterSuite, EmbeddingStoreSuite


def _test(condition, match):
    try:
        return condition.test(match.embedded.metadata if match.embedded else {})
    except InvalidFilterError:
        return False


class WeakStore(InMemoryEmbeddingStore):
    def search(self, request):
        condition = request.filter
        if condition is not None and " contains " in str(condition):
            raise InvalidFilterError("contains_string is not supported")
        everything = EmbeddingSearchRequest(
            request.query_embedding, max(len(self), 1), request.min_score
        )
        matches = super().search(everything).matches
        matches = [m for m in matches if condition is None or _test(condition, m)]
        newest_first = sorted(reversed(matches), key=lambda m: -m.score)
        return EmbeddingSearchResult(newest_first[: request.max_results])

    def remove_all(self, ids=None, *, filter=None):
        if filter is not None or isinstance(ids, Filter):
            raise EmbeddingStoreError("removal by filter is not supported")
        super().remove_all(ids)
"""


def _suite(declarations: str) -> str:
    return _WEAK_STORE + textwrap.dedent(
        f"""
        class TestWeakStore(EmbeddingStoreSuite, EmbeddingStoreFilterSuite):
            {declarations}

            @pytest.fixture
            def store(self):
                return WeakStore()
        """
    )


_DECLARED = """
            preserves_insertion_order_on_ties = Deviation("ties come back newest first")
            supports_contains_string = Deviation("no substring match in this backend")
            raises_on_filter_type_mismatch = Deviation("the backend skips mismatching rows")
            removes_by_filter = Deviation("the backend deletes by id only")
"""


def test_a_store_declaring_its_deviations_passes_the_weaker_tests(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(_suite(_DECLARED))
    result = pytester.runpytest("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=116)
    result.stdout.fnmatch_lines(
        [
            "*= ragloom conformance: declared deviations =*",
            "*TestWeakStore: preserves_insertion_order_on_ties off (ties come back newest first)"
            "; checked instead: equally scored matches are the right set*",
            "*TestWeakStore: removes_by_filter off (the backend deletes by id only)*",
        ]
    )


def test_the_same_store_without_declarations_fails_the_strict_tests(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(_suite("pass"))
    result = pytester.runpytest("-q", "-p", "no:cacheprovider", "-rf")
    result.assert_outcomes(passed=99, failed=17)
    failed = {line.split("::")[2].split(" ")[0] for line in result.outlines if "FAILED" in line}
    assert {
        "test_ties_keep_insertion_order",
        "test_filter_truth_table[contains_string-str]",
        "test_nested_filters[named-or-not]",
        "test_type_mismatch_raises[int-vs-str]",
        "test_remove_all_by_filter",
        "test_remove_all_takes_a_positional_filter",
        "test_remove_all_by_filter_semantics[or]",
    } <= failed
    assert "declared deviations" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*- ragloom: what to check -*",
            "equal scores must come back in insertion order: order by score, then an insertion*",
        ]
    )


@pytest.mark.parametrize(
    "declaration",
    [
        'supports_contains_string = Deviation("")',
        "supports_contains_string = False",
    ],
)
def test_a_deviation_without_a_reason_fails_collection(
    pytester: pytest.Pytester, declaration: str
) -> None:
    pytester.makepyfile(_suite(declaration))
    result = pytester.runpytest("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*SuiteWeakenedError*"])
