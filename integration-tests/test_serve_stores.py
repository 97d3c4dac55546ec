"""Cross-package: ``ragloom serve`` over pgvector, Qdrant and Milvus chosen by configuration.

The store comes from ``RAGLOOM_SERVER_STORE`` (JSON: ``kind`` is the store's entry-point
name, ``options`` its keyword arguments), as an operator sets it. Each store: two tenants
upload through the documents API, each key retrieves its own documents only, a filter
naming the other tenant finds nothing, and the tenant filter runs in the store's query:
with ``max_results`` 1 the other tenant's better match would take the only place if the
tenant were filtered after the search, so the caller's own document coming back shows the
store applied it. pgvector needs its service (`bash scripts/services/pgvector.sh start`);
Qdrant's local mode and Milvus Lite run in-process on temporary files.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from ragloom.easy_rag.store_config import MARKER
from ragloom.server import ApiKey, IndexService, ServerSettings, create_app
from ragloom.testkit.stores import STORES, store_options

ACME = "acme-key-0123456789ab"
GLOBEX = "globex-key-0123456789"
BASE_URL = "http://127.0.0.1:8000"

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # the real embedding model


@pytest.fixture(params=sorted(set(STORES) - {"memory"}))
def served(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, TestClient]]:
    kind: str = request.param
    with store_options(kind, tmp_path, collection="serve") as options:
        monkeypatch.setenv("RAGLOOM_SERVER_STORE", json.dumps({"kind": kind, "options": options}))
        keys = [
            ApiKey.model_validate({"key": ACME, "tenant": "acme"}),
            ApiKey.model_validate({"key": GLOBEX, "tenant": "globex"}),
        ]
        settings = ServerSettings.load(index=tmp_path / "index", api_keys=keys, rate_limit=0)
        assert settings.store.kind == kind
        service = IndexService(settings)
        try:
            with TestClient(create_app(settings, service), base_url=BASE_URL) as client:
                yield kind, client
        finally:
            service.close()  # before store_options drops pgvector's table


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def upload(client: TestClient, key: str, name: str, text: str) -> None:
    answer = client.post("/v1/documents", json={"name": name, "text": text}, headers=bearer(key))
    assert answer.status_code == 202, answer.text
    (job,) = answer.json()["jobs"]
    for _ in range(600):
        status = client.get(f"/v1/jobs/{job['id']}", headers=bearer(key)).json()
        if status["status"] not in {"queued", "running"}:
            break
        time.sleep(0.05)
    assert status["status"] == "done", status


def retrieve(client: TestClient, key: str, **body: Any) -> list[dict[str, Any]]:
    answer = client.post("/v1/retrieve", json=body, headers=bearer(key))
    assert answer.status_code == 200, answer.text
    data: list[dict[str, Any]] = answer.json()["data"]
    return data


def test_serve_on_a_configured_store_keeps_tenants_apart(
    served: tuple[str, TestClient], tmp_path: Path
) -> None:
    kind, client = served
    question = "How do lighthouse keepers trim the lamp wick at dusk?"
    upload(client, GLOBEX, "lighthouse.md", question + " Globex keepers trim it with scissors.")
    upload(client, ACME, "bakery.md", "Acme bakers proof sourdough overnight beside a warm lamp.")
    assert json.loads((tmp_path / "index" / MARKER).read_text())["kind"] == kind

    own = retrieve(client, ACME, query=question, max_results=1, mode="dense")
    assert [hit["metadata"]["tenant"] for hit in own] == ["acme"]
    assert own[0]["source"] == "bakery.md"
    for mode in ("dense", "hybrid", "keyword"):
        hits = retrieve(client, ACME, query=question, max_results=5, mode=mode)
        assert {hit["metadata"]["tenant"] for hit in hits} == {"acme"}, mode
        widened = retrieve(
            client, ACME, query=question, filter="tenant == 'globex'", max_results=5, mode=mode
        )
        assert widened == [], mode
    theirs = retrieve(client, GLOBEX, query=question, max_results=5)
    assert {hit["source"] for hit in theirs} == {"lighthouse.md"}

    listed = client.get("/v1/documents", headers=bearer(ACME)).json()["data"]
    assert [entry["name"] for entry in listed] == ["bakery.md"]
    other = client.get("/v1/documents", headers=bearer(GLOBEX)).json()["data"][0]["id"]
    refused = client.delete("/v1/documents", params={"id": other}, headers=bearer(ACME))
    assert refused.status_code == 404
    assert retrieve(client, GLOBEX, query=question, max_results=1)[0]["source"] == "lighthouse.md"
