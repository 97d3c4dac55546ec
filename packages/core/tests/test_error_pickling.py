"""Every error core and the testkit define survives a pickle round trip with its type,
message and attributes (integration-tests/test_error_pickling.py walks every package)."""

from __future__ import annotations

import pickle

import pytest

import ragloom.core
import ragloom.testkit
from ragloom.core.errors import RagloomError, ScoringTimeoutError
from ragloom.core.kit.http import HttpErrorKind
from ragloom.testkit.error_pickling import (
    check_error_pickles,
    error_classes,
    import_modules,
    sample_error,
)

import_modules(ragloom.core)
import_modules(ragloom.testkit)
CLASSES = error_classes("ragloom.core") + error_classes("ragloom.testkit")


def test_the_walk_sees_the_errors_outside_errors_py() -> None:
    names = {f"{cls.__module__}.{cls.__qualname__}" for cls in CLASSES}
    assert {
        "ragloom.core.errors.RagloomError",
        "ragloom.core.errors.ScoringTimeoutError",
        "ragloom.core.kit.http.HttpCallError",
        "ragloom.core.web_search.WebSearchError",
        "ragloom.testkit.suite.SuiteWeakenedError",
    } <= names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__qualname__)
def test_error_survives_pickling(cls: type[RagloomError]) -> None:
    check_error_pickles(sample_error(cls))


def test_samples_set_the_keyword_attributes() -> None:
    """The samples are not the defaults, so a lost attribute would show."""
    error = sample_error(ScoringTimeoutError)
    assert isinstance(error, ScoringTimeoutError)
    assert (error.model, error.url, error.status_code) == ("sample model", "sample url", 6)


class _CountedError(RagloomError):
    """Required keyword-only arguments, as OpenAiPromptTooLongError has."""

    def __init__(self, message: str, *, count: int, kind: HttpErrorKind) -> None:
        super().__init__(message)
        self.count = count
        self.kind = kind


def test_a_subclass_with_required_keywords_pickles_through_the_base() -> None:
    """RagloomError's __reduce__ does not call __init__: Exception's would call
    cls(*args) and fail on the missing keywords."""
    error = _CountedError("3 too many", count=3, kind=HttpErrorKind.TIMEOUT)
    check_error_pickles(error)
    restored = pickle.loads(pickle.dumps(error, protocol=0))
    assert (restored.count, restored.kind) == (3, HttpErrorKind.TIMEOUT)


def test_an_oserror_subclass_keeps_its_message() -> None:
    """OSError.__new__ leaves args to __init__ in a subclass with its own __init__."""
    error = ScoringTimeoutError("no answer in 5 s", model="m", url="http://x", status_code=None)
    error.add_note("while re-ranking")
    restored = pickle.loads(pickle.dumps(error))
    assert str(restored) == "no answer in 5 s"
    assert (restored.model, restored.url, restored.__notes__) == (
        "m",
        "http://x",
        ["while re-ranking"],
    )


class _KeywordOnlyError(Exception):
    """Without RagloomError's reduce: Exception unpickles it as cls(*args), and fails."""

    def __init__(self, message: str, *, count: int) -> None:
        super().__init__(message)
        self.count = count


def test_the_check_fails_on_an_error_that_does_not_unpickle() -> None:
    with pytest.raises(AssertionError, match="does not survive pickling"):
        check_error_pickles(_KeywordOnlyError("boom", count=3))


class _ForgetfulError(RagloomError):
    """Drops an attribute on unpickling, as a hand-written __reduce__ might."""

    def __init__(self, message: str, *, count: int = 0) -> None:
        super().__init__(message)
        self.count = count

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), self.args)


def test_the_check_fails_on_a_lost_attribute() -> None:
    with pytest.raises(AssertionError, match="attributes"):
        check_error_pickles(_ForgetfulError("boom", count=3))
