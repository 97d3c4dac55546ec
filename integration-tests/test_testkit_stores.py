"""ragloom.testkit.stores against an installed store package (the testkit's own tests run
with only core and the testkit installed: scripts/check_core_alone.sh)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from ragloom.testkit.stores import open_store


def test_a_pgvector_server_that_does_not_answer_fails_with_the_start_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed once the block ends: nothing listens
    monkeypatch.setenv("RAGLOOM_PG_DSN", f"postgresql://postgres@127.0.0.1:{port}/postgres")
    started = rf"(?s)not reachable at .*:{port}.*`bash scripts/services/pgvector.sh start`"
    with pytest.raises(pytest.fail.Exception, match=started), open_store("pgvector", 8, tmp_path):
        pass
