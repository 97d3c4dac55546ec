"""`ragloom serve` as a real process on a free port: the official openai client, SSE over
HTTP, the mcp SDK's client over streamable HTTP and stdio, metrics, the page, SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import openai
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

# uvicorn shuts down gracefully, then re-raises SIGTERM so the exit status tells the signal
STOPPED = {0, -signal.SIGTERM}
pytestmark = pytest.mark.slow  # each test runs a ragloom serve (or ragloom mcp) process
Served = tuple[subprocess.Popen[bytes], str]  # what conftest's ``serve`` returns


@pytest.fixture(scope="module")
def served(
    copy_index: Callable[[Path], Path],
    serve: Callable[..., Served],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("served")
    process, url = serve(copy_index(folder), folder / "server.log")
    try:
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) in STOPPED


def test_the_official_openai_client_works_unchanged(served: str, keys: dict[str, str]) -> None:
    client = openai.OpenAI(base_url=f"{served}/v1", api_key=keys["admin"])
    assert [m.id for m in client.models.list()] == ["ragloom"]
    completion = client.chat.completions.create(
        model="ragloom", messages=[{"role": "user", "content": "How do I filter by metadata?"}]
    )
    assert "No chat model is configured" in (completion.choices[0].message.content or "")
    assert completion.model_extra is not None
    assert completion.model_extra["ragloom_sources"][0]["source"]
    stream = client.chat.completions.create(
        model="ragloom",
        stream=True,
        messages=[{"role": "user", "content": "What is a Document?"}],
    )
    chunks = list(stream)
    assert chunks[0].model_extra is not None
    assert chunks[0].model_extra["ragloom_sources"]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.startswith("No chat model is configured")
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=f"{served}/v1", api_key="not-a-key").models.list()


def test_sse_over_http_sends_sources_before_text(served: str, keys: dict[str, str]) -> None:
    body = {
        "model": "ragloom",
        "stream": True,
        "messages": [{"role": "user", "content": "filters"}],
    }
    headers = {"Authorization": f"Bearer {keys['admin']}"}
    events: list[str] = []
    with httpx.stream(
        "POST", f"{served}/v1/chat/completions", json=body, headers=headers, timeout=30
    ) as response:
        assert response.status_code == 200
        events = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    first = json.loads(events[0])
    assert first["ragloom_sources"]
    assert first["choices"][0]["delta"] == {"role": "assistant", "content": ""}


def test_metrics_and_page(served: str) -> None:
    httpx.get(f"{served}/healthz")
    metrics = httpx.get(f"{served}/metrics").text
    assert 'ragloom_http_requests_total{method="GET",route="/healthz",status="200"}' in metrics
    page = httpx.get(f"{served}/")
    assert page.status_code == 200
    assert "/v1/chat/completions" in page.text
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]


async def _mcp_call(url: str, key: str, tool: str, arguments: dict[str, Any]) -> Any:
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"search", "ask"} <= tools
        result = await client.call_tool(tool, arguments)
        assert not result.is_error, result
        return result.structured_content


def test_mcp_over_streamable_http_is_scoped_by_key(served: str, keys: dict[str, str]) -> None:
    acme = {"Authorization": f"Bearer {keys['acme']}"}
    posted = httpx.post(
        f"{served}/v1/documents",
        json={"name": "plan.md", "text": "The acme zeppelin launches from hangar nine."},
        headers=acme,
    ).json()
    job = posted["jobs"][0]["id"]
    deadline = time.monotonic() + 30
    while httpx.get(f"{served}/v1/jobs/{job}", headers=acme).json()["status"] != "done":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    found = anyio.run(_mcp_call, f"{served}/mcp", keys["acme"], "search", {"query": "zeppelin"})
    assert found["result"][0]["source"] == "plan.md"
    other = anyio.run(_mcp_call, f"{served}/mcp", keys["globex"], "search", {"query": "zeppelin"})
    assert other["result"] == []
    answer = anyio.run(_mcp_call, f"{served}/mcp", keys["admin"], "ask", {"question": "zeppelin?"})
    assert "plan.md" in {s["source"] for s in answer["sources"]}
    refused = httpx.post(f"{served}/mcp", json={}, headers={"Authorization": "Bearer nope"})
    assert refused.status_code == 401


def test_mcp_over_stdio(copy_index: Callable[[Path], Path], tmp_path: Path) -> None:
    index = copy_index(tmp_path)

    async def run() -> Any:
        parameters = StdioServerParameters(
            command=sys.executable,
            args=["-m", "ragloom.easy_rag.cli", "mcp", "--index", str(index)],
            env={k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_SERVER_")},
        )
        async with Client(parameters) as client:
            result = await client.call_tool(
                "search", {"query": "metadata filter", "max_results": 2}
            )
            assert not result.is_error, result
            return result.structured_content

    found = anyio.run(run)
    assert len(found["result"]) == 2
    assert found["result"][0]["source"] == "filters.md"


def test_sigterm_during_ingestion_loses_nothing_acknowledged(
    copy_index: Callable[[Path], Path],
    keys: dict[str, str],
    serve: Callable[..., Served],
    tmp_path: Path,
) -> None:
    index = copy_index(tmp_path)
    process, url = serve(index, tmp_path / "server.log")
    acme = {"Authorization": f"Bearer {keys['acme']}"}
    accepted = []
    for number in range(4):
        text = " ".join(f"Falcon note {number} paragraph {i}." for i in range(80))
        response = httpx.post(
            f"{url}/v1/documents", json={"name": f"note{number}.md", "text": text}, headers=acme
        )
        assert response.status_code == 202
        accepted.append(f"note{number}.md")
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) in STOPPED
    manifest = json.loads((index / "files.json").read_text())
    names = {entry.get("name") for entry in manifest["files"].values()}
    assert set(accepted) <= names


async def _mcp_documents(url: str, key: str, read: str | None) -> tuple[dict[str, str], Any]:
    """The resources the key lists (name → URI) and, for ``read``, that resource's JSON
    (or the error the server gave)."""
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        listed = {str(r.name): str(r.uri) for r in (await client.list_resources()).resources}
        if read is None:
            return listed, None
        try:
            result = await client.read_resource(read)
        except MCPError as exc:
            return listed, exc
        return listed, json.loads(result.contents[0].text)  # type: ignore[union-attr]


def test_documents_are_mcp_resources_scoped_by_key(served: str, keys: dict[str, str]) -> None:
    acme = {"Authorization": f"Bearer {keys['acme']}"}
    text = "Hangar nine holds the acme zeppelin. " * 30
    posted = httpx.post(
        f"{served}/v1/documents", json={"name": "hangar.md", "text": text}, headers=acme
    ).json()
    job = posted["jobs"][0]["id"]
    deadline = time.monotonic() + 30
    while httpx.get(f"{served}/v1/jobs/{job}", headers=acme).json()["status"] != "done":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    url = f"{served}/mcp"
    listed, _ = anyio.run(_mcp_documents, url, keys["acme"], None)
    assert "hangar.md" in listed
    assert "filters.md" not in listed  # the admin's (untagged) documents are not acme's
    hangar = listed["hangar.md"]
    assert hangar == "ragloom://documents/upload%3Aacme%2Fhangar.md"
    _, document = anyio.run(_mcp_documents, url, keys["acme"], hangar)
    assert document["id"] == "upload:acme/hangar.md"
    assert "".join(p["text"] for p in document["passages"]).count("zeppelin") >= 30
    starts = [p["start"] for p in document["passages"]]
    assert starts == sorted(starts)
    others, refused = anyio.run(_mcp_documents, url, keys["globex"], hangar)
    assert "hangar.md" not in others
    assert isinstance(refused, MCPError)
    assert "no document" in str(refused)
    everything, _ = anyio.run(_mcp_documents, url, keys["admin"], None)
    assert {"hangar.md", "filters.md"} <= set(everything)
