"""Installable subsets, proven: scripts/build_wheels.sh builds every distribution into a
wheelhouse, and three fresh virtual environments install a subset from it.

Every ``ragloom-*`` distribution must come from the wheelhouse (checked in pip's install
report); third-party dependencies come from the machine's package index as configured
for pip, as a user's would. Slow-ish (fresh venvs, real installs): marked ``install``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VERSION = (ROOT / "VERSION").read_text(encoding="utf-8").strip()
PACKAGES = sorted(path.parent for path in ROOT.glob("packages/*/pyproject.toml"))


def _run(command: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.pop("RAGLOOM_CHAT_BASE_URL", None)
    env.pop("OPENAI_API_KEY", None)
    result = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheelhouse")
    env = {**os.environ, "PYTHON": sys.executable}
    result = subprocess.run(
        ["bash", "scripts/build_wheels.sh", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return out


def _install(wheelhouse: Path, where: Path, *requirements: str) -> Path:
    """A fresh venv at ``where`` with ``requirements`` installed; returns its python."""
    venv.create(where, with_pip=True, clear=True)
    python = where / "bin" / "python"
    report = where / "install-report.json"
    _run(
        [str(python), "-m", "pip", "install", "-q", "--find-links", str(wheelhouse),
         "--report", str(report), *requirements],
        cwd=where,
    )  # fmt: skip
    installed = json.loads(report.read_text(encoding="utf-8"))["install"]
    for item in installed:
        name = item["metadata"]["name"]
        if name.startswith("ragloom-"):
            url = item["download_info"]["url"]
            assert url.startswith(wheelhouse.as_uri()), f"{name} not from the wheelhouse: {url}"
            assert item["metadata"]["version"] == VERSION, name
    return python


def test_every_package_takes_its_version_from_the_version_file() -> None:
    """One place for the version: each pyproject reads ../../VERSION through hatchling."""
    for package in PACKAGES:
        with (package / "pyproject.toml").open("rb") as file:
            project = tomllib.load(file)
        assert project["project"].get("dynamic") == ["version"], package.name
        assert "version" not in project["project"], package.name
        assert project["tool"]["hatch"]["version"]["path"] == "../../VERSION", package.name


@pytest.mark.install
@pytest.mark.slow
def test_wheelhouse_has_every_distribution(wheelhouse: Path) -> None:
    names = {wheel.name.split("-")[0] for wheel in wheelhouse.glob("ragloom_*.whl")}
    expected = set()
    for package in PACKAGES:
        with (package / "pyproject.toml").open("rb") as file:
            expected.add(tomllib.load(file)["project"]["name"].replace("-", "_"))
    assert names == expected
    assert all(f"-{VERSION}-" in wheel.name for wheel in wheelhouse.glob("ragloom_*.whl"))


@pytest.mark.install
@pytest.mark.slow
def test_core_alone_imports_without_heavy_modules(wheelhouse: Path, tmp_path: Path) -> None:
    python = _install(wheelhouse, tmp_path / "core", "ragloom-core")
    probe = (
        "import sys, ragloom.core\n"
        "from ragloom.core import InMemoryEmbeddingStore, EmbeddingStoreIngestor, BM25Index\n"
        "heavy = sorted({'onnxruntime', 'torch', 'httpx', 'tokenizers', 'transformers',"
        " 'psycopg'} & {m.split('.')[0] for m in sys.modules})\n"
        "print(heavy)\n"
    )
    assert _run([str(python), "-c", probe], cwd=tmp_path).stdout.strip() == "[]"
    pip_list = _run([str(python), "-m", "pip", "list", "--format=json"], cwd=tmp_path).stdout
    names = {item["name"] for item in json.loads(pip_list)}
    assert {n for n in names if n.startswith("ragloom")} == {"ragloom-core"}
    # httpx is core's one HTTP machinery (ragloom.core.kit.http): installed, but imported
    # only by a component that makes a call (the probe above checks it is not loaded).
    assert not names & {"onnxruntime", "torch", "tokenizers"}


@pytest.mark.install
@pytest.mark.slow
def test_core_with_pgvector_store_imports(wheelhouse: Path, tmp_path: Path) -> None:
    python = _install(wheelhouse, tmp_path / "pgvector", "ragloom-core", "ragloom-store-pgvector")
    probe = "from ragloom.stores.pgvector import PgVectorEmbeddingStore; print('ok')"
    assert _run([str(python), "-c", probe], cwd=tmp_path).stdout.strip() == "ok"


@pytest.mark.install
@pytest.mark.slow
def test_easy_rag_pulls_its_defaults_and_answers(wheelhouse: Path, tmp_path: Path) -> None:
    python = _install(wheelhouse, tmp_path / "easy", "ragloom-easy-rag")
    ragloom = str(python.parent / "ragloom")
    assert "ingest" in _run([ragloom, "--help"], cwd=tmp_path).stdout
    table = json.loads(_run([ragloom, "plugins", "--json"], cwd=tmp_path).stdout)
    embedding = table["ragloom.embedding_models"]["providers"]
    # chat-openai (an easy-rag dependency) registers its embedding model, used when named
    assert [(p["name"], p["active"]) for p in embedding] == [
        ("all-minilm-l6-v2", True),
        ("openai", False),
    ]
    parsers = table["ragloom.document_parsers"]["providers"]
    assert {"pdf", "office", "html"} <= {p["name"] for p in parsers}
    _run([ragloom, "plugins", "--check"], cwd=tmp_path)  # every default loads
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "hotel.md").write_text("Breakfast is served from 7 to 10 in the lobby.\n")
    (notes / "policy.md").write_text("Cancellation is free up to 24 hours before arrival.\n")
    index = str(tmp_path / "index")
    _run([ragloom, "ingest", str(notes), "--index", index], cwd=tmp_path)
    answer = _run([ragloom, "ask", "When is breakfast?", "--index", index], cwd=tmp_path)
    assert "hotel.md" in answer.stdout
