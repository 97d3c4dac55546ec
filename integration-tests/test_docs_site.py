"""The docs site builds with ``mkdocs build --strict`` (broken links, missing pages and
docstring errors fail it), with the API reference of ragloom.core and the package pages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    reference = (site / "reference" / "index.html").read_text(encoding="utf-8")
    for name in ("EmbeddingStoreIngestor", "InMemoryEmbeddingStore", "RagAssistant"):
        assert f'id="ragloom.core.{name}"' in reference, name
    assert (site / "splitting" / "index.html").is_file()
    assert (site / "packages" / "store-pgvector" / "index.html").is_file()
