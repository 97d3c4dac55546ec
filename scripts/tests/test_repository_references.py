"""What the repository's own files say about it is true: every service script a
package names exists, and the README lists core's dependencies as core declares them."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVICE_SCRIPT = re.compile(r"scripts/services/[\w.-]+\.sh")
REQUIREMENT_NAME = re.compile(r"^[A-Za-z0-9._-]+")
#: Examples of the pattern in docs, not references (the testkit README's ``x.sh``).
PLACEHOLDERS = {"scripts/services/x.sh"}


def test_every_named_service_script_exists() -> None:
    named: dict[str, list[str]] = {}
    files = [*ROOT.glob("packages/*/pyproject.toml"), *ROOT.glob("packages/*/README.md")]
    files += [*ROOT.glob("packages/*/tests/conftest.py"), ROOT / "README.md"]
    for file in files:
        for script in SERVICE_SCRIPT.findall(file.read_text(encoding="utf-8")):
            named.setdefault(script, []).append(str(file.relative_to(ROOT)))
    assert "scripts/services/amazon-s3.sh" in named  # the check sees the references
    missing = {
        script: where
        for script, where in named.items()
        if script not in PLACEHOLDERS and not (ROOT / script).is_file()
    }
    assert missing == {}, "named but not in scripts/services/"


def test_readme_lists_cores_dependencies() -> None:
    project = tomllib.loads((ROOT / "packages/core/pyproject.toml").read_text("utf-8"))
    declared = {
        REQUIREMENT_NAME.match(requirement)[0].lower()  # type: ignore[index]
        for requirement in project["project"]["dependencies"]
    }
    (row,) = [
        line
        for line in (ROOT / "README.md").read_text("utf-8").splitlines()
        if line.startswith("| `packages/core` |")
    ]
    listed = re.search(r"light dependencies: ([^)]*)\)", row)
    assert listed is not None, row
    assert {name.strip().lower() for name in listed[1].split(",")} == declared
    assert "numpy only" not in (ROOT / "README.md").read_text("utf-8")
