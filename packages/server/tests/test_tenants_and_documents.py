"""Keys bound to tenants, and the documents API (upload, status, list, delete), in-process."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import ragloom.server.service as service_module
from ragloom.core import EmbeddingModel, metadata_key
from ragloom.core.ingestor import DOCUMENT_ID
from ragloom.easy_rag.index import MANIFEST
from ragloom.server import IndexService, ServerConfigError, ServerSettings
from ragloom.server.service import Job, Principal, safe_filename

Headers = dict[str, dict[str, str]]
ACME_TEXT = "Project Falcon ships the turbo encabulator to acme customers in March."
GLOBEX_TEXT = "Project Falcon is cancelled at globex; the encabulator budget moves to Q4."


def wait(client: TestClient, job: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    """The job once it has finished (the worker runs it in the background)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = client.get(f"/v1/jobs/{job['id']}", headers=headers).json()
        if status["status"] not in {"queued", "running"}:
            return status
        time.sleep(0.05)
    raise AssertionError(f"job {job['id']} did not finish")


def upload(client: TestClient, headers: dict[str, str], name: str, text: str) -> dict[str, Any]:
    response = client.post("/v1/documents", json={"name": name, "text": text}, headers=headers)
    assert response.status_code == 202, response.text
    return wait(client, response.json()["jobs"][0], headers)


def sources(client: TestClient, headers: dict[str, str], query: str, **extra: Any) -> set[str]:
    body = {"query": query, "max_results": 10, **extra}
    response = client.post("/v1/retrieve", json=body, headers=headers)
    assert response.status_code == 200, response.text
    return {(d["metadata"].get("tenant"), d["source"]) for d in response.json()["data"]}


def test_requests_without_a_valid_key_get_401(client: TestClient) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong-key-0123456789"}, {"Authorization": "x"}):
        response = client.post("/v1/retrieve", json={"query": "x"}, headers=headers)
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        assert "API key" in response.json()["error"]["message"]
    assert client.get("/v1/models").status_code == 401
    assert client.get("/healthz").status_code == 200


def test_each_tenant_sees_only_its_own_documents(client: TestClient, headers: Headers) -> None:
    assert upload(client, headers["acme"], "falcon.md", ACME_TEXT)["status"] == "done"
    assert upload(client, headers["globex"], "falcon.md", GLOBEX_TEXT)["status"] == "done"
    acme = sources(client, headers["acme"], "Project Falcon encabulator")
    assert acme == {("acme", "falcon.md")}
    # a filter cannot widen the scope: it is ANDed with the key's tenant
    widened = sources(
        client, headers["acme"], "Project Falcon", filter="tenant == 'globex' or tenant == 'acme'"
    )
    assert widened == {("acme", "falcon.md")}
    assert sources(client, headers["acme"], "Falcon", filter="tenant == 'globex'") == set()
    # the admin key sees both tenants and the documents ragloom ingest added
    admin = sources(client, headers["admin"], "Project Falcon encabulator")
    assert {("acme", "falcon.md"), ("globex", "falcon.md")} <= admin
    chat = client.post(
        "/v1/chat/completions",
        json={"model": "ragloom", "messages": [{"role": "user", "content": "Project Falcon?"}]},
        headers=headers["globex"],
    ).json()
    assert {s["metadata"].get("tenant") for s in chat["ragloom_sources"]} == {"globex"}
    listed = client.get("/v1/documents", headers=headers["acme"]).json()["data"]
    assert [(d["name"], d["tenant"]) for d in listed] == [("falcon.md", "acme")]


def test_other_tenants_documents_and_jobs_are_not_found(
    client: TestClient, headers: Headers
) -> None:
    job = upload(client, headers["acme"], "secret.md", ACME_TEXT)
    assert client.get(f"/v1/jobs/{job['id']}", headers=headers["globex"]).status_code == 404
    acme_id = client.get("/v1/documents", headers=headers["acme"]).json()["data"][0]["id"]
    gone = client.delete("/v1/documents", params={"id": acme_id}, headers=headers["globex"])
    assert gone.status_code == 404
    assert sources(client, headers["acme"], "Falcon") == {("acme", "secret.md")}


