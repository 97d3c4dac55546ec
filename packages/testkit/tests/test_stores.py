"""ragloom.testkit.stores: store packages imported only when asked for; a missing one, an
unknown name or a pgvector server that does not answer each say what to do."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ragloom.core import InMemoryEmbeddingStore
from ragloom.core.errors import InvalidArgumentError, PluginError
from ragloom.testkit.stores import STORES, open_store, store_options


def test_importing_the_helper_imports_no_store_package() -> None:
    code = (
        "import sys, ragloom.testkit.stores as s; "
        "print(sorted(m for m in sys.modules if m.startswith(('ragloom.stores', 'psycopg'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("name", "module", "distribution"),
    [
        ("pgvector", "ragloom.stores.pgvector", "ragloom-store-pgvector"),
        ("milvus", "ragloom.stores.milvus", "ragloom-store-milvus"),
        ("qdrant", "ragloom.stores.qdrant", "ragloom-store-qdrant"),
    ],
)
def test_a_missing_package_names_the_distribution_to_install(
    name: str, module: str, distribution: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # what `import` meets when not installed
    with (
        pytest.raises(
            PluginError, match=rf"store '{name}' needs {module}.*pip install {distribution}"
        ),
        open_store(name, 8, tmp_path),
    ):
        pass
    with (
        pytest.raises(PluginError, match=rf"pip install {distribution}"),
        store_options(name, tmp_path),
    ):
        pass


def test_an_unknown_name_lists_the_known_ones(tmp_path: Path) -> None:
    with (
        pytest.raises(
            InvalidArgumentError, match=r"store 'chroma'.*memory, pgvector, milvus, qdrant"
        ),
        open_store("chroma", 8, tmp_path),
    ):
        pass
    assert STORES == ("memory", "pgvector", "milvus", "qdrant")


def test_the_memory_store_is_a_new_empty_one(tmp_path: Path) -> None:
    with open_store("memory", 8, tmp_path) as first, open_store("memory", 8, tmp_path) as second:
        assert isinstance(first, InMemoryEmbeddingStore)
        assert first is not second
        assert len(first) == 0
