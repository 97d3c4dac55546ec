"""mypy --strict on every package: one run over all of packages/*/src.

The packages share the ``ragloom`` namespace (PEP 420), so mypy gets every ``src`` on
its path and each distribution's top package by name (``-p ragloom.stores.qdrant``);
one process shares the cache between them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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
    env = {**os.environ, "MYPYPATH": os.pathsep.join(str(src) for src in sources)}
    command = [sys.executable, "-m", "mypy", "--strict"]
    for name in packages:
        command += ["-p", name]
    print(f"mypy --strict: {len(packages)} packages of {len(sources)} distributions", flush=True)
    return subprocess.run(command, env=env, cwd=ROOT, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