def test_reupload_is_a_no_op_and_delete_removes(client: TestClient, headers: Headers) -> None:
    acme = headers["acme"]
    assert upload(client, acme, "falcon.md", ACME_TEXT)["segments"] >= 1
    assert upload(client, acme, "falcon.md", ACME_TEXT)["status"] == "unchanged"
    edited = upload(client, acme, "falcon.md", ACME_TEXT.replace("March", "May"))
    assert edited["status"] == "done"
    texts = client.post(
        "/v1/retrieve", json={"query": "Falcon ships", "max_results": 10}, headers=acme
    ).json()["data"]
    assert [t["text"] for t in texts] == [ACME_TEXT.replace("March", "May")]
    [entry] = client.get("/v1/documents", headers=acme).json()["data"]
    assert client.delete("/v1/documents", params={"id": entry["id"]}, headers=acme).json() == {
        "deleted": entry["id"]
    }
    assert client.get("/v1/documents", headers=acme).json()["data"] == []
    assert sources(client, acme, "Falcon") == set()


def test_multipart_upload_of_files(client: TestClient, headers: Headers) -> None:
    files = [
        ("files", ("../../etc/notes.md", b"# Notes\n\nThe falcon nests in spring.", "text/plain")),
        ("files", ("data.bin", b"\x00\x01\x02binary", "application/octet-stream")),
    ]
    response = client.post("/v1/documents", files=files, headers=headers["acme"])
    assert response.status_code == 202, response.text
    jobs = [wait(client, job, headers["acme"]) for job in response.json()["jobs"]]
    assert jobs[0]["source"] == "notes.md"  # the path is dropped, never followed
    assert jobs[0]["status"] == "done"
    assert jobs[1]["status"] == "failed"
    assert jobs[1]["error"]
    assert sources(client, headers["acme"], "falcon nests") == {("acme", "notes.md")}


def test_upload_limits_and_bad_names(client: TestClient, headers: Headers) -> None:
    acme = headers["acme"]
    big = client.post(
        "/v1/documents", files=[("files", ("big.txt", b"x" * (21 << 20)))], headers=acme
    )
    assert big.status_code == 413
    for name in (".env", "..", "a\x00b.md", "x" * 300):
        response = client.post("/v1/documents", json={"name": name, "text": "t"}, headers=acme)
        assert response.status_code == 400, (name, response.text)
    wrong_type = client.post(
        "/v1/documents", content=b"x", headers={**acme, "content-type": "text/plain"}
    )
    assert wrong_type.status_code == 415


def test_safe_filename_keeps_only_the_base_name() -> None:
    assert safe_filename("C:\\Users\\me\\report.pdf") == "report.pdf"
    assert safe_filename("../../etc/passwd") == "passwd"
    with pytest.raises(ValueError, match="control"):
        safe_filename("bad\nname.md")


def test_queries_during_ingestion_see_old_or_new_state(
    client: TestClient, headers: Headers
) -> None:
    """While a long document is re-ingested, every query sees all old or all new segments."""
    acme = headers["acme"]
    old = " ".join(f"Old paragraph {i} about the falcon project." for i in range(120))
    new = " ".join(f"New paragraph {i} about the falcon project." for i in range(120))
    upload(client, acme, "long.md", old)
    seen: list[set[str]] = []
    stop = threading.Event()

    def query() -> None:
        while not stop.is_set():
            data = client.post(
                "/v1/retrieve",
                json={"query": "paragraph falcon project", "max_results": 20},
                headers=acme,
            ).json()["data"]
            seen.append({d["text"].split()[0] for d in data})

    reader = threading.Thread(target=query)
    reader.start()
    try:
        assert upload(client, acme, "long.md", new)["status"] == "done"
    finally:
        stop.set()
        reader.join()
    assert seen
    assert all(kinds in ({"Old"}, {"New"}) for kinds in seen), seen


