"""Clients' own metadata on uploads: validated, never the tenant, filterable in retrieval
and chat, and part of what makes a re-upload a no-op."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient

Headers = dict[str, dict[str, str]]
FALCON = "The falcon project ships the turbo encabulator in March."
EAGLE = "The eagle project ships the turbo encabulator in June."


def finished(client: TestClient, response: Any, headers: dict[str, str]) -> dict[str, Any]:
    assert response.status_code == 202, response.text
    job = response.json()["jobs"][0]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status: dict[str, Any] = client.get(f"/v1/jobs/{job['id']}", headers=headers).json()
        if status["status"] not in {"queued", "running"}:
            return status
        time.sleep(0.05)
    raise AssertionError(f"job {job['id']} did not finish")


def upload(
    client: TestClient, headers: dict[str, str], name: str, text: str, metadata: dict[str, Any]
) -> dict[str, Any]:
    body = {"name": name, "text": text, "metadata": metadata}
    return finished(client, client.post("/v1/documents", json=body, headers=headers), headers)


def retrieved(client: TestClient, headers: dict[str, str], filter: str) -> list[dict[str, Any]]:
    body = {"query": "turbo encabulator project", "max_results": 10, "filter": filter}
    response = client.post("/v1/retrieve", json=body, headers=headers)
    assert response.status_code == 200, response.text
    data: list[dict[str, Any]] = response.json()["data"]
    return data


def test_metadata_is_stored_and_filterable(client: TestClient, headers: Headers) -> None:
    acme = headers["acme"]
    falcon = {"project": "falcon", "year": 2024, "draft": False, "weight": 0.5}
    assert upload(client, acme, "falcon.md", FALCON, falcon)["status"] == "done"
    eagle = upload(client, acme, "eagle.md", EAGLE, {"project": "eagle", "year": 2025})
    assert eagle["status"] == "done"

    [hit] = retrieved(client, acme, "project == 'falcon'")
    assert hit["source"] == "falcon.md"
    assert hit["metadata"] | falcon == hit["metadata"]
    assert hit["metadata"]["tenant"] == "acme"
    assert [h["source"] for h in retrieved(client, acme, "year >= 2025")] == ["eagle.md"]

    chat = client.post(
        "/v1/chat/completions",
        json={
            "model": "ragloom",
            "messages": [{"role": "user", "content": "When does the encabulator ship?"}],
            "ragloom": {"filter": "project == 'eagle'"},
        },
        headers=acme,
    )
    assert chat.status_code == 200, chat.text
    assert {s["source"] for s in chat.json()["ragloom_sources"]} == {"eagle.md"}

    listed = {
        d["name"]: d["metadata"] for d in client.get("/v1/documents", headers=acme).json()["data"]
    }
    assert listed == {"eagle.md": {"project": "eagle", "year": 2025}, "falcon.md": falcon}
    # another tenant's filter on the same metadata finds nothing of acme's
    assert retrieved(client, headers["globex"], "project == 'falcon'") == []


def test_same_bytes_with_new_metadata_are_reingested(client: TestClient, headers: Headers) -> None:
    acme = headers["acme"]
    assert upload(client, acme, "falcon.md", FALCON, {"stage": "draft"})["status"] == "done"
    assert upload(client, acme, "falcon.md", FALCON, {"stage": "draft"})["status"] == "unchanged"
    assert upload(client, acme, "falcon.md", FALCON, {"stage": "final"})["status"] == "done"
    assert retrieved(client, acme, "stage == 'draft'") == []
    assert [h["source"] for h in retrieved(client, acme, "stage == 'final'")] == ["falcon.md"]


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({"tenant": "globex"}, "'tenant' is set by the server"),
        ({"document_id": "upload:globex/x.md"}, "set by the server"),
        ({"file_name": "other.md"}, "set by the server"),
        ({"tags": ["a", "b"]}, "metadata.tags"),
        ({"nested": {"a": 1}}, "metadata.nested"),
        ({"note": "x" * 1025}, "at most 1024 characters"),
        ({f"k{i}": i for i in range(33)}, "at most 32 items"),
        ({"bad key": 1}, "use 1-64 letters"),
        ({"": 1}, "use 1-64 letters"),
    ],
)
def test_bad_metadata_is_a_400_naming_the_field(
    client: TestClient, headers: Headers, metadata: dict[str, Any], message: str
) -> None:
    body = {"name": "x.md", "text": FALCON, "metadata": metadata}
    response = client.post("/v1/documents", json=body, headers=headers["acme"])
    assert response.status_code == 400, response.text
    assert message in response.json()["error"]["message"]


def test_multipart_uploads_carry_metadata(client: TestClient, headers: Headers) -> None:
    acme = headers["acme"]
    files = [("files", ("notes.md", b"# Notes\n\nThe falcon nests in spring.", "text/plain"))]
    sent = client.post(
        "/v1/documents",
        files=files,
        data={"metadata": json.dumps({"project": "falcon"})},
        headers=acme,
    )
    assert finished(client, sent, acme)["status"] == "done"
    [hit] = retrieved(client, acme, "project == 'falcon'")
    assert hit["source"] == "notes.md"
    forged = client.post(
        "/v1/documents",
        files=files,
        data={"metadata": json.dumps({"tenant": "globex"})},
        headers=acme,
    )
    assert forged.status_code == 400
    assert "'tenant' is set by the server" in forged.json()["error"]["message"]
    broken = client.post("/v1/documents", files=files, data={"metadata": "{"}, headers=acme)
    assert broken.status_code == 400
