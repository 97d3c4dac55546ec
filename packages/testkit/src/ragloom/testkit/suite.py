"""ConformanceSuite: the base class that keeps a standard suite from being weakened.

A standard suite is declared with ``class XSuite(ConformanceSuite, standard=True)``;
everything it defines (tests, helpers, fixtures) is then protected, except the fixtures
an integration must provide, listed in ``integration_fixtures``. A subclass may add
tests and must provide those fixtures; redefining a protected name, or marking the whole
class skip/xfail, raises :class:`SuiteWeakenedError` when the class is created (pytest
reports it as a collection error). An autouse fixture also catches tests replaced after
class creation (``Suite.test_x = ...``) and tests marked xfail.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

import pytest

__all__ = ["ConformanceSuite", "SuiteWeakenedError"]

_WEAKENING_MARKS = frozenset({"skip", "skipif", "xfail"})


class SuiteWeakenedError(TypeError):
    """A subclass of a conformance suite overrides, skips or xfails a standard test."""


class ConformanceSuite:
    """Base of the ragloom conformance suites (see the module docstring)."""

    #: Fixtures the integration provides (the only names a subclass may redefine).
    integration_fixtures: ClassVar[frozenset[str]] = frozenset()
    #: Protected name -> the object the standard suite defines under it.
    _ragloom_protected: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, *, standard: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        protected: dict[str, Any] = {}
        clashes: set[str] = set()
        for base in reversed(cls.__mro__[1:]):
            for name, value in getattr(base, "_ragloom_protected", {}).items():
                if protected.setdefault(name, value) is not value:
                    clashes.add(name)  # two suites define it: one would silently hide the other
        if standard:
            allowed = set(cls.integration_fixtures) | {"integration_fixtures"}
            protected.update(
                (name, value)
                for name, value in vars(cls).items()
                if not (name.startswith("__") and name.endswith("__")) and name not in allowed
            )
            cls._ragloom_protected = protected
            return
        if clashes:
            raise SuiteWeakenedError(
                f"{cls.__qualname__} combines suites that both define "
                f"{', '.join(sorted(clashes))}; one would hide the other"
            )
        overridden = sorted(
            name
            for name in vars(cls)
            if name in protected or name == "integration_fixtures" or name.startswith("_ragloom")
        )
        if overridden:
            fixtures = sorted(
                next(
                    vars(base)["integration_fixtures"]
                    for base in cls.__mro__[1:]
                    if "integration_fixtures" in vars(base)
                )
            )
            raise SuiteWeakenedError(
                f"{cls.__qualname__} redefines {', '.join(overridden)} of a ragloom conformance "
                f"suite; a suite may only be extended (add tests, provide the fixtures {fixtures})"
            )
        marks = _mark_names(vars(cls).get("pytestmark", []))
        if marks & _WEAKENING_MARKS:
            raise SuiteWeakenedError(
                f"{cls.__qualname__} marks a ragloom conformance suite "
                f"{'/'.join(sorted(marks & _WEAKENING_MARKS))}; every standard test must run"
            )
        cls._ragloom_protected = protected  # every suite combined here, for the guard

    @pytest.fixture(autouse=True)
    def _ragloom_guard(self, request: pytest.FixtureRequest) -> None:
        """Fail a standard test that was replaced or marked xfail after class creation."""
        name = getattr(request.node, "originalname", request.node.name)
        original = type(self)._ragloom_protected.get(name)
        if original is None:
            return
        if getattr(type(self), name) is not original:
            raise SuiteWeakenedError(f"standard test {name} was replaced; it must run as shipped")
        if request.node.get_closest_marker("xfail") is not None:
            raise SuiteWeakenedError(f"standard test {name} is marked xfail; it must pass")


def _mark_names(marks: Any) -> set[str]:
    items: Iterable[Any] = marks if isinstance(marks, list | tuple) else [marks]
    return {getattr(mark, "name", "") for mark in items}