def test_close_finishes_accepted_uploads_and_saves(
    index_dir: Path, embedding_model: EmbeddingModel
) -> None:
    settings = ServerSettings.load(index=index_dir)
    service = IndexService(settings, embedding_model=embedding_model)
    jobs = [
        service.submit(Principal("t", "acme"), f"n{i}.md", f"note {i} falcon") for i in range(5)
    ]
    service.close()  # returns only once the queue is drained and the index saved
    assert {job.status for job in jobs} == {"done"}
    reopened = IndexService(settings, embedding_model=embedding_model)
    try:
        assert len(reopened.sources(Principal("t", "acme"))) == 5
    finally:
        reopened.close()


def test_configuration_errors_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(ServerConfigError, match=r"api_keys\.0\.tenant"):
        ServerSettings.load(api_keys=[{"key": "k" * 20, "tenant": "../x"}])
    with pytest.raises(ServerConfigError, match=r"api_keys\.0\.key"):
        ServerSettings.load(api_keys=[{"key": "short"}])
    config = tmp_path / "server.toml"
    config.write_text('port = "eighty"\n')
    with pytest.raises(ServerConfigError, match="port"):
        ServerSettings.load(config)
    config.write_text('max_results = 7\n[[api_keys]]\nkey = "0123456789abcdef"\ntenant = "acme"\n')
    loaded = ServerSettings.load(config)
    assert (loaded.max_results, loaded.api_keys[0].tenant) == (7, "acme")


def finished(job: Job) -> Job:
    """``job`` once the worker has finished it."""
    deadline = time.monotonic() + 30
    while job.status in {"queued", "running"}:
        assert time.monotonic() < deadline, f"job {job.id} did not finish"
        time.sleep(0.02)
    return job


def test_a_job_is_done_only_once_its_save_completed(
    service: IndexService, index_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash while the index saves must not lose a job the client already saw ``done``
    (before: ``done`` was set just ahead of the save)."""
    saving, release = threading.Event(), threading.Event()
    real_save = service.index.save

    def held_save() -> None:
        saving.set()
        assert release.wait(60)
        real_save()

    monkeypatch.setattr(service.index, "save", held_save)
    job = service.submit(Principal("admin", None), "held.md", ACME_TEXT)
    try:
        assert saving.wait(60)
        assert job.status == "running"
    finally:
        release.set()
    assert finished(job).status == "done"
    assert "upload:-/held.md" in json.loads((index_dir / MANIFEST).read_text())["files"]


def test_a_failed_save_fails_the_job_and_says_why(
    service: IndexService, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_save() -> None:
        raise OSError("No space left on device (test)")

    real_save = service.index.save
    monkeypatch.setattr(service.index, "save", failing_save)
    job = finished(service.submit(Principal("admin", None), "unsaved.md", ACME_TEXT))
    monkeypatch.setattr(service.index, "save", real_save)  # the fixture's close() saves
    assert job.status == "failed"
    assert job.error is not None
    assert "not saved" in job.error
    assert "No space left on device" in job.error


POISON = "poison-pill-segment"


def poison_keywords(service: IndexService, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the keyword index raise on segments holding POISON (a write failing halfway:
    the vectors are written first)."""
    keywords = service.index.keywords
    real_add_all = keywords.add_all

    def add_all(segments: Any, *args: Any, **kwargs: Any) -> Any:
        if any(POISON in s.text for s in segments):
            raise RuntimeError("keyword index corrupted (test)")
        return real_add_all(segments, *args, **kwargs)

    monkeypatch.setattr(keywords, "add_all", add_all)


def test_a_non_ragloom_error_while_embedding_fails_the_job(
    client: TestClient,
    headers: Headers,
    service: IndexService,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An exception outside the core hierarchy (a model's own bug) ends the job ``failed``
    with its type and message, not ``running`` forever; the server keeps serving."""
    model = service.embedding_model
    real_embed_all = model.embed_all

    def embed_all(texts: Any) -> Any:
        if any(POISON in getattr(t, "text", t) for t in texts):
            raise ValueError("tensor shape mismatch (test)")
        return real_embed_all(texts)

    monkeypatch.setattr(model, "embed_all", embed_all)
    acme = headers["acme"]
    job = upload(client, acme, "broken.md", f"Project Falcon {POISON} notes.")
    assert job["status"] == "failed"
    assert job["error"] == "ValueError: tensor shape mismatch (test)"
    assert client.get("/healthz").status_code == 200
    assert upload(client, acme, "fine.md", ACME_TEXT)["status"] == "done"
    assert sources(client, acme, "Project Falcon encabulator") == {("acme", "fine.md")}
    assert [d["name"] for d in client.get("/v1/documents", headers=acme).json()["data"]] == [
        "fine.md"
    ]


def test_a_non_ragloom_error_while_writing_leaves_the_index_as_it_was(
    client: TestClient,
    headers: Headers,
    service: IndexService,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A re-upload whose write fails halfway (the vectors written, the keyword index
    raising) is rolled back: queries see the old document, dense and keyword alike."""
    acme = headers["acme"]
    assert upload(client, acme, "falcon.md", ACME_TEXT)["status"] == "done"
    poison_keywords(service, monkeypatch)
    job = upload(client, acme, "falcon.md", f"{ACME_TEXT} {POISON}")
    assert job["status"] == "failed"
    assert job["error"] == "RuntimeError: keyword index corrupted (test)"
    for mode in ("hybrid", "dense", "keyword"):
        data = client.post(
            "/v1/retrieve",
            json={"query": "Project Falcon encabulator", "max_results": 10, "mode": mode},
            headers=acme,
        ).json()["data"]
        assert [d["text"] for d in data] == [ACME_TEXT], mode
    [entry] = client.get("/v1/documents", headers=acme).json()["data"]
    assert entry["sha256"] == hashlib.sha256(ACME_TEXT.encode()).hexdigest()
    assert client.get("/healthz").status_code == 200
    assert upload(client, acme, "falcon.md", ACME_TEXT + " Again.")["status"] == "done"


def test_the_undo_of_a_failed_reupload_restores_a_document_larger_than_a_page(
    client: TestClient,
    headers: Headers,
    service: IndexService,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The undo captures every segment of the old document, paging past ``UNDO_PAGE``
    (lowered to 4 for a 12-segment document; before, one search of at most 10,000
    segments: the rest was lost)."""
    monkeypatch.setattr(service_module, "UNDO_PAGE", 4)
    acme = headers["acme"]
    text = "\n\n".join(
        f"Paragraph {i}: the falcon note number {i} describes encabulator part {i}. " * 12
        for i in range(12)
    )
    job = upload(client, acme, "long.md", text)
    assert job["status"] == "done"
    assert job["segments"] == 12
    key = "upload:acme/long.md"
    of_document = metadata_key(DOCUMENT_ID).is_equal_to(key)

    def stored() -> dict[str, tuple[str, list[float]]]:
        matches = service._search(of_document, 1000)
        return {
            m.embedding_id: (m.embedded.text, m.embedding.to_list()) for m in matches if m.embedded
        }

    old = stored()
    assert len(old) == 12
    poison_keywords(service, monkeypatch)
    shorter = "\n\n".join(f"Paragraph {i} was rewritten: {POISON}." for i in range(3))
    assert upload(client, acme, "long.md", shorter)["status"] == "failed"
    assert stored() == old
    found = service.index.keywords.search("encabulator part 11", max_results=50, filter=of_document)
    assert len(found) == 12
