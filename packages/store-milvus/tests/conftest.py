"""Fixtures: one Milvus Lite database per test session, a fresh collection per test.

Milvus Lite (the native engine of ``milvus-lite`` 2.5) runs in a process pymilvus starts
for a local ``.db`` file, so no service script is needed; starting it takes about a second,
so the tests share one client and give each test its own collection.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pymilvus import MilvusClient  # type: ignore[import-untyped]

from ragloom.stores.milvus._registry import registry_name


@pytest.fixture(scope="session")
def milvus_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's Milvus Lite database file."""
    return tmp_path_factory.mktemp("milvus") / "ragloom.db"


@pytest.fixture(scope="session")
def milvus_client(milvus_db: Path) -> Iterator[MilvusClient]:
    """One client (and Milvus Lite process) for the session."""
    client = MilvusClient(str(milvus_db))
    yield client
    client.close()


@pytest.fixture
def collection_name(milvus_client: MilvusClient) -> Iterator[str]:
    """A fresh collection name, dropped after the test (with its kinds registry)."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    yield name
    for collection in (name, registry_name(name)):
        if milvus_client.has_collection(collection):
            milvus_client.drop_collection(collection)
