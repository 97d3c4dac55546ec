"""A conformance suite can be extended but not weakened."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from ragloom import testkit
from ragloom.testkit import (
    ConformanceSuite,
    Deviation,
    EmbeddingStoreFilterSuite,
    EmbeddingStoreSuite,
    SuiteWeakenedError,
    if_fails,
)
from ragloom.testkit.suite import failure_note

pytest_plugins = ["pytester"]


class _Suite(ConformanceSuite, standard=True):
    integration_fixtures = frozenset({"thing"})

    @pytest.fixture
    def thing(self) -> int:
        raise NotImplementedError

    def _helper(self) -> int:
        return 1

    @if_fails("thing must be 1")
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
        @if_fails("nothing to check")
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


def test_a_standard_test_without_a_failure_note_is_an_error() -> None:
    with pytest.raises(TypeError, match="lack an @if_fails note.*test_bare"):

        class _Unnoted(ConformanceSuite, standard=True):
            def test_bare(self) -> None:
                pass


def test_every_shipped_standard_test_has_a_failure_note() -> None:
    shipped = [getattr(testkit, name) for name in testkit.__all__ if name.endswith("Suite")]
    tests = [vars(s)[n] for s in shipped for n in vars(s) if n.startswith("test")]
    assert len(tests) > 50
    assert all(failure_note(test) for test in tests)


@pytest.mark.parametrize("value", [False, None, 0, "no contains in this backend"])
def test_a_capability_is_turned_off_only_by_a_deviation(value: object) -> None:
    with pytest.raises(SuiteWeakenedError, match="supports_contains_string.*Deviation"):
        type("_Weak", (EmbeddingStoreFilterSuite,), {"supports_contains_string": value})


@pytest.mark.parametrize("why", ["", "   "])
def test_a_deviation_without_a_reason_is_an_error(why: str) -> None:
    with pytest.raises(SuiteWeakenedError, match="must say why"):
        Deviation(why)


def test_a_deviation_of_a_capability_the_suites_lack_is_an_error() -> None:
    with pytest.raises(SuiteWeakenedError, match="not a capability.*preserves_insertion_order"):

        class _Typo(EmbeddingStoreSuite):
            supports_contains_string = Deviation("the filter suite is not part of this class")


def test_capabilities_may_be_declared_on_and_off() -> None:
    from ragloom.testkit import declared_deviations

    class _Declared(EmbeddingStoreSuite, EmbeddingStoreFilterSuite):
        supports_contains_string = True
        preserves_insertion_order_on_ties = Deviation("ANN index")

    deviations = declared_deviations(_Declared)
    assert list(deviations) == ["preserves_insertion_order_on_ties"]
    capability, deviation = deviations["preserves_insertion_order_on_ties"]
    assert deviation.why == "ANN index"
    assert "right set" in capability.weaker
    assert declared_deviations(EmbeddingStoreSuite) == {}


def test_a_capability_switched_off_after_class_creation_fails(pytester: pytest.Pytester) -> None:
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

            TestSneaky.preserves_insertion_order_on_ties = False
            """
        )
    )
    result = pytester.runpytest("-q", "-p", "no:cacheprovider", "-k", "test_ties_keep")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*SuiteWeakenedError*preserves_insertion_order_on_ties*"])
