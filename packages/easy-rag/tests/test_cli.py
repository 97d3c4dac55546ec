"""The ragloom CLI end to end, with the real default model, parsers and splitter."""

import json
import os
from pathlib import Path

import pytest

from ragloom.easy_rag.cli import EXIT_EMPTY, EXIT_FAILURE, EXIT_INDEX, main

CORPUS = {
    "volcanoes.md": "# Volcanoes\n\nMagma rises through the crust and erupts as lava and ash.",
    "baking.txt": "Bread dough needs yeast, time to rise, and a hot oven to bake the loaf.",
    "sailing.md": "A sailboat tacks upwind; the crew trims the mainsail and the jib.",
}


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "sub").mkdir(parents=True)
    for name, text in CORPUS.items():
        target = root / "sub" / name if name == "sailing.md" else root / name
        target.write_text(text, encoding="utf-8")
    return root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_ingest_query_ask(corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    index = str(tmp_path / "index")
    code, out, _ = run(capsys, "ingest", str(corpus), "--index", index, "--json")
    assert code == 0
    report = json.loads(out)
    assert len(report["added"]) == 3
    assert report["segments"] == 3

    code, out, _ = run(
        capsys, "query", "how does lava erupt", "--index", index, "-k", "2", "--json"
    )
    assert code == 0
    hits = json.loads(out)
    assert len(hits) == 2
    assert hits[0]["source"] == "volcanoes.md"
    assert hits[0]["start"] == 0
    assert 0.0 <= hits[1]["score"] <= hits[0]["score"] <= 1.0

    code, out, _ = run(capsys, "ask", "What does bread need to rise?", "--index", index)
    assert code == 0
    assert "No chat model is configured" in out
    assert "baking.txt" in out.split("Sources:")[1].splitlines()[1]

    code, out, _ = run(
        capsys, "query", "lava", "--index", index, "--filter", "file_name == 'sailing.md'", "--json"
    )
    assert [h["source"] for h in json.loads(out)] == ["sailing.md"]


def test_incremental_ingest(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = str(tmp_path / "index")
    assert run(capsys, "ingest", str(corpus), "--index", index)[0] == 0
    code, out, _ = run(capsys, "ingest", str(corpus), "--index", index, "--json")
    assert json.loads(out)["unchanged"] == sorted(
        os.path.abspath(p) for p in corpus.rglob("*") if p.is_file()
    )
    (corpus / "baking.txt").write_text("Sourdough uses a starter instead of dry yeast.")
    (corpus / "volcanoes.md").unlink()
    (corpus / "new.md").write_text("Chess openings: the Sicilian defence.")
    code, out, _ = run(capsys, "ingest", str(corpus), "--index", index, "--json")
    report = json.loads(out)
    assert code == 0
    assert [Path(p).name for p in report["added"]] == ["new.md"]
    assert [Path(p).name for p in report["updated"]] == ["baking.txt"]
    assert [Path(p).name for p in report["removed"]] == ["volcanoes.md"]
    code, out, _ = run(capsys, "query", "magma lava erupt", "--index", index, "-k", "10", "--json")
    sources = sorted(h["source"] for h in json.loads(out))
    assert sources == ["baking.txt", "new.md", "sailing.md"]
    texts = [h["text"] for h in json.loads(out)]
    assert not any("Bread dough" in t for t in texts)


def test_missing_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "query", "anything", "--index", str(tmp_path / "none"))
    assert code == EXIT_INDEX
    assert "no ragloom index" in err
    assert "ragloom ingest" in err


def test_empty_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    code, _, err = run(capsys, "ingest", str(tmp_path / "empty"), "--index", str(tmp_path / "i"))
    assert code == EXIT_EMPTY
    assert "nothing to ingest" in err


def test_bad_files_fail_but_others_are_ingested(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (corpus / "blank.txt").write_text("   ")
    os.symlink("/proc/self/mem", corpus / "unreadable.txt")
    index = str(tmp_path / "index")
    code, out, err = run(capsys, "ingest", str(corpus), "--index", index)
    assert code == EXIT_FAILURE
    assert "3 added" in out
    assert "blank.txt" in err
    assert "unreadable.txt" in err
    code, out, _ = run(capsys, "query", "sailboat", "--index", index, "--json")
    assert json.loads(out)[0]["source"] == "sailing.md"


def test_plugins_lists_the_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plugins", "--json")
    assert code == 0
    table = json.loads(out)
    embedding = table["ragloom.embedding_models"]["providers"]
    assert [p["distribution"] for p in embedding if p["active"]] == ["ragloom-embedding-onnx"]
    assert {p["distribution"] for p in embedding} == {
        "ragloom-embedding-onnx",
        "ragloom-chat-openai",  # its OpenAiEmbeddingModel, used when named
    }
    splitters = table["ragloom.document_splitters"]["providers"]
    assert [p["name"] for p in splitters] == ["recursive-254-30"]


@pytest.mark.parametrize("mode", ["dense", "keyword", "hybrid"])
def test_every_mode_finds_the_right_file(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str
) -> None:
    index = str(tmp_path / "index")
    assert run(capsys, "ingest", str(corpus), "--index", index)[0] == 0
    code, out, _ = run(capsys, "query", "mainsail jib", "--index", index, "--mode", mode, "--json")
    assert code == 0
    assert json.loads(out)[0]["source"] == "sailing.md"


def test_keyword_index_follows_removals(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = str(tmp_path / "index")
    run(capsys, "ingest", str(corpus), "--index", index)
    (corpus / "sub" / "sailing.md").unlink()
    run(capsys, "ingest", str(corpus), "--index", index)
    code, out, _ = run(capsys, "query", "mainsail", "--index", index, "--mode", "keyword", "--json")
    assert code == 0
    assert json.loads(out) == []


def test_eval_runs_on_a_beir_directory(capsys: pytest.CaptureFixture[str]) -> None:
    data = Path(__file__).resolve().parents[2] / "core" / "tests" / "data" / "kestrel-support"
    code, out, _ = run(capsys, "eval", str(data), "--mode", "keyword", "--json")
    assert code == 0
    document = json.loads(out)
    assert document["settings"]["segments"] is True  # Easy RAG's segments by default
    assert [result["mode"] for result in document["results"]] == ["keyword"]
    assert "ndcg@10" in document["results"][0]["metrics"]
    code, out, _ = run(capsys, "eval", "--help")
    assert code == 0
    assert out.startswith("usage: ragloom eval ")
    assert "(default: hybrid)" in " ".join(out.split())
