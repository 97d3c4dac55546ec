"""A hostile tenant against a real ``ragloom serve``: 200+ requests by the acme key trying
to read (or remove) globex's document through filters, headers, body fields, chat options,
MCP arguments, forged upload metadata and globex's ids: the secret never appears in any
answer and globex's document survives. Then bodies that are too big, malformed JSON, a
10k-character filter and a client dripping its headers each get a clear 4xx (or the
connection cut) within the deadline, and the server still answers."""

from __future__ import annotations

import itertools
import json
import signal
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.slow  # a ragloom serve process
Served = tuple[Any, str]
SECRET = "zanzibarkumquat"  # in globex's document only; no attack ever sends it
SECRET_TEXT = f"The globex vault code is {SECRET}, kept in the lighthouse cellar."
QUERIES = ("vault code", "lighthouse cellar", "what is the globex code?")
FILTERS = (
    "tenant == 'globex'",
    "tenant != 'acme'",
    "tenant == 'acme' or tenant == 'globex'",
    "not tenant == 'acme'",
    "tenant in ['globex', 'acme']",
    "document_id == 'upload:globex/secret.md'",
    "file_name == 'secret.md'",
)
FORGED_HEADERS = (
    {"X-Tenant": "globex"},
    {"X-Ragloom-Tenant": "globex"},
    {"Tenant": "globex"},
    {"X-Forwarded-User": "globex"},
    {"X-Tenant-Id": "globex"},
    {"Forwarded": "for=globex;by=globex"},
)
DEADLINE = 5.0  # seconds: every hostile request is answered (or cut) within this


