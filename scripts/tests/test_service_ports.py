"""One definition of the test servers' ports: scripts/services/env.sh.

The service scripts take their ports from it, no test file names a default port (tests
read addresses through ``ragloom.testkit.servers.service_setting``), the runnable
examples of the docs and READMEs name one only as the fallback of
``os.environ.get("<its variable>", ...)``, equal to what env.sh derives, and neo4j.sh
refuses a port FalkorDB cannot listen on. CI runs the suite with every port moved
(``scripts/test.sh --moved-ports``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ROOT / "scripts" / "services"
ENV_SCRIPT = SERVICES / "env.sh"
PORT_DEFAULT = re.compile(r"^export (RAGLOOM_\w+_PORT)=\$\{\1:-(\d+)\}$", re.MULTILINE)
ENVIRON_GET = re.compile(r'os\.environ\.get\(\s*"(RAGLOOM_\w+)",\s*"([^"]*)"\s*\)')
PYTHON_BLOCK = re.compile(r"^ *```(?:python|py)\b[^\n]*\n(.*?)^ *```", re.MULTILINE | re.DOTALL)


def default_ports() -> dict[str, str]:
    return dict(PORT_DEFAULT.findall(ENV_SCRIPT.read_text(encoding="utf-8")))


def derived_defaults() -> dict[str, str]:
    """env.sh's values in an environment without any RAGLOOM_* variable."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    done = subprocess.run(
        ["bash", "-c", 'source "$1" && env -0', "env.sh", str(ENV_SCRIPT)],
        env=environment,
        capture_output=True,
        check=True,
    )
    pairs = (item.partition("=") for item in done.stdout.decode().split("\0") if item)
    return {name: value for name, _, value in pairs if name.startswith("RAGLOOM_")}


def default_port_pattern() -> re.Pattern[str]:
    return re.compile(r"(?<!\d)(" + "|".join(default_ports().values()) + r")(?!\d)")


def test_env_sh_defines_every_port_and_address() -> None:
    ports = default_ports()
    assert len(ports) >= 7, ports
    assert len(set(ports.values())) == len(ports), f"two services share a default: {ports}"
    derived = derived_defaults()
    for name, port in ports.items():
        assert derived[name] == port
    assert derived["RAGLOOM_PG_DSN"] == (
        f"postgresql://postgres@127.0.0.1:{ports['RAGLOOM_PG_PORT']}/postgres"
    )
    assert int(ports["RAGLOOM_NEO4J_PORT"]) < 32768  # FalkorDB's limit


def test_every_service_script_takes_its_port_from_env_sh() -> None:
    scripts = sorted(path for path in SERVICES.glob("*.sh") if path.name != "env.sh")
    assert len(scripts) >= 7
    for script in scripts:
        text = script.read_text(encoding="utf-8")
        assert "source scripts/services/env.sh" in text, script.name
        assert re.search(r"^PORT=\$RAGLOOM_\w+_PORT$", text, re.MULTILINE), script.name
        assert not default_port_pattern().search(text), f"{script.name} names a default port"


def test_no_test_file_names_a_default_port() -> None:
    pattern = default_port_pattern()
    files = [
        *ROOT.glob("packages/*/tests/**/*.py"),
        *ROOT.glob("integration-tests/**/*.py"),
        *ROOT.glob("scripts/tests/*.py"),
    ]
    assert len(files) > 50
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert not offenders, (
        "use ragloom.testkit.servers.service_setting instead of a default port:\n"
        + "\n".join(offenders)
    )


def test_runnable_examples_name_a_default_port_only_as_env_sh_derives_it() -> None:
    derived = derived_defaults()
    pattern = default_port_pattern()
    pages = [
        ROOT / "README.md",
        *ROOT.glob("docs/*.md"),
        *ROOT.glob("packages/*/README.md"),
    ]
    offenders: list[str] = []
    fallbacks = 0
    for page in pages:
        for block in PYTHON_BLOCK.findall(page.read_text(encoding="utf-8")):
            for name, fallback in ENVIRON_GET.findall(block):
                if name in derived and pattern.search(fallback):
                    fallbacks += 1
                    if fallback != derived[name]:
                        offenders.append(f"{page.name}: {name} falls back to {fallback!r}")
            if pattern.search(ENVIRON_GET.sub("", block)):
                offenders.append(f"{page.relative_to(ROOT)}: a default port outside os.environ.get")
    assert fallbacks >= 2  # the pgvector and object-store examples
    assert not offenders, "\n".join(offenders)


def test_moved_ports_are_free_non_default_and_below_falkordbs_limit() -> None:
    done = subprocess.run(
        [sys.executable, str(SERVICES / "lib" / "moved_ports.py")],
        capture_output=True,
        text=True,
        check=True,
    )
    moved = dict(re.findall(r"^export (RAGLOOM_\w+_PORT)=(\d+)$", done.stdout, re.MULTILINE))
    defaults = default_ports()
    assert moved.keys() == defaults.keys()
    assert all(moved[name] != defaults[name] for name in moved)
    assert all(int(port) < 32768 for port in moved.values())
    assert len(set(moved.values())) == len(moved)


@pytest.mark.parametrize("port", ["32768", "40000", "0", "x"])
def test_neo4j_refuses_a_port_falkordb_cannot_listen_on(port: str, tmp_path: Path) -> None:
    environment = {**os.environ, "RAGLOOM_NEO4J_PORT": port, "RAGLOOM_SERVICES_DIR": str(tmp_path)}
    done = subprocess.run(
        ["bash", str(SERVICES / "neo4j.sh"), "start"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    assert done.returncode == 1
    assert f"RAGLOOM_NEO4J_PORT={port}: FalkorDB's Bolt listener takes ports 1..32767" in (
        done.stderr
    )
    assert not (tmp_path / "neo4j").exists()  # refused before starting anything
