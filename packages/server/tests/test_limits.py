"""Admission limits: a token bucket per key (429), requests in flight (503), and slow
clients cut by deadlines — the last two against a real ``ragloom serve`` over raw sockets."""

from __future__ import annotations

import json
import select
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi.testclient import TestClient

from ragloom.server import ApiKey, IndexService, ServerConfigError, ServerSettings, create_app
from ragloom.server.limits import TokenBucket

Served = tuple[subprocess.Popen[bytes], str]  # what conftest's ``serve`` returns
BODY_TIMEOUT = 3.0
HEADER_TIMEOUT = 2.0
SLACK = 8.0  # generous: the machine is shared and loaded
DRIP_INTERVAL = 0.1


def test_token_bucket_refills_at_its_rate_up_to_its_burst() -> None:
    now = [100.0]
    bucket = TokenBucket(rate=2.0, burst=2, clock=lambda: now[0])
    assert [bucket.take(), bucket.take()] == [0.0, 0.0]
    assert bucket.take() == pytest.approx(0.5)
    now[0] += 0.25
    assert bucket.take() == pytest.approx(0.25)
    now[0] += 10.0  # saved up: never more than the burst
    assert [bucket.take(), bucket.take()] == [0.0, 0.0]
    assert bucket.take() > 0


def test_each_key_has_its_own_rate_limit(service: IndexService, keys: dict[str, str]) -> None:
    api_keys = [
        ApiKey.model_validate(
            {"key": keys["acme"], "tenant": "acme", "rate_limit": 0.01, "rate_burst": 2}
        ),
        ApiKey.model_validate({"key": keys["globex"], "tenant": "globex"}),
    ]
    settings = ServerSettings.load(index=service.settings.index, api_keys=api_keys)
    acme = {"Authorization": f"Bearer {keys['acme']}"}
    globex = {"Authorization": f"Bearer {keys['globex']}"}
    with TestClient(create_app(settings, service), base_url="http://127.0.0.1:8000") as client:
        body = {"query": "metadata filters"}
        assert [client.post("/v1/retrieve", json=body, headers=acme).status_code] * 2 == [200] * 2
        assert client.get("/v1/models", headers=acme).status_code == 200
        refused = client.post("/v1/retrieve", json=body, headers=acme)
        assert refused.status_code == 429
        assert int(refused.headers["retry-after"]) >= 90  # one token per 100 s
        assert refused.json()["error"]["type"] == "rate_limit_exceeded"
        assert client.post("/v1/retrieve", json=body, headers=globex).status_code == 200
        assert client.post("/v1/retrieve", json=body).status_code == 401  # no key: no bucket
        assert client.get("/healthz").status_code == 200  # operations are not limited
        assert 'kind="rate_limit_exceeded"' in client.get("/metrics").text


def test_bad_limit_settings_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(ServerConfigError, match="rate_limit"):
        ServerSettings.load(index=tmp_path, rate_limit=-1)
    with pytest.raises(ServerConfigError, match="body_timeout"):
        ServerSettings.load(index=tmp_path, body_timeout=0)


# --- a real server, real sockets -------------------------------------------------------------