@pytest.fixture(scope="module")
def hostile(
    copy_index: Callable[[Path], Path],
    serve: Callable[..., Served],
    keys: dict[str, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("hostile")
    process, url = serve(
        copy_index(folder),
        folder / "server.log",
        RAGLOOM_SERVER_RATE_LIMIT="0",
        RAGLOOM_SERVER_HEADER_TIMEOUT="1",
        RAGLOOM_SERVER_BODY_TIMEOUT="1",
        RAGLOOM_SERVER_REQUEST_TIMEOUT="10",
    )
    try:
        wait_for(url, keys["globex"], upload(url, keys["globex"], "secret.md", SECRET_TEXT))
        wait_for(url, keys["acme"], upload(url, keys["acme"], "own.md", "Acme keeps a vault too."))
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def upload(url: str, key: str, name: str, text: str) -> str:
    answer = httpx.post(
        f"{url}/v1/documents", json={"name": name, "text": text}, headers=bearer(key)
    )
    assert answer.status_code == 202, answer.text
    job: str = answer.json()["jobs"][0]["id"]
    return job


def wait_for(url: str, key: str, job: str, *, done: frozenset[str] = frozenset({"done"})) -> None:
    deadline = time.monotonic() + 60
    while (status := httpx.get(f"{url}/v1/jobs/{job}", headers=bearer(key)).json())["status"] in {
        "queued",
        "running",
    }:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert status["status"] in done, status


class Attacks:
    """Counts the attempts and checks that no answer carries the secret."""

    def __init__(self) -> None:
        self.count = 0

    def check(self, what: str, status: int, text: str) -> None:
        self.count += 1
        assert SECRET not in text, f"leak via {what}: {status} {text[:300]}"
        assert status < 500, f"{what}: {status} {text[:300]}"


async def mcp_attacks(url: str, key: str, globex_doc: str, attacks: Attacks) -> None:
    async with (
        httpx2.AsyncClient(headers=bearer(key), timeout=30) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
    ):
        for tool, query, filter in itertools.product(("search", "ask"), QUERIES, FILTERS):
            argument = "query" if tool == "search" else "question"
            try:
                result = await client.call_tool(tool, {argument: query, "filter": filter})
                attacks.check(f"mcp {tool} {filter}", 200, json.dumps(result.model_dump()))
            except MCPError as exc:
                attacks.check(f"mcp {tool} {filter}", 400, str(exc))
        for extra in ({"tenant": "globex"}, {"max_results": 4, "tenant": "globex"}):
            try:
                result = await client.call_tool("search", {"query": "vault code", **extra})
                attacks.check(f"mcp search {extra}", 200, json.dumps(result.model_dump()))
            except MCPError as exc:
                attacks.check(f"mcp search {extra}", 400, str(exc))
        try:
            read = await client.read_resource(f"ragloom://documents/{globex_doc}")
            attacks.check("mcp resource", 200, json.dumps(read.model_dump()))
        except MCPError as exc:
            attacks.check("mcp resource", 404, str(exc))


def test_another_tenants_document_never_leaks(hostile: str, keys: dict[str, str]) -> None:
    url, acme, attacks = hostile, bearer(keys["acme"]), Attacks()
    globex_doc = next(
        d["id"]
        for d in httpx.get(f"{url}/v1/documents", headers=bearer(keys["globex"])).json()["data"]
        if d["name"] == "secret.md"
    )
    with httpx.Client(base_url=url, timeout=30) as http:
        # Filters naming the tenant key, in every mode, over retrieval and chat.
        for query, filter, mode in itertools.product(
            QUERIES, FILTERS, ("hybrid", "dense", "keyword")
        ):
            body = {"query": query, "filter": filter, "mode": mode, "max_results": 20}
            answer = http.post("/v1/retrieve", json=body, headers=acme)
            attacks.check(f"retrieve {filter} {mode}", answer.status_code, answer.text)
        for query, filter, stream in itertools.product(QUERIES, FILTERS, (False, True)):
            body = {
                "model": "ragloom",
                "stream": stream,
                "messages": [{"role": "user", "content": query}],
                "ragloom": {"filter": filter, "max_results": 20},
            }
            answer = http.post("/v1/chat/completions", json=body, headers=acme)
            attacks.check(f"chat {filter} stream={stream}", answer.status_code, answer.text)
        # Forged headers beside the acme key; a second key in the same header.
        for query, forged in itertools.product(QUERIES, FORGED_HEADERS):
            answer = http.post("/v1/retrieve", json={"query": query}, headers={**acme, **forged})
            attacks.check(f"header {forged}", answer.status_code, answer.text)
        doubled = {"Authorization": f"Bearer {keys['acme']} Bearer {keys['globex']}"}
        answer = http.post("/v1/retrieve", json={"query": "vault code"}, headers=doubled)
        attacks.check("two keys", answer.status_code, answer.text)
        assert answer.status_code == 401
        # Body fields that would name a tenant: refused, not ignored into a wider scope.
        for query, field in itertools.product(QUERIES, ("tenant", "tenants", "scope")):
            body = {"query": query, field: "globex"}
            answer = http.post("/v1/retrieve", json=body, headers=acme)
            attacks.check(f"body field {field}", answer.status_code, answer.text)
            assert answer.status_code == 400
            chat = {
                "model": "ragloom",
                "messages": [{"role": "user", "content": query}],
                "user": "globex",
                "ragloom": {field: "globex"},
            }
            answer = http.post("/v1/chat/completions", json=chat, headers=acme)
            attacks.check(f"chat option {field}", answer.status_code, answer.text)
            assert answer.status_code == 400
        # Uploads with forged metadata or names: refused, or tagged with acme.
        for forged in (
            {"tenant": "globex"},
            {"document_id": globex_doc},
            {"file_name": "secret.md"},
        ):
            text = {"name": "forged.md", "text": "forged", "metadata": forged}
            answer = http.post("/v1/documents", json=text, headers=acme)
            attacks.check(f"upload metadata {forged}", answer.status_code, answer.text)
            assert answer.status_code == 400
            parts = {"metadata": (None, json.dumps(forged))}
            files = {"files": ("forged.md", b"forged", "text/markdown")}
            answer = http.post("/v1/documents", data=parts, files=files, headers=acme)
            attacks.check(f"multipart metadata {forged}", answer.status_code, answer.text)
            assert answer.status_code == 400
        for name in ("../globex/secret.md", "upload:globex/secret.md", "secret.md"):
            answer = http.post(
                "/v1/documents", json={"name": name, "text": "overwrite?"}, headers=acme
            )
            attacks.check(f"upload name {name}", answer.status_code, answer.text)
            if answer.status_code == 202:
                (job,) = answer.json()["jobs"]
                assert job["tenant"] == "acme"
                wait_for(url, keys["acme"], job["id"], done=frozenset({"done", "unchanged"}))
        # Globex's ids through every endpoint that takes one.
        for _ in range(3):
            answer = http.delete("/v1/documents", params={"id": globex_doc}, headers=acme)
            attacks.check("delete", answer.status_code, answer.text)
            assert answer.status_code == 404
        for job in ("job-1-000000", "job-2-000000", "job-1", "../jobs"):
            answer = http.get(f"/v1/jobs/{job}", headers=acme)
            attacks.check(f"job {job}", answer.status_code, answer.text)
        answer = http.get("/v1/documents", headers=acme)
        attacks.check("list", answer.status_code, answer.text)
        assert globex_doc not in answer.text
    anyio.run(mcp_attacks, url, keys["acme"], globex_doc, attacks)
    assert attacks.count >= 200
    # Globex's document is intact and still globex's only.
    theirs = httpx.post(
        f"{url}/v1/retrieve",
        json={"query": "vault code lighthouse", "max_results": 20},
        headers=bearer(keys["globex"]),
    ).json()["data"]
    assert [hit["source"] for hit in theirs if SECRET in hit["text"]] == ["secret.md"]
    assert {hit["metadata"]["tenant"] for hit in theirs} == {"globex"}


def timed(call: Callable[[], httpx.Response]) -> tuple[int, str, float]:
    started = time.monotonic()
    answer = call()
    return answer.status_code, answer.text, time.monotonic() - started


def test_hostile_bodies_get_a_clear_4xx_within_the_deadline(
    hostile: str, keys: dict[str, str]
) -> None:
    url, acme = hostile, {**bearer(keys["acme"]), "Content-Type": "application/json"}
    with httpx.Client(base_url=url, timeout=30) as http:
        cases: dict[str, tuple[Callable[[], httpx.Response], int]] = {
            "declared too large": (
                lambda: http.post("/v1/retrieve", content=b"x" * (2 << 20), headers=acme),
                413,
            ),
            "chunked too large": (
                lambda: http.post(
                    "/v1/retrieve", content=iter([b"x" * (1 << 16)] * 40), headers=acme
                ),
                413,
            ),
            "malformed JSON": (
                lambda: http.post("/v1/retrieve", content=b'{"query": ', headers=acme),
                400,
            ),
            "not an object": (lambda: http.post("/v1/retrieve", content=b"[1]", headers=acme), 400),
            "10k-character filter": (
                lambda: http.post(
                    "/v1/retrieve",
                    json={"query": "x", "filter": "a == 'b' and " * 800 + "c == 1"},
                    headers=acme,
                ),
                400,
            ),
            "deeply nested JSON": (
                lambda: http.post(
                    "/v1/retrieve",
                    content=b'{"query": ' + b"[" * 5000 + b"]" * 5000 + b"}",
                    headers=acme,
                ),
                400,
            ),
        }
        for name, (call, expected) in cases.items():
            status, text, took = timed(call)
            assert status == expected, (name, status, text[:300])
            assert json.loads(text).get("error", {}).get("code") == expected, (name, text[:300])
            assert took < DEADLINE, (name, took)
    # A client dripping its headers is cut after the header deadline (1 s here).
    host, port = url.removeprefix("http://").split(":")
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=DEADLINE) as sock:
        sock.sendall(b"POST /v1/retrieve HTTP/1.1\r\nHost: x\r\n")
        closed = False
        while time.monotonic() - started < DEADLINE:
            try:
                sock.sendall(b"X-Drip: 1\r\n")
                sock.settimeout(0.3)
                if sock.recv(1024) == b"":
                    closed = True
                    break
            except TimeoutError:
                continue
            except OSError:
                closed = True
                break
    assert closed, "the dripping client was not cut"
    assert time.monotonic() - started < DEADLINE
    assert httpx.get(f"{url}/healthz").status_code == 200
    after = httpx.post(f"{url}/v1/retrieve", json={"query": "vault"}, headers=bearer(keys["acme"]))
    assert after.status_code == 200
    assert after.json()["data"]
