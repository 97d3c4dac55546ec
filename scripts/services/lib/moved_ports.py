"""Print ``export RAGLOOM_<SERVICE>_PORT=<port>`` lines moving every test server off its default.

``eval "$(python scripts/services/lib/moved_ports.py)"`` before ``scripts/services.sh start``
runs the servers, and the tests, on other ports: a test or script that still leans on a
default port fails. The ports are free now, differ from every default of
scripts/services/env.sh, and stay below 32768 (FalkorDB's limit, and below Linux's
ephemeral range, where clients' own ports come from); Ray's gets a block of
``RAY_BLOCK`` ports (ray.sh uses PORT .. PORT+59+50*workers).
"""

from __future__ import annotations

import random
import re
import socket
import sys
from pathlib import Path

ENV_SCRIPT = Path(__file__).resolve().parents[1] / "env.sh"
PORT_DEFAULT = re.compile(r"^export (RAGLOOM_\w+_PORT)=\$\{\1:-(\d+)\}$", re.MULTILINE)
LOW, HIGH = 20000, 32000
RAY_BLOCK = 200


def default_ports(text: str) -> dict[str, int]:
    """The ``RAGLOOM_*_PORT`` variables of env.sh and their defaults."""
    return {name: int(port) for name, port in PORT_DEFAULT.findall(text)}


def is_free(port: int) -> bool:
    """Whether 127.0.0.1:``port`` can be bound now."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def moved_ports(defaults: dict[str, int], rng: random.Random) -> dict[str, int]:
    """A free port per variable, none a default, the blocks (Ray's is wider) disjoint."""
    taken = [(port, port + RAY_BLOCK) for port in defaults.values()]  # keep clear of defaults
    chosen: dict[str, int] = {}
    for name in sorted(defaults):
        width = RAY_BLOCK if name == "RAGLOOM_RAY_PORT" else 1
        for _ in range(1000):
            port = rng.randrange(LOW, HIGH - width)
            block = (port, port + width)
            clear = all(block[1] <= start or end <= block[0] for start, end in taken)
            if clear and all(is_free(p) for p in range(port, port + min(width, 3))):
                chosen[name] = port
                taken.append(block)
                break
        else:
            raise SystemExit(f"moved_ports: no free port for {name} in {LOW}..{HIGH}")
    return chosen


def main() -> None:
    defaults = default_ports(ENV_SCRIPT.read_text(encoding="utf-8"))
    if not defaults:
        raise SystemExit(f"moved_ports: no RAGLOOM_*_PORT defaults in {ENV_SCRIPT}")
    for name, port in moved_ports(defaults, random.Random()).items():
        sys.stdout.write(f"export {name}={port}\n")


if __name__ == "__main__":
    main()
