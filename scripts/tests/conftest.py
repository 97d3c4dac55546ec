"""Fixtures shared by the scripts' tests."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="session")
def bench_module() -> Callable[[str], ModuleType]:
    """Loads ``scripts/bench/<name>.py`` as a module (its siblings importable, as when the
    script runs)."""

    def load(name: str) -> ModuleType:
        if str(BENCH) not in sys.path:
            sys.path.insert(0, str(BENCH))
        spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load
