"""``ragloom ingest/query --store``: an index whose vectors live in pgvector (the service of
`bash scripts/services/pgvector.sh start`) or Qdrant's local mode finds the same passages
as the in-memory index of the same files, remembers its store (the kind and the collection,
never where to connect: later commands give that again), and refuses another."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragloom.chat_models.openai.testing import CHAT_MODEL, WireServer
from ragloom.easy_rag.cli import EXIT_USAGE, main
from ragloom.easy_rag.store_config import MARKER, REMEMBERED, remembered_options
from ragloom.testkit.stores import store_options

pytestmark = pytest.mark.integration  # a real store (pgvector: the shared service)

CORPUS = {
    "volcanoes.md": "# Volcanoes\n\nMagma rises through the crust and erupts as lava and ash.",
    "baking.txt": "Bread dough needs yeast, time to rise, and a hot oven to bake the loaf.",
    "sailing.md": "A sailboat tacks upwind; the crew trims the mainsail and the jib.",
    "tides.md": "The moon's pull raises the tides twice a day along the harbour wall.",
}
QUERIES = ("how does lava erupt", "what makes bread rise", "moon and the sea", "crew on a boat")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    for name, text in CORPUS.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(params=["pgvector", "qdrant"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """A store kind and the options of a new collection (pgvector's table dropped after)."""
    with store_options(request.param, tmp_path, collection="cli") as options:
        yield request.param, options


def flags(options: dict[str, Any]) -> list[str]:
    """``--store-option KEY=VALUE`` for each option (values as JSON, strings as text)."""
    return [
        argument
        for key, value in options.items()
        for argument in (
            "--store-option",
            f"{key}={value if isinstance(value, str) else json.dumps(value)}",
        )
    ]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def passages(
    capsys: pytest.CaptureFixture[str], index: Path, query: str, mode: str, *given: str
) -> list[Any]:
    code, out, err = run(
        capsys, "query", query, "--index", str(index), "--mode", mode, "-k", "3", "--json", *given
    )
    assert code == 0, err
    return [(hit["source"], hit["start"], hit["text"]) for hit in json.loads(out)]


def where(options: dict[str, Any]) -> dict[str, Any]:
    """The options that say where the store is, which a marker never remembers."""
    return {key: value for key, value in options.items() if key not in REMEMBERED}


def test_an_index_in_a_store_finds_what_the_in_memory_one_finds(
    corpus: Path,
    tmp_path: Path,
    store: tuple[str, dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kind, options = store
    memory, stored = tmp_path / "memory", tmp_path / "stored"
    assert run(capsys, "ingest", str(corpus), "--index", str(memory), "--quiet")[0] == 0
    code, out, err = run(
        capsys,
        "ingest",
        str(corpus),
        "--index",
        str(stored),
        "--quiet",
        "--json",
        "--store",
        kind,
        *flags(options),
    )
    assert code == 0, err
    assert json.loads(out)["segments"] == len(CORPUS)
    assert not (stored / "store").exists()  # the vectors are in the store
    recorded = {"kind": kind, "options": {"collection": options["collection"]}}
    assert json.loads((stored / MARKER).read_text()) == recorded

    for query in QUERIES:  # no --store: the directory remembers it and the collection
        for mode in ("dense", "hybrid", "keyword"):
            expected = passages(capsys, memory, query, mode)
            assert expected, (query, mode)  # keyword: only the files with a query word
            got = passages(capsys, stored, query, mode, *flags(where(options)))
            assert got == expected, (query, mode)

    # Same ids as the in-memory path: ingesting again changes nothing, adds no duplicate.
    monkeypatch.setenv("RAGLOOM_STORE_OPTIONS", json.dumps(where(options)))
    code, out, _ = run(capsys, "ingest", str(corpus), "--index", str(stored), "--json")
    report = json.loads(out)
    assert (code, len(report["unchanged"]), report["segments"]) == (0, len(CORPUS), 0)
    code, out, _ = run(
        capsys, "query", "anything", "--index", str(stored), "--mode", "dense", "-k", "50", "--json"
    )
    assert len(json.loads(out)) == len(CORPUS)

    # Another kind on this directory, or the in-memory one: a usage error naming both.
    other = "qdrant" if kind == "pgvector" else "pgvector"
    code, _, err = run(capsys, "query", "lava", "--index", str(stored), "--store", other)
    assert code == EXIT_USAGE
    assert f"--store {other!r}" in err
    assert f"built with store {kind!r}" in err
    code, _, err = run(capsys, "ingest", str(corpus), "--index", str(memory), "--store", kind)
    assert code == EXIT_USAGE
    assert f"--store {kind!r}" in err
    assert "built with store 'memory'" in err


def test_the_marker_keeps_no_password(
    corpus: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The local server trusts its clients, so a password is accepted and then not
    needed: the query without it reaches the same table."""
    with store_options("pgvector", tmp_path, collection="secret") as options:
        user, host = options["connection"].split("://", 1)[1].split("@", 1)
        connection = f"postgresql://{user}:s3cret-Pa55@{host}"
        index = tmp_path / "index"
        given = {**options, "connection": connection}
        code, _, err = run(
            capsys, "ingest", str(corpus), "--index", str(index), "--store", "pgvector",
            *flags(given),
        )  # fmt: skip
        assert code == 0, err
        marker = (index / MARKER).read_text()
        assert "s3cret" not in marker
        assert json.loads(marker)["options"] == {"collection": options["collection"]}
        monkeypatch.setenv("RAGLOOM_STORE_OPTIONS", json.dumps(where(options)))
        assert passages(capsys, index, "how does lava erupt", "dense")[0][0] == "volcanoes.md"


def test_the_environment_names_the_store_and_the_flags_win(
    corpus: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with store_options("qdrant", tmp_path, collection="env") as options:
        monkeypatch.setenv("RAGLOOM_STORE", "qdrant")
        wrong = {**options, "collection": "elsewhere"}
        monkeypatch.setenv("RAGLOOM_STORE_OPTIONS", json.dumps(wrong))
        index = tmp_path / "index"
        argv = ["ingest", str(corpus), "--index", str(index), "--quiet"]
        code, _, err = run(capsys, *argv, "--store-option", f"collection={options['collection']}")
        assert code == 0, err
        recorded = json.loads((index / MARKER).read_text())
        assert recorded == {"kind": "qdrant", "options": {"collection": options["collection"]}}
        monkeypatch.delenv("RAGLOOM_STORE_OPTIONS")
        monkeypatch.setenv("RAGLOOM_STORE", "pgvector")
        code, _, err = run(capsys, "query", "lava", "--index", str(index))
        assert code == EXIT_USAGE
        assert "RAGLOOM_STORE 'pgvector'" in err
        assert "built with store 'qdrant'" in err


def test_exported_store_options_leave_in_memory_indexes_alone(
    corpus: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A shell exports where its pgvector is (a marker never says): its pgvector index
    uses that, its in-memory indexes ignore it, and ``--store-option`` on one of those is
    still a usage error."""
    with store_options("pgvector", tmp_path, collection="shell") as options, WireServer() as chat:
        monkeypatch.setenv("RAGLOOM_STORE_OPTIONS", json.dumps(where(options)))
        monkeypatch.setenv("RAGLOOM_CHAT_BASE_URL", chat.url)
        monkeypatch.setenv("RAGLOOM_CHAT_MODEL_NAME", CHAT_MODEL)
        memory, stored = tmp_path / "memory", tmp_path / "stored"
        code, _, err = run(capsys, "ingest", str(corpus), "--index", str(memory), "--quiet")
        assert code == 0, err
        assert (memory / "store").is_dir()
        assert not (memory / MARKER).exists()
        code, _, err = run(
            capsys, "ingest", str(corpus), "--index", str(stored), "--quiet",
            "--store", "pgvector", "--store-option", f"collection={options['collection']}",
        )  # fmt: skip
        assert code == 0, err
        for mode in ("dense", "hybrid"):
            expected = passages(capsys, memory, "how does lava erupt", mode)
            assert expected[0][0] == "volcanoes.md", mode
            assert passages(capsys, stored, "how does lava erupt", mode) == expected, mode
        code, out, err = run(capsys, "ask", "What makes bread rise?", "--index", str(memory))
        assert code == 0, err
        assert out.strip()

        monkeypatch.setenv("RAGLOOM_STORE", "memory")  # the kind named: still memory
        assert passages(capsys, memory, "what makes bread rise", "dense")[0][0] == "baking.txt"
        monkeypatch.delenv("RAGLOOM_STORE")
        code, _, err = run(
            capsys, "query", "lava", "--index", str(memory),
            "--store-option", f"connection={options['connection']}",
        )  # fmt: skip
        assert code == EXIT_USAGE
        assert "--store-option: the memory store takes none" in err

        # Not even read for an in-memory index; a store that needs it names the variable.
        monkeypatch.setenv("RAGLOOM_STORE_OPTIONS", "{not json")
        assert passages(capsys, memory, "moon and the sea", "dense")[0][0] == "tides.md"
        code, _, err = run(capsys, "query", "lava", "--index", str(stored))
        assert code == EXIT_USAGE
        assert "RAGLOOM_STORE_OPTIONS: not JSON" in err


def test_bad_stores_are_usage_errors_naming_what_is_wrong(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = str(tmp_path / "index")
    code, _, err = run(capsys, "ingest", str(corpus), "--index", index, "--store", "chroma")
    assert code == EXIT_USAGE
    assert "--store 'chroma'" in err
    assert "pgvector" in err
    assert "qdrant" in err
    code, _, err = run(
        capsys, "ingest", str(corpus), "--index", index, "--store", "qdrant",
        "--store-option", "colection=typo",
    )  # fmt: skip
    assert code == EXIT_USAGE
    assert "--store-option: colection not accepted by 'qdrant'" in err
    assert "collection" in err
    code, _, err = run(capsys, "query", "x", "--index", index, "--store-option", "novalue")
    assert code == EXIT_USAGE
    assert "'novalue': give KEY=VALUE" in err
    code, _, err = run(capsys, "ingest", str(corpus), "--index", index, "--store-option", "a=1")
    assert code == EXIT_USAGE
    assert "--store-option: the memory store takes none" in err
    assert not (Path(index) / MARKER).exists()  # nothing was built by the failed commands


@pytest.mark.parametrize(
    ("options", "kept"),
    [
        (
            {"connection": "postgresql://app:pw@db:5432/rag", "collection": "docs"},
            {"collection": "docs"},
        ),
        ({"connection": "host=db user=app password=pw dbname=rag", "schema": "s"}, {
            "schema": "s"}),
        ({"url": "https://q.example:6333", "api_key": "k", "exact": True}, {}),
        ({"uri": "http://m:19530", "token": "root:Milvus", "drop_table_first": True,
          "db_name": "rag", "collection_name": "c"}, {"db_name": "rag", "collection_name": "c"}),
        ({"path": "/srv/q", "timeout": 5, "table": 5, "index_name": ""}, {}),
    ],
)  # fmt: skip
def test_what_a_marker_remembers(options: dict[str, Any], kept: dict[str, Any]) -> None:
    assert remembered_options(options) == kept
