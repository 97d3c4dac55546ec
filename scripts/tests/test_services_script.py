"""scripts/services.sh: a failed start leaves no server of the same call running."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "services.sh"

GOOD = """#!/usr/bin/env bash
set -euo pipefail
case $1 in
  start) sleep 0.5; touch "$(dirname "$0")/good.running" ;;
  stop) rm -f "$(dirname "$0")/good.running" ;;
esac
"""
BAD = """#!/usr/bin/env bash
case $1 in
  start) echo "bad: cannot start" >&2; exit 1 ;;
  stop) exit 0 ;;
esac
"""


def test_a_failed_start_stops_the_services_it_started(tmp_path: Path) -> None:
    (tmp_path / "scripts" / "services").mkdir(parents=True)
    shutil.copy(SCRIPT, tmp_path / "scripts" / "services.sh")
    (tmp_path / "scripts" / "services" / "good.sh").write_text(GOOD)
    (tmp_path / "scripts" / "services" / "bad.sh").write_text(BAD)

    done = subprocess.run(
        ["bash", str(tmp_path / "scripts" / "services.sh"), "start"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 1
    assert "bad start failed" in done.stderr
    assert "stopping good" in done.stderr
    assert not (tmp_path / "scripts" / "services" / "good.running").exists()


def test_a_successful_start_keeps_the_services_running(tmp_path: Path) -> None:
    (tmp_path / "scripts" / "services").mkdir(parents=True)
    shutil.copy(SCRIPT, tmp_path / "scripts" / "services.sh")
    (tmp_path / "scripts" / "services" / "good.sh").write_text(GOOD)

    done = subprocess.run(
        ["bash", str(tmp_path / "scripts" / "services.sh"), "start"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert (tmp_path / "scripts" / "services" / "good.running").exists()
