"""ragloom.testkit.servers: the reachability check fails (not skips) naming the command;
the data lock keeps a second session out and empties only the local server."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ragloom.testkit.servers import (
    exclusive_data,
    local_service_setting,
    require_server,
    service_setting,
)


def test_require_server_passes_a_listening_server() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        assert require_server(url, "bash scripts/services/x.sh start") == url


def test_require_server_fails_with_the_start_command() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed once the block ends: nothing listens
    with pytest.raises(pytest.fail.Exception, match="x.sh start.*or set X_URL"):
        require_server(
            f"http://127.0.0.1:{port}", "bash scripts/services/x.sh start", variable="X_URL"
        )


def test_service_setting_derives_the_address_from_a_moved_port(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RAGLOOM_PG_DSN", raising=False)
    monkeypatch.setenv("RAGLOOM_PG_PORT", "41234")
    assert service_setting("RAGLOOM_PG_DSN") == "postgresql://postgres@127.0.0.1:41234/postgres"
    monkeypatch.setenv("RAGLOOM_NEO4J_PORT", "12345")
    assert service_setting("RAGLOOM_NEO4J_URL") == "bolt://127.0.0.1:12345"


def test_an_address_in_the_environment_points_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGLOOM_AMAZON_S3_PORT", "41235")
    monkeypatch.setenv("RAGLOOM_AMAZON_S3_URL", "http://s3.example:9000")
    assert service_setting("RAGLOOM_AMAZON_S3_URL") == "http://s3.example:9000"
    assert local_service_setting("RAGLOOM_AMAZON_S3_URL") == "http://127.0.0.1:41235"


def test_an_unknown_setting_fails_naming_env_sh() -> None:
    with pytest.raises(
        pytest.fail.Exception, match=r"RAGLOOM_NOPE_URL is not defined by .*env\.sh"
    ):
        service_setting("RAGLOOM_NOPE_URL")


HOLDER = """
import fcntl, sys, time
handle = open(sys.argv[1], "a")
fcntl.flock(handle, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(60)
"""


def test_the_data_lock_keeps_a_second_session_out_and_resets_the_local_server(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RAGLOOM_SERVICES_DIR", str(tmp_path))
    monkeypatch.setenv("RAGLOOM_NEO4J_PORT", "12346")
    monkeypatch.delenv("RAGLOOM_NEO4J_URL", raising=False)
    marker = tmp_path / "reset"
    with exclusive_data("RAGLOOM_NEO4J_URL", reset=f"touch {marker}") as url:
        assert url == "bolt://127.0.0.1:12346"
        assert marker.exists()
        marker.unlink()
        with exclusive_data("RAGLOOM_NEO4J_URL", reset=f"touch {marker}") as again:
            assert again == url  # the same session again: re-entrant, emptied again
            assert marker.exists()
        marker.unlink()
    held = list((tmp_path / "locks").iterdir())
    assert len(held) == 1
    other = subprocess.Popen(  # another session holding the lock
        [sys.executable, "-c", HOLDER, str(held[0])], stdout=subprocess.PIPE, text=True
    )
    try:
        assert other.stdout is not None
        assert other.stdout.readline() == "held\n"
        with (
            pytest.raises(pytest.fail.Exception, match="stayed in use by another test session"),
            exclusive_data("RAGLOOM_NEO4J_URL", reset=f"touch {marker}", wait=0.3),
        ):
            pass
        assert not marker.exists()
    finally:
        other.kill()
        other.wait()
    with (
        pytest.raises(pytest.fail.Exception, match="`false` .* failed with exit code 1"),
        exclusive_data("RAGLOOM_NEO4J_URL", reset="false"),
    ):
        pass
    monkeypatch.setenv("RAGLOOM_NEO4J_URL", "bolt://graph.example:7687")
    with exclusive_data("RAGLOOM_NEO4J_URL", reset=f"touch {marker}") as url:
        assert url == "bolt://graph.example:7687"
    assert not marker.exists()  # a server elsewhere is never emptied
