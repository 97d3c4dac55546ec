"""``POST /v1/retrieve``, a plain ASGI route since a103aef, under hostile input.

A real ``ragloom serve`` (a 16 KiB body cap, a 1 s body deadline) holds one document of
each of two tenants. Every hostile body is a 4xx JSON error naming the field, answered
within the client's deadline, never showing the other tenant's document; whatever the
route's declared OpenAPI schema refuses, the server refuses too; the server stays healthy.
Chunked bodies over the cap, slow bodies and a body dripping in chunks are sent on raw
sockets.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import jsonschema
import pytest

from ragloom.easy_rag.cli import main as ragloom

pytestmark = pytest.mark.integration  # a ragloom serve process

ACME, GLOBEX = "acme-key-0123456789ab", "globex-key-0123456789"
KEYS = [{"key": ACME, "tenant": "acme", "name": "acme"}, {"key": GLOBEX, "tenant": "globex"}]
SECRET = "Globex lighthouse keepers trim the lamp wick with silver scissors at dusk."
OWN = "Acme lighthouse keepers polish the lamp lens with cloth at dawn."
QUESTION = "How do lighthouse keepers trim the lamp wick?"
CAP = 16384
DEADLINE = 15.0  # seconds a whole request may take, body deadline (1 s) included


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("retrieve")
    corpus = root / "corpus"
    corpus.mkdir()
    (corpus / "public.md").write_text("Harbour tides rise twice a day.", encoding="utf-8")
    assert ragloom(["ingest", str(corpus), "--index", str(root / "index"), "--quiet"]) == 0
    port = free_port()
    environment = {
        **os.environ,
        "RAGLOOM_SERVER_API_KEYS": json.dumps(KEYS),
        "RAGLOOM_SERVER_MAX_BODY_BYTES": str(CAP),
        "RAGLOOM_SERVER_BODY_TIMEOUT": "1",
        "RAGLOOM_SERVER_RATE_LIMIT": "0",
    }
    log = root / "serve.log"
    command = [
        sys.executable,
        "-m",
        "ragloom.easy_rag.cli",
        "serve",
        "--index",
        str(root / "index"),
    ]
    process = subprocess.Popen(
        [*command, "--port", str(port)],
        env=environment,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            assert process.poll() is None, log.read_text()
            try:
                if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        for key, name, text in ((GLOBEX, "secret.md", SECRET), (ACME, "own.md", OWN)):
            upload(url, key, name, text)
        yield url
    finally:
        process.terminate()
        process.wait(30)
        assert "Traceback" not in log.read_text(), log.read_text()[-3000:]


def upload(url: str, key: str, name: str, text: str) -> None:
    answer = httpx.post(
        f"{url}/v1/documents", json={"name": name, "text": text}, headers=bearer(key), timeout=30
    )
    assert answer.status_code == 202, answer.text
    (job,) = answer.json()["jobs"]
    for _ in range(600):
        status = httpx.get(f"{url}/v1/jobs/{job['id']}", headers=bearer(key), timeout=10).json()
        if status["status"] not in {"queued", "running"}:
            break
        time.sleep(0.05)
    assert status["status"] == "done", status


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def post(url: str, body: bytes, content_type: str | None = "application/json") -> httpx.Response:
    headers = bearer(ACME) | ({"Content-Type": content_type} if content_type else {})
    return httpx.post(f"{url}/v1/retrieve", content=body, headers=headers, timeout=DEADLINE)


def assert_healthy(url: str) -> None:
    """/healthz answers and the acme key still finds its own document, not globex's."""
    assert httpx.get(f"{url}/healthz", timeout=DEADLINE).status_code == 200
    answer = post(url, json.dumps({"query": QUESTION, "max_results": 5}).encode())
    assert answer.status_code == 200, answer.text
    assert [hit["text"] for hit in answer.json()["data"]] == [OWN]


def assert_error(answer: httpx.Response, status: int, *says: str) -> None:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    error = answer.json()["error"]
    assert set(error) == {"message", "type", "code"}
    assert error["code"] == status
    for text in says:
        assert text in error["message"], (text, error["message"])
    assert "Globex" not in answer.text
    assert len(answer.text) < 2_000  # nothing echoed whole


