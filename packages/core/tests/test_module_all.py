"""Every module declares its public names: each core module and each public module of the
installed packages has an ``__all__``, and every name in it resolves."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

PACKAGES = Path(__file__).resolve().parents[2]

# Imports each module named on the command line in one fresh interpreter (the integrations'
# dependencies stay out of the test process) and prints a line for each fault.
_CHECK = """
import importlib, sys
for name in sys.argv[1:]:
    module = importlib.import_module(name)
    names = getattr(module, "__all__", None)
    if not isinstance(names, list | tuple):
        print(f"{name}: no __all__")
        continue
    for missing in [n for n in names if not hasattr(module, n)]:
        print(f"{name}: __all__ names {missing!r}, which does not resolve")
"""


def _modules() -> list[str]:
    """Every module of core (but ``__main__``) and every public module (no ``_`` in its
    dotted name) of the other installed packages."""
    names = []
    for src in sorted(PACKAGES.glob("*/src")):
        core = src.parent.name == "core"
        if not core and not _installed(src):
            continue
        for path in sorted(src.rglob("*.py")):
            parts = list(path.relative_to(src).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            if parts[-1] == "__main__" or (
                not core and any(part.startswith("_") for part in parts)
            ):
                continue
            names.append(".".join(parts))
    return names


def _installed(src: Path) -> bool:
    """Whether the package under ``src`` (its shallowest one with an ``__init__``) can be
    imported here; with core and the testkit alone, even its parent namespace is absent."""
    shallowest = min(src.rglob("__init__.py"), key=lambda path: len(path.parts))
    try:
        return (
            importlib.util.find_spec(".".join(shallowest.parent.relative_to(src).parts)) is not None
        )
    except ModuleNotFoundError:
        return False


def test_the_walk_sees_core_and_the_integrations() -> None:
    modules = _modules()
    assert {"ragloom.core.errors", "ragloom.core.stores._rows"} <= set(modules)
    assert "ragloom.core.evaluation.__main__" not in modules
    assert "ragloom.testkit" in modules


def test_every_module_has_an_all_whose_names_resolve() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _CHECK, *_modules()], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == []
