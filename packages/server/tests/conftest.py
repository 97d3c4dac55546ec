"""A real index of three docs/ pages, built once by `ragloom ingest`; each test gets a copy."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import cast

import httpx
import pytest
from fastapi.testclient import TestClient

from ragloom.core import EmbeddingModel, plugins
from ragloom.easy_rag.assistant import CHAT_ENV_VARS
from ragloom.easy_rag.cli import main as ragloom
from ragloom.server import ApiKey, IndexService, ServerSettings, create_app

DOCS = Path(__file__).resolve().parents[3] / "docs"
CORPUS = ("documents.md", "filters.md", "index.md")
ADMIN_KEY = "admin-key-0123456789"
ACME_KEY = "acme-key-0123456789ab"
GLOBEX_KEY = "globex-key-0123456789"
# The MCP transport's DNS-rebinding guard accepts loopback host names only.
BASE_URL = "http://127.0.0.1:8000"


@pytest.fixture(autouse=True)
def _no_ambient_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*CHAT_ENV_VARS, "OPENAI_BASE_URL", "RAGLOOM_SERVER_CONFIG"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def embedding_model() -> EmbeddingModel:
    return cast(EmbeddingModel, plugins.load_default(plugins.EMBEDDING_MODELS))


@pytest.fixture(scope="session")
def built_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    corpus = tmp_path_factory.mktemp("corpus")
    for name in CORPUS:
        shutil.copy(DOCS / name, corpus / name)
    index = tmp_path_factory.mktemp("built") / "index"
    assert ragloom(["ingest", str(corpus), "--index", str(index), "--quiet"]) == 0
    return index


@pytest.fixture(scope="session")
def copy_index(built_index: Path) -> Callable[[Path], Path]:
    """Copies the built index (without its lock) to ``<folder>/index``, a test's own."""

    def copy(folder: Path) -> Path:
        index = folder / "index"
        shutil.copytree(built_index, index, ignore=shutil.ignore_patterns(".lock"))
        return index

    return copy


@pytest.fixture
def index_dir(copy_index: Callable[[Path], Path], tmp_path: Path) -> Path:
    return copy_index(tmp_path)


def keyed_settings(index: Path, **overrides: object) -> ServerSettings:
    """Settings with an admin key and one key for each of the tenants acme and globex, no
    rate limit (tests poll in tight loops; test_limits covers the limit)."""
    keys = [
        ApiKey.model_validate({"key": ADMIN_KEY, "name": "admin"}),
        ApiKey.model_validate({"key": ACME_KEY, "tenant": "acme", "name": "acme"}),
        ApiKey.model_validate({"key": GLOBEX_KEY, "tenant": "globex", "name": "globex"}),
    ]
    return ServerSettings.load(index=index, api_keys=keys, **{"rate_limit": 0, **overrides})


@pytest.fixture
def service(index_dir: Path, embedding_model: EmbeddingModel) -> Iterator[IndexService]:
    running = IndexService(keyed_settings(index_dir), embedding_model=embedding_model)
    try:
        yield running
    finally:
        running.close()


@pytest.fixture
def client(service: IndexService) -> Iterator[TestClient]:
    with TestClient(create_app(service.settings, service), base_url=BASE_URL) as test_client:
        yield test_client


@pytest.fixture
def headers() -> dict[str, dict[str, str]]:
    """The Authorization header of each key, by name: admin, acme, globex."""
    keys = {"admin": ADMIN_KEY, "acme": ACME_KEY, "globex": GLOBEX_KEY}
    return {name: {"Authorization": f"Bearer {key}"} for name, key in keys.items()}


@pytest.fixture(scope="session")
def keys() -> dict[str, str]:
    """The raw keys by name, and ``env``: all three as RAGLOOM_SERVER_API_KEYS JSON."""
    raw = {"admin": ADMIN_KEY, "acme": ACME_KEY, "globex": GLOBEX_KEY}
    listed = [{"key": k, "name": n, "tenant": None if n == "admin" else n} for n, k in raw.items()]
    return {**raw, "env": json.dumps(listed)}


Served = tuple[subprocess.Popen[bytes], str]
RAGLOOM = [sys.executable, "-m", "ragloom.easy_rag.cli"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def serve(keys: dict[str, str]) -> Callable[..., Served]:
    """Starts ``ragloom serve`` on ``index`` (a free port, the three keys, ``env`` added)
    and returns the process and its URL once it answers /readyz."""

    def start(index: Path, log: Path, **env: str) -> Served:
        port = free_port()
        environment = {**os.environ, "RAGLOOM_SERVER_API_KEYS": keys["env"], **env}
        process = subprocess.Popen(
            [*RAGLOOM, "serve", "--index", str(index), "--port", str(port)],
            env=environment,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise AssertionError(f"ragloom serve exited: {log.read_text()}")
            try:
                if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                    return process, url
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        process.kill()
        raise AssertionError(f"ragloom serve did not become ready: {log.read_text()}")

    return start