def q(**fields: Any) -> bytes:
    return json.dumps({"query": QUESTION, **fields}).encode()


HOSTILE: list[tuple[str, bytes, str | None, str]] = [  # id, body, Content-Type, names
    ("utf-16", '{"query": "lamp"}'.encode("utf-16"), "application/json; charset=utf-16", "UTF-8"),
    ("latin-1 charset", q(), "application/json; charset=latin-1", "charset 'latin-1'"),
    ("text/plain", q(), "text/plain", "Content-Type"),
    ("duplicate query", b'{"query": "lamp", "query": "wick"}', None, "body.query: given twice"),
    ("duplicate max", b'{"query": "a", "max_results": 1, "max_results": 3}', None, "max_results"),
    ("max 1e999", b'{"query": "a", "max_results": 1e999}', None, "body.max_results"),
    ("max -0", b'{"query": "a", "max_results": -0}', None, "body.max_results"),
    ("max 10**400", q(max_results=10**400), None, "max_results of 401 digits"),
    ("max 10**5000", b'{"query": "a", "max_results": 1' + b"0" * 5000 + b"}", None, "body"),
    ("max 2.0", b'{"query": "a", "max_results": 2.0}', None, "body.max_results"),
    ("max text", b'{"query": "a", "max_results": "2"}', None, "body.max_results"),
    ("max true", b'{"query": "a", "max_results": true}', None, "body.max_results"),
    ("min 1e999", b'{"query": "a", "min_score": 1e999}', None, "body.min_score"),
    ("min -1e999", b'{"query": "a", "min_score": -1e999}', None, "body.min_score"),
    ("min NaN", b'{"query": "a", "min_score": NaN}', None, "body.min_score"),
    ("min Infinity", b'{"query": "a", "min_score": Infinity}', None, "body.min_score"),
    ("min text", b'{"query": "a", "min_score": "0.5"}', None, "body.min_score"),
    ("deep", b'{"query": "a", "filter": ' + b"[" * 1500 + b"]" * 1500 + b"}", None, "body"),
    ("filter 10k", q(filter="file_name == '" + "x" * 10_000 + "'"), None, "body"),
    ("filter 1.9k", q(filter="file_name == '" + "x" * 1_900 + "' and ("), None, "filter"),
    ("filter a list", q(filter=["tenant == 'globex'"]), None, "body.filter"),
    ("a list", b"[]", None, "body: Input should be an object"),
    ("a string", b'"lamp"', None, "body: Input should be an object"),
    ("null", b"null", None, "body"),
    ("empty", b"", None, "body"),
    ("unknown field", q(debug=True), None, "body.debug"),
    ("tenant field", q(tenant="globex"), None, "body.tenant"),
    ("tenants field", q(tenants=["globex"]), None, "body.tenants"),
    ("metadata field", q(metadata={"tenant": "globex"}), None, "body.metadata"),
    ("no query", b'{"max_results": 1}', None, "body.query"),
    ("query number", b'{"query": 5}', None, "body.query"),
    ("query empty", q(query=""), None, "body.query"),
    ("lone surrogate", b'{"query": "\\ud800 lamp"}', None, "body"),
    ("not UTF-8", b'{"query": "\xff\xfe lamp"}', None, "body"),
    ("mode upper", q(mode="DENSE"), None, "body.mode"),
]


@pytest.mark.parametrize(
    ("case", "body", "content_type", "says"), HOSTILE, ids=[h[0] for h in HOSTILE]
)
def test_hostile_bodies_are_400_naming_the_field(
    server: str, case: str, body: bytes, content_type: str | None, says: str
) -> None:
    assert len(body) <= CAP, case  # the cap is the next test's
    assert_error(post(server, body, content_type), 400, says)


