"""ConformanceSuite: the base class that keeps a standard suite from being weakened.

A standard suite is declared with ``class XSuite(ConformanceSuite, standard=True)``;
everything it defines (tests, helpers, fixtures) is then protected, except the fixtures
an integration must provide, listed in ``integration_fixtures``, and its capabilities. A
subclass may add tests and must provide those fixtures; redefining a protected name, or
marking the whole class skip/xfail, raises :class:`SuiteWeakenedError` when the class is
created (pytest reports it as a collection error). An autouse fixture also catches tests
replaced after class creation (``Suite.test_x = ...``) and tests marked xfail.

The one allowed deviation is a declared one: a standard suite lists the rules a backend
may be unable to honour as :class:`Capability` attributes (all on by default), and an
integration turns one off with ``<capability> = Deviation("why")``. The suite then runs
the capability's documented weaker test, and the pytest terminal summary lists the
deviation with its reason. Every standard test carries an :func:`if_fails` note, which is
added to its failure report.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import pytest

from ragloom.core.errors import InvalidArgumentTypeError

__all__ = [
    "Capability",
    "ConformanceSuite",
    "Deviation",
    "SuiteWeakenedError",
    "declared_deviations",
    "failure_note",
    "if_fails",
]

_WEAKENING_MARKS = frozenset({"skip", "skipif", "xfail"})
_NOTE = "ragloom_if_fails"
_F = TypeVar("_F", bound=Callable[..., Any])


class SuiteWeakenedError(InvalidArgumentTypeError):
    """A subclass of a conformance suite overrides, skips or xfails a standard test."""


@dataclass(frozen=True)
class Capability:
    """A rule a backend may declare it cannot honour; ``weaker`` is what is checked instead."""

    weaker: str

    def __bool__(self) -> bool:
        return True


@dataclass(frozen=True)
class Deviation:
    """A capability an integration declares off, with the reason it cannot honour it."""

    why: str

    def __post_init__(self) -> None:
        if not isinstance(self.why, str) or not self.why.strip():
            raise SuiteWeakenedError("a Deviation must say why the backend cannot honour the rule")

    def __bool__(self) -> bool:
        return False


def if_fails(note: str) -> Callable[[_F], _F]:
    """Attach the one-line "what to check when this fails" note to a standard test."""

    def mark(test: _F) -> _F:
        setattr(test, _NOTE, note)
        return test

    return mark


def failure_note(test: object) -> str | None:
    """The :func:`if_fails` note of a test function, if it has one."""
    note = getattr(test, _NOTE, None)
    return note if isinstance(note, str) else None


def declared_deviations(suite: type[ConformanceSuite]) -> dict[str, tuple[Capability, Deviation]]:
    """The capabilities ``suite`` declares off: name -> (capability, deviation)."""
    return {
        name: (capability, value)
        for name, capability in suite._ragloom_capabilities.items()
        if isinstance(value := getattr(suite, name), Deviation)
    }


class ConformanceSuite:
    """Base of the ragloom conformance suites (see the module docstring)."""

    #: Fixtures the integration provides (the only names a subclass may redefine).
    integration_fixtures: ClassVar[frozenset[str]] = frozenset()
    #: Protected name -> the object the standard suite defines under it.
    _ragloom_protected: ClassVar[dict[str, Any]] = {}
    #: Capability name -> its declaration in the standard suite.
    _ragloom_capabilities: ClassVar[dict[str, Capability]] = {}

    def __init_subclass__(cls, *, standard: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        protected: dict[str, Any] = {}
        capabilities: dict[str, Capability] = {}
        clashes: set[str] = set()
        for base in reversed(cls.__mro__[1:]):
            for name, value in getattr(base, "_ragloom_protected", {}).items():
                if protected.setdefault(name, value) is not value:
                    clashes.add(name)  # two suites define it: one would silently hide the other
            for name, capability in getattr(base, "_ragloom_capabilities", {}).items():
                if capabilities.setdefault(name, capability) is not capability:
                    clashes.add(name)
        if standard:
            _check_notes(cls)
            capabilities.update(
                (name, value) for name, value in vars(cls).items() if isinstance(value, Capability)
            )
            allowed = set(cls.integration_fixtures) | {"integration_fixtures"} | set(capabilities)
            protected.update(
                (name, value)
                for name, value in vars(cls).items()
                if not (name.startswith("__") and name.endswith("__")) and name not in allowed
            )
            cls._ragloom_protected = protected
            cls._ragloom_capabilities = capabilities
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
        for name, value in vars(cls).items():
            if name in capabilities:
                _check_declaration(cls, name, value)
            elif isinstance(value, Deviation):
                raise SuiteWeakenedError(
                    f"{cls.__qualname__}.{name} is not a capability of its suites; "
                    f"they have {', '.join(sorted(capabilities)) or 'none'}"
                )
        marks = _mark_names(vars(cls).get("pytestmark", []))
        if marks & _WEAKENING_MARKS:
            raise SuiteWeakenedError(
                f"{cls.__qualname__} marks a ragloom conformance suite "
                f"{'/'.join(sorted(marks & _WEAKENING_MARKS))}; every standard test must run"
            )
        cls._ragloom_protected = protected  # every suite combined here, for the guard
        cls._ragloom_capabilities = capabilities

    @pytest.fixture(autouse=True)
    def _ragloom_guard(self, request: pytest.FixtureRequest) -> None:
        """Fail a standard test that was replaced, marked xfail or undeclared-weakened."""
        from ragloom.testkit import plugin  # the plugin imports this module

        suite = type(self)
        plugin.track(request.config, suite)
        name = getattr(request.node, "originalname", request.node.name)
        original = suite._ragloom_protected.get(name)
        if original is None:
            return
        if getattr(suite, name) is not original:
            raise SuiteWeakenedError(f"standard test {name} was replaced; it must run as shipped")
        if request.node.get_closest_marker("xfail") is not None:
            raise SuiteWeakenedError(f"standard test {name} is marked xfail; it must pass")
        for capability in suite._ragloom_capabilities:
            _check_declaration(suite, capability, getattr(suite, capability))


def _check_notes(suite: type) -> None:
    missing = sorted(
        name
        for name, value in vars(suite).items()
        if name.startswith("test") and callable(value) and failure_note(value) is None
    )
    if missing:
        raise TypeError(f"standard tests of {suite.__qualname__} lack an @if_fails note: {missing}")


def _check_declaration(suite: type, name: str, value: object) -> None:
    if value is True or isinstance(value, Capability | Deviation):
        return
    raise SuiteWeakenedError(
        f"{suite.__qualname__}.{name} = {value!r}: a capability is turned off only with "
        f'`{name} = Deviation("why the backend cannot honour it")`'
    )


def _mark_names(marks: Any) -> set[str]:
    items: Iterable[Any] = marks if isinstance(marks, list | tuple) else [marks]
    return {getattr(mark, "name", "") for mark in items}
