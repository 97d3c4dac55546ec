"""A conformance suite can be extended but not weakened."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from ragloom.testkit import (
    ConformanceSuite,
    EmbeddingStoreFilterSuite,
    EmbeddingStoreSuite,
    SuiteWeakenedError,
)

pytest_plugins = ["pytester"]


class _Suite(ConformanceSuite, standard=True):
    integration_fixtures = frozenset({"thing"})

    @pytest.fixture
    def thing(self) -> int:
        raise NotImplementedError

    def _helper(self) -> int:
        return 1

    def test_standard(self, thing: int) -> None:
        assert thing == self._helper()


def test_overriding_a_standard_test_is_an_error() -> None:
    with pytest.raises(SuiteWeakenedError, match="test_standard"):

        class _Weak(_Suite):
            def test_standard(self, thing: int) -> None:
                pass


def test_overriding_a_real_suite_test_is_an_error() -> None:
    with pytest.raises(SuiteWeakenedError, match="test_remove_by_id"):

        class _Weak(EmbeddingStoreSuite):
            def test_remove_by_id(self, store: Any, dimension: int) -> None:
                pass


def test_disabling_a_test_by_assignment_is_an_error() -> None:
    with pytest.raises(SuiteWeakenedError, match="test_standard"):

        class _Weak(_Suite):
            test_standard = None  # type: ignore[assignment]


@pytest.mark.parametrize("name", ["_helper", "_ragloom_guard", "integration_fixtures"])
def test_overriding_helpers_fixtures_or_the_guard_is_an_error(name: str) -> None:
    with pytest.raises(SuiteWeakenedError, match=name):
        type("_Weak", (_Suite,), {name: lambda self: 2})


def test_overriding_a_suite_fixture_other_than_the_integration_one_is_an_error() -> None:
    with pytest.raises(SuiteWeakenedError, match="dimension"):

        class _Weak(EmbeddingStoreSuite):
            @pytest.fixture
            def dimension(self) -> int:
                return 2


@pytest.mark.parametrize("mark", [pytest.mark.skip, pytest.mark.xfail, pytest.mark.skipif(True)])
def test_skipping_or_xfailing_the_whole_suite_is_an_error(mark: pytest.MarkDecorator) -> None:
    with pytest.raises(SuiteWeakenedError, match="must run"):
        type("_Weak", (_Suite,), {"pytestmark": [mark]})


def test_combining_suites_that_define_the_same_name_is_an_error() -> None:
    class _Other(ConformanceSuite, standard=True):
        def test_standard(self) -> None:
            pass

    with pytest.raises(SuiteWeakenedError, match="both define test_standard"):

        class _Both(_Suite, _Other):  # type: ignore[misc]
            pass


def test_the_store_suites_combine_without_hiding_each_other() -> None:
    class _Both(EmbeddingStoreSuite, EmbeddingStoreFilterSuite):
        pass

    suite_tests = {n for n in vars(EmbeddingStoreSuite) if n.startswith("test")}
    filter_tests = {n for n in vars(EmbeddingStoreFilterSuite) if n.startswith("test")}
    assert suite_tests.isdisjoint(filter_tests)
    assert suite_tests | filter_tests <= set(_Both._ragloom_protected)


def test_providing_the_fixture_and_adding_tests_is_allowed() -> None:
    class _Integration(_Suite):
        @pytest.fixture
        def thing(self) -> int:
            return 1

        def test_extra(self) -> None:
            pass

    assert _Integration.test_standard is _Suite.test_standard


def test_an_overriding_subclass_fails_collection(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        textwrap.dedent(
            """
            import pytest
            from ragloom.core.stores import InMemoryEmbeddingStore
            from ragloom.testkit import EmbeddingStoreSuite

            class TestWeak(EmbeddingStoreSuite):
                @pytest.fixture
                def store(self):
                    return InMemoryEmbeddingStore()

                def test_min_score_is_inclusive(self, store):
                    pass
            """
        )
    )
    result = pytester.runpytest("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*SuiteWeakenedError*test_min_score_is_inclusive*"])


def test_a_test_replaced_after_class_creation_fails(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        textwrap.dedent(
            """
            import pytest
            from ragloom.core.stores import InMemoryEmbeddingStore
            from ragloom.testkit import EmbeddingStoreSuite

            class TestSneaky(EmbeddingStoreSuite):
                @pytest.fixture
                def store(self):
                    return InMemoryEmbeddingStore()

            TestSneaky.test_min_score_is_inclusive = lambda self, store: None
            """
        )
    )
    result = pytester.runpytest("-q", "-p", "no:cacheprovider", "-k", "min_score_is_inclusive")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*SuiteWeakenedError*was replaced*"])


def test_a_suite_without_the_fixture_explains_what_to_provide(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        textwrap.dedent(
            """
            from ragloom.testkit import EmbeddingStoreSuite

            class TestForgetful(EmbeddingStoreSuite):
                pass
            """
        )
    )
    result = pytester.runpytest("-q", "-p", "no:cacheprovider", "-k", "test_remove_by_id")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*must define a `store` fixture*"])