def test_what_the_schema_refuses_the_server_refuses(server: str) -> None:
    """Every hostile body that is JSON is checked against the route's declared schema:
    the server refuses all the schema refuses (it may refuse more: a repeated field,
    2.0 for an integer, a filter that does not parse)."""
    spec = httpx.get(f"{server}/openapi.json", timeout=DEADLINE).json()
    operation = spec["paths"]["/v1/retrieve"]["post"]
    reference = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    schema = {**spec["components"]["schemas"][reference.rsplit("/", 1)[1]], "components": {}}
    checked = 0
    for case, body, content_type, _ in HOSTILE:
        try:
            document = json.loads(body)
        except (ValueError, RecursionError):
            continue
        if content_type is None and not jsonschema.Draft202012Validator(schema).is_valid(document):
            checked += 1
            assert post(server, body).status_code == 400, case
    assert checked >= 20
    valid = [q(), q(max_results=3, min_score=0.0, mode="keyword"), q(filter=None, max_results=None)]
    for body in valid:
        assert jsonschema.Draft202012Validator(schema).is_valid(json.loads(body))
        assert post(server, body).status_code == 200, body


@pytest.mark.parametrize(
    "widen",
    [
        "tenant == 'globex'",
        "tenant != 'acme'",
        "file_name == 'none' or tenant == 'globex'",
        "not (tenant == 'acme')",
        "tenant in ['acme', 'globex']",
    ],
)
def test_a_filter_never_widens_the_keys_tenant(server: str, widen: str) -> None:
    for mode in ("hybrid", "dense", "keyword"):
        answer = post(server, q(filter=widen, max_results=5, mode=mode))
        assert answer.status_code in {200, 400}, answer.text
        assert "Globex" not in answer.text, (widen, mode)
        if answer.status_code == 200:
            assert {hit["metadata"]["tenant"] for hit in answer.json()["data"]} <= {"acme"}


def raw_request(url: str, head: str, parts: list[bytes], pause: float = 0.0) -> tuple[int, bytes]:
    """Send ``head`` then each part (``pause`` s apart) on one socket; the status and the
    body of the answer (the server may answer before the parts are all sent)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=DEADLINE) as connection:
        connection.sendall(head.encode())
        for part in parts:
            try:
                connection.sendall(part)
            except OSError:  # answered and closed: read the answer
                break
            time.sleep(pause)
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer.partition(b"\r\n\r\n")[2]) < 10:
            chunk = connection.recv(65536)
            if not chunk:
                break
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


def head(url: str, length: int | None) -> str:
    framing = "Transfer-Encoding: chunked" if length is None else f"Content-Length: {length}"
    return (
        f"POST /v1/retrieve HTTP/1.1\r\nHost: {url.removeprefix('http://')}\r\n"
        f"Authorization: Bearer {ACME}\r\nContent-Type: application/json\r\n{framing}\r\n\r\n"
    )


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def test_a_chunked_body_over_the_cap_is_413(server: str) -> None:
    body = q(filter="x" * (3 * CAP))
    parts = [chunk(body[i : i + 1024]) for i in range(0, len(body), 1024)] + [b"0\r\n\r\n"]
    status, answer = raw_request(server, head(server, None), parts)
    assert status == 413, answer
    assert f"exceeds {CAP} bytes" in answer.decode()
    assert_healthy(server)


def test_a_chunked_body_under_the_cap_is_served(server: str) -> None:
    body = q(max_results=5)
    parts = [chunk(body[:10]), chunk(body[10:]), b"0\r\n\r\n"]
    status, answer = raw_request(server, head(server, None), parts)
    assert status == 200, answer


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_a_slow_body_is_408(server: str, framing: str) -> None:
    body = q()
    if framing == "chunked":
        parts = [chunk(body[i : i + 1]) for i in range(len(body))]
        status, answer = raw_request(server, head(server, None), parts, pause=0.3)
    else:
        status, answer = raw_request(server, head(server, len(body)), [body[:10]])
    assert status == 408, answer
    assert b"did not arrive within 1 s" in answer
    assert_healthy(server)


def test_the_server_is_healthy_after_every_case(server: str) -> None:
    for _, body, content_type, _ in HOSTILE:
        post(server, body, content_type)
    assert_healthy(server)
