"""A hostile store marker (``vector-store.json``) in an index directory from a stranger.

The marker may name the store kind and the names of the data inside it (collection,
table, schema), never where to connect nor how the store behaves. A marker naming an
internal address, a local path or a setting is refused naming the file and the key, and
nothing is connected to: a listening socket on 127.0.0.1 records every connection.
A malformed marker (not JSON, wrong types, huge, deeply nested, a kind not installed)
is an error naming the file, never a traceback.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragloom.core.errors import RagIndexError, RagloomError
from ragloom.easy_rag.cli import EXIT_INDEX, EXIT_USAGE, main
from ragloom.easy_rag.store_config import MARKER, MARKER_BYTES, open_index
from ragloom.testkit.stores import store_options

pytestmark = pytest.mark.integration  # the shared pgvector service for the user's own store


class Trap:
    """A TCP listener on 127.0.0.1 that counts the connections it is offered."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.socket.getsockname()[1]
        self.connections = 0
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.connections += 1
            connection.close()

    def close(self) -> None:
        self.socket.close()


@pytest.fixture
def trap() -> Iterator[Trap]:
    listener = Trap()
    yield listener
    listener.close()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An in-memory index of one file; each test copies it and swaps its store for a
    marker (the manifest and keyword index stay, as in a directory built on a store)."""
    root = tmp_path_factory.mktemp("marker")
    corpus = root / "corpus"
    corpus.mkdir()
    (corpus / "tides.md").write_text("The moon raises the tides twice a day.", encoding="utf-8")
    assert main(["ingest", str(corpus), "--index", str(root / "index"), "--quiet"]) == 0
    return root / "index"


def hostile(built: Path, tmp_path: Path, marker: bytes | dict[str, Any]) -> Path:
    index = tmp_path / "stranger"
    shutil.copytree(built, index)
    shutil.rmtree(index / "store")
    data = marker if isinstance(marker, bytes) else json.dumps(marker).encode()
    (index / MARKER).write_bytes(data)
    return index


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


TARGETS = [  # (kind, option, value: {port} is the trap's)
    ("pgvector", "connection", "postgresql://ragloom@127.0.0.1:{port}/rag"),
    ("pgvector", "connection", "host=127.0.0.1 port={port} dbname=rag"),
    ("qdrant", "url", "http://127.0.0.1:{port}"),
    ("qdrant", "location", "http://127.0.0.1:{port}"),
    ("milvus", "uri", "http://127.0.0.1:{port}"),
    ("azure-ai-search", "endpoint", "https://127.0.0.1:{port}"),
]


@pytest.mark.parametrize(("kind", "option", "value"), TARGETS)
def test_a_marker_naming_an_internal_address_is_never_connected_to(
    built: Path,
    tmp_path: Path,
    trap: Trap,
    capsys: pytest.CaptureFixture[str],
    kind: str,
    option: str,
    value: str,
) -> None:
    options = {option: value.format(port=trap.port), "collection": "docs"}
    index = hostile(built, tmp_path, {"kind": kind, "options": options})
    for mode in ("dense", "hybrid", "keyword"):
        code, err = run(capsys, "query", "tides", "--index", str(index), "--mode", mode)
        assert code == EXIT_INDEX, (mode, err)
        assert str(index / MARKER) in err, mode
        assert f"option {option!r} is not one a marker may hold" in err, mode
        assert "Traceback" not in err
    # ragloom serve's path, with the user's own options: still refused, still no connection
    with pytest.raises(RagIndexError, match=f"{MARKER}: option {option!r}"):
        open_index(index, kind, {"collection": "docs"}, 384)
    assert trap.connections == 0


def test_the_users_own_connection_does_not_launder_a_hostile_marker(
    built: Path, tmp_path: Path, trap: Trap, capsys: pytest.CaptureFixture[str]
) -> None:
    """With the user's own pgvector given, a marker that also names the trap is refused
    (not merged, not overridden silently)."""
    with store_options("pgvector", tmp_path, collection="marker") as own:
        marker = {"kind": "pgvector", "options": {"connection": f"host=127.0.0.1 port={trap.port}"}}
        index = hostile(built, tmp_path, marker)
        given = f"--store-option=connection={own['connection']}"
        code, err = run(capsys, "query", "tides", "--index", str(index), given)
        assert code == EXIT_INDEX, err
        assert f"{index / MARKER}: option 'connection'" in err
    assert trap.connections == 0


@pytest.mark.parametrize(("kind", "option"), [("qdrant", "path"), ("milvus", "uri")])
def test_a_marker_naming_a_local_path_is_refused(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, option: str
) -> None:
    victim = tmp_path / "victim" / ("data.db" if kind == "milvus" else "qdrant")
    index = hostile(built, tmp_path, {"kind": kind, "options": {option: str(victim)}})
    code, err = run(capsys, "query", "tides", "--index", str(index))
    assert code == EXIT_INDEX, err
    assert f"{index / MARKER}: option {option!r}" in err
    assert not (tmp_path / "victim").exists()


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("drop_table_first", True),
        ("create_extension", True),
        ("create_table", True),
        ("create_collection", True),
        ("timeout", 1e9),  # a deadline the user never set
        ("pool_size", 100_000),
        ("ef_search", 10**9),
        ("index_params", {"M": 10**9}),
        ("api_key", "stolen"),
        ("dimension", 3),
        ("metadata_schema", {"tenant": "str"}),
    ],
)
def test_a_marker_holding_a_setting_is_refused(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: object
) -> None:
    index = hostile(built, tmp_path, {"kind": "pgvector", "options": {option: value}})
    with store_options("pgvector", tmp_path, collection="settings") as own:
        given = f"--store-option=connection={own['connection']}"
        code, err = run(capsys, "query", "tides", "--index", str(index), given)
    assert code == EXIT_INDEX, err
    assert f"{index / MARKER}: option {option!r} is not one a marker may hold" in err


def test_a_marker_alone_never_says_where_to_connect(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An honest marker (kind and collection): the user is asked where the store is."""
    index = hostile(built, tmp_path, {"kind": "pgvector", "options": {"collection": "docs"}})
    code, err = run(capsys, "query", "tides", "--index", str(index))
    assert code == EXIT_USAGE, err
    assert "--store-option (or RAGLOOM_STORE_OPTIONS)" in err
    assert "keeps its vectors in store 'pgvector'; say where that store is" in err


