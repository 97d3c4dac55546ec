"""ragloom.testkit.servers: the reachability check fails (not skips) naming the command."""

from __future__ import annotations

import socket

import pytest

from ragloom.testkit.servers import require_server


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