@pytest.fixture(scope="module")
def limited(
    copy_index: Callable[[Path], Path],
    serve: Callable[..., Served],
    keys: dict[str, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    """``ragloom serve`` with 3 s body and 2 s header deadlines and 2 API requests in flight."""
    folder = tmp_path_factory.mktemp("limited")
    process, url = serve(
        copy_index(folder),
        folder / "server.log",
        RAGLOOM_SERVER_BODY_TIMEOUT=str(BODY_TIMEOUT),
        RAGLOOM_SERVER_HEADER_TIMEOUT=str(HEADER_TIMEOUT),
        RAGLOOM_SERVER_MAX_CONCURRENCY="2",
    )
    try:
        assert retrieve(url, keys["admin"]).status_code == 200  # warm: the model's first run
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) in {0, -signal.SIGTERM}


def _connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    return socket.create_connection((parts.hostname or "", parts.port or 80), timeout=30)


def _read_to_end(sock: socket.socket) -> bytes:
    answer = b""
    try:
        while chunk := sock.recv(65536):
            answer += chunk
    except ConnectionResetError:
        pass
    return answer


def _drip(sock: socket.socket, data: bytes) -> None:
    """Sends ``data`` one byte every 0.1 s until the server answers or closes."""
    for byte in data:
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            return
        if select.select([sock], [], [], DRIP_INTERVAL)[0]:
            return


def drip_body(url: str, key: str) -> tuple[bytes, float]:
    """A retrieve request whose body arrives one byte at a time (40 s if let through):
    the server's answer, and when it ended (``time.monotonic``) after the headers."""
    body = json.dumps({"query": "slow " * 80}).encode()
    head = (
        "POST /v1/retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    with _connect(url) as sock:
        sock.sendall(head.encode())
        started = time.monotonic()
        _drip(sock, body)
        answer = _read_to_end(sock)
        return answer, time.monotonic() - started


def drip_headers(url: str) -> tuple[bytes, float]:
    """A request whose headers arrive one byte at a time (slowloris)."""
    with _connect(url) as sock:
        started = time.monotonic()
        _drip(sock, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 400)
        return _read_to_end(sock), time.monotonic() - started


def retrieve(url: str, key: str) -> httpx.Response:
    return httpx.post(
        f"{url}/v1/retrieve",
        json={"query": "metadata filters", "max_results": 2},
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )


@pytest.mark.slow
def test_a_dripping_body_is_cut_while_others_are_served(limited: str, keys: dict[str, str]) -> None:
    with ThreadPoolExecutor(2) as pool:
        slow_body = pool.submit(drip_body, limited, keys["acme"])
        slow_headers = pool.submit(drip_headers, limited)
        time.sleep(0.5)
        answered = retrieve(limited, keys["admin"])
        assert not slow_body.done()  # served meanwhile
        assert answered.status_code == 200
        assert answered.json()["data"]
        answer, elapsed = slow_body.result(timeout=60)
        headers_answer, headers_elapsed = slow_headers.result(timeout=60)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"did not arrive within 3 s" in answer
    assert b"connection: close" in answer.lower()
    assert elapsed < BODY_TIMEOUT + SLACK
    assert headers_answer == b""  # closed without a response
    assert headers_elapsed < HEADER_TIMEOUT + SLACK
    assert httpx.get(f"{limited}/healthz").status_code == 200


@pytest.mark.slow
def test_requests_over_the_concurrency_cap_get_503(limited: str, keys: dict[str, str]) -> None:
    with ThreadPoolExecutor(2) as pool:
        holders: list[Future[tuple[bytes, float]]] = [
            pool.submit(drip_body, limited, keys["acme"]) for _ in range(2)
        ]
        deadline = time.monotonic() + BODY_TIMEOUT
        probe = {"Authorization": f"Bearer {keys['globex']}", "Content-Type": "application/json"}
        busy = httpx.post(f"{limited}/v1/retrieve", content=b"{", headers=probe)
        while busy.status_code == 400 and time.monotonic() < deadline:
            # bad JSON: a quick 400 once admitted, so this polls until both drips hold a place
            busy = httpx.post(f"{limited}/v1/retrieve", content=b"{", headers=probe)
        assert busy.status_code == 503, busy.text
        assert busy.headers["retry-after"] == "1"
        assert "2 requests in flight" in busy.json()["error"]["message"]
        assert httpx.get(f"{limited}/healthz").status_code == 200  # operations still answer
        assert all(f.result(timeout=60)[0].startswith(b"HTTP/1.1 408") for f in holders)
    assert retrieve(limited, keys["globex"]).status_code == 200  # places freed