MALFORMED: list[tuple[str, bytes | dict[str, Any], str]] = [
    ("not JSON", b"{kind: pgvector", "unreadable store marker"),
    ("not UTF-8", b"\xff\xfe{\x00}", "unreadable store marker"),
    ("empty", b"", "unreadable store marker"),
    ("a list", b"[]", "not a store marker"),
    ("kind a number", {"kind": 5, "options": {}}, "not a store marker"),
    ("options a list", {"kind": "pgvector", "options": []}, "not a store marker"),
    ("option a number", {"kind": "pgvector", "options": {"table": 5}}, "option 'table' is 5"),
    ("option empty", {"kind": "pgvector", "options": {"table": ""}}, "not a name"),
    ("option control", {"kind": "pgvector", "options": {"table": "a\nb"}}, "not a name"),
    ("option long", {"kind": "pgvector", "options": {"table": "t" * 300}}, "not a name"),
    ("kind a path", {"kind": "../../etc/x", "options": {}}, "is not a store's name"),
    ("kind huge", {"kind": "k" * 60_000, "options": {}}, "is not a store's name"),
    ("nested", b"[" * 200_000 + b"]" * 200_000, "over"),
    ("deep", b"[" * 30_000 + b"]" * 30_000, "unreadable store marker"),
    ("huge", b'{"kind": "pgvector", "options": {}}' + b" " * (20 << 20), "over"),
    ("not installed", {"kind": "chroma", "options": {}}, "no plugin named 'chroma'"),
]


@pytest.mark.parametrize(("damage", "marker", "says"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_marker_is_an_error_naming_the_file(
    built: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    damage: str,
    marker: bytes | dict[str, Any],
    says: str,
) -> None:
    index = hostile(built, tmp_path, marker)
    # keyword retrieval reads only the directory: a store kind not installed is not needed
    modes = ("dense",) if damage == "not installed" else ("dense", "keyword")
    for mode in modes:
        code, err = run(capsys, "query", "tides", "--index", str(index), "--mode", mode)
        assert code in {EXIT_USAGE, EXIT_INDEX}, (mode, err)
        assert str(index / MARKER) in err, (mode, err)
        assert says in err, (mode, err)
        assert "Traceback" not in err
        assert len(err) < 2_000, (mode, len(err))  # the value is cut, not echoed whole
    with pytest.raises(RagloomError, match=re.escape(str(index))):  # ragloom serve's path
        open_index(index, "pgvector", {"connection": "host=127.0.0.1 port=9"}, 384)
    assert MARKER_BYTES < 20 << 20
