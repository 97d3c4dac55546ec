"""mypy --strict on every package and on scripts/: one run over all of them.

The packages share the ``ragloom`` namespace (PEP 420), so mypy gets every ``src`` on
its path and each distribution's top package by name (``-p ragloom.stores.qdrant``);
one process shares the cache between them. The scripts are top-level modules by
file name (``-m bench_ann``), their folders on the path: a bench script imports its
siblings by bare name (``from _common import ...``). Peers that live only in
``.bench-venv`` are ignored imports in the root pyproject's mypy overrides.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The folders whose *.py files are checked, each also a root of bare-name imports.
SCRIPT_DIRS = ("scripts/bench", "scripts/services/lib", "scripts/tests", "scripts")


def top_packages(src: Path) -> list[str]:
    """``ragloom.<kind>`` or ``ragloom.<kind>.<name>``: the first level with an ``__init__``."""
    names = []
    for kind in sorted((src / "ragloom").iterdir()):
        if (kind / "__init__.py").exists():
            names.append(f"ragloom.{kind.name}")
        elif kind.is_dir():
            names += [
                f"ragloom.{kind.name}.{sub.name}"
                for sub in sorted(kind.iterdir())
                if (sub / "__init__.py").exists()
            ]
    return names


def main() -> int:
    sources = sorted(ROOT.glob("packages/*/src"))
    packages = [name for src in sources for name in top_packages(src)]
    scripts = [path.stem for d in SCRIPT_DIRS for path in sorted((ROOT / d).glob("*.py"))]
    search = [str(src) for src in sources] + [str(ROOT / d) for d in SCRIPT_DIRS]
    env = {**os.environ, "MYPYPATH": os.pathsep.join(search)}
    command = [sys.executable, "-m", "mypy", "--strict"]
    for name in packages:
        command += ["-p", name]
    for name in scripts:
        command += ["-m", name]
    print(
        f"mypy --strict: {len(packages)} packages of {len(sources)} distributions,"
        f" {len(scripts)} scripts",
        flush=True,
    )
    return subprocess.run(command, env=env, cwd=ROOT, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
