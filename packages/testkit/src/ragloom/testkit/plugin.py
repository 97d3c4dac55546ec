"""pytest plugin of the conformance suites: failure notes and the list of declared deviations.

It is loaded through the ``pytest11`` entry point, or registered by the suites' guard
fixture on the first standard test that runs if the entry point is not installed.
"""

from __future__ import annotations

import sys
from collections.abc import Generator

import pytest

from ragloom.testkit.suite import ConformanceSuite, declared_deviations, failure_note

__all__ = ["track"]

_SUITES = pytest.StashKey[set[type[ConformanceSuite]]]()
_PLUGIN = sys.modules[__name__]


def track(config: pytest.Config, suite: type[ConformanceSuite]) -> None:
    """Make sure this plugin is active and remember that ``suite`` ran."""
    if not config.pluginmanager.is_registered(_PLUGIN):
        config.pluginmanager.register(_PLUGIN, "ragloom-testkit")
    config.stash.setdefault(_SUITES, set()).add(suite)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Add the test's "what to check" note to its failure report."""
    report = yield
    note = failure_note(getattr(item, "function", None))
    if note is not None and report.failed and call.when == "call":
        report.sections.append(("ragloom: what to check", note))
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """List every capability the suites that ran declare off, with the reason given."""
    suites = terminalreporter.config.stash.get(_SUITES, set())
    lines = [
        f"{suite.__module__}::{suite.__qualname__}: {name} off ({deviation.why}); "
        f"checked instead: {capability.weaker}"
        for suite in sorted(suites, key=lambda s: (s.__module__, s.__qualname__))
        for name, (capability, deviation) in sorted(declared_deviations(suite).items())
    ]
    if lines:
        terminalreporter.write_sep("=", "ragloom conformance: declared deviations")
        for line in lines:
            terminalreporter.line(line)
